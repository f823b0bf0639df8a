"""Where the dashboard's runs come from: run directories followed as they grow, and the
collector's database.

A run directory is read incrementally: ``events.jsonl`` (``LocalStorageHandler``) and
``metrics.csv`` (``CsvHandler``) from the byte where the last read stopped, a torn last line
left for the next read; a file replaced (``CsvHandler`` rewrites its header) is read again
from the start. The database is read by ``rowid``, so points arriving out of ``seq`` order are
not missed. Nothing here writes.
"""

from __future__ import annotations

import csv
import io
import json
import math
import threading
import time
from array import array
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np

from goggles_io.runs import RunFileError, read_kv, read_run
from goggles_io.server.store import RunStore

__all__ = ["Catalog", "Series", "inside", "stat_records"]

_NAN = float("nan")
_NONFINITE = {"NaN": _NAN, "Infinity": math.inf, "-Infinity": -math.inf}
_REFRESH_S = 0.4  # at most this often, however many pages ask


def _num(value: Any) -> float | None:
    kind = type(value)
    if kind is float or kind is int:
        return float(value)
    if kind is str:
        return _NONFINITE.get(value)
    return None


class Series:
    """One metric of one run: parallel columns of step, wall time, custom x and value."""

    __slots__ = ("step", "time", "value", "x", "x_axis")

    def __init__(self) -> None:
        self.step, self.time, self.x, self.value = array("d"), array("d"), array("d"), array("d")
        self.x_axis: str | None = None

    def add(self, step: Any, when: Any, x: Any, value: float) -> None:
        self.step.append(_NAN if step is None else float(step))
        self.time.append(_NAN if when is None else float(when))
        self.x.append(_NAN if x is None else float(x))
        self.value.append(value)

    def __len__(self) -> int:
        return len(self.value)

    def columns(self, axis: str) -> tuple[np.ndarray, np.ndarray]:
        """``(x, y)`` as arrays: ``axis`` is ``step``, ``time`` (ms since epoch) or ``custom``."""
        y = np.frombuffer(self.value, dtype=np.float64)
        if axis == "time":
            return np.frombuffer(self.time, dtype=np.float64) * 1000.0, y
        if axis == "custom" and self.x_axis is not None:
            return np.frombuffer(self.x, dtype=np.float64), y
        return np.frombuffer(self.step, dtype=np.float64), y


class _Tail:
    """Complete new lines of a growing file, from where the last read stopped."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.offset = 0
        self.inode: int | None = None
        self.rest = b""

    def read(self) -> tuple[list[bytes], bool]:
        """``(new complete lines, whether the file was replaced and is read from the start)``."""
        try:
            st = self.path.stat()
        except OSError:
            return [], False
        restart = self.inode is not None and (st.st_ino != self.inode or st.st_size < self.offset)
        if restart:
            self.offset, self.rest = 0, b""
        self.inode = st.st_ino
        if st.st_size == self.offset:
            return [], restart
        with open(self.path, "rb") as fh:
            fh.seek(self.offset)
            data = fh.read()
        self.offset += len(data)
        lines = (self.rest + data).split(b"\n")
        self.rest = lines.pop()
        return lines, restart


class _DirRun:
    """One run directory's metrics, media and status, read as the files grow."""

    def __init__(self, key: str, path: Path) -> None:
        self.key = key
        self.path = path
        self.series: dict[str, Series] = {}
        self.media: list[dict[str, Any]] = []
        self.info: dict[str, Any] = {}
        self.config: dict[str, str] = {}
        # LocalStorageHandler's log.jsonl (robo-goggles' layout), and old runs' events.jsonl
        logs = [
            p
            for name in ("log.jsonl", "events.jsonl")
            for p in (path / name, *path.glob(f"*/{name}"))
        ]
        self._events = [_Tail(p) for p in logs]
        self._csvs = [_Tail(p) for p in (path / "metrics.csv", *path.glob("*/metrics.csv"))]
        self._csv_series: dict[Path, dict[str, Series]] = {}
        self._csv_header: dict[Path, list[str]] = {}

    def refresh(self) -> None:
        try:
            self.info = read_run(self.path)
        except (OSError, RunFileError, ValueError) as exc:
            self.info = {"run_id": self.path.name, "status": "unreadable", "error": str(exc)}
        if not self.config and (self.path / "config.kv").is_file():
            try:
                self.config = read_kv(self.path / "config.kv")
            except (OSError, RunFileError, ValueError):
                self.config = {}
        for tail in self._events:
            lines, restart = tail.read()
            if restart:  # an event log is only appended to; a replaced one is read afresh
                self.series.clear()
                self.media.clear()
            self._read_events(tail.path.parent, lines)
        for tail in self._csvs:
            lines, restart = tail.read()
            self._read_csv(tail, lines, restart)

    def _read_events(self, folder: Path, lines: Iterable[bytes]) -> None:
        series = self.series
        prefix = "" if folder == self.path else f"{folder.name}/"
        for raw in lines:
            if b'"kind"' not in raw:
                continue
            try:
                obj = json.loads(raw)
            except ValueError:
                continue  # a damaged line: the rest still counts
            if type(obj) is not dict:
                continue
            kind = obj.get("kind")
            step = obj.get("step")
            step = step if type(step) is int else None
            extra = obj.get("extra") if type(obj.get("extra")) is dict else {}
            extra = {**extra, **{k[6:]: v for k, v in obj.items() if k.startswith("extra.")}}
            if kind == "metric" and type(obj.get("payload")) is dict:
                x_axis, x = extra.get("x_axis"), _num(extra.get("x"))
                when = _num(obj.get("timestamp"))
                for name, raw_value in obj["payload"].items():
                    value = _num(raw_value)
                    if value is None:
                        continue
                    one = series.get(name)
                    if one is None:
                        one = series[name] = Series()
                    if type(x_axis) is str:
                        one.x_axis = x_axis
                    one.add(step, when, x if type(x_axis) is str else None, value)
            elif kind == "image" and type(obj.get("file", obj.get("payload"))) is str:
                name = extra.get("name") if type(extra.get("name")) is str else "image"
                file = obj.get(
                    "file", obj.get("payload")
                )  # events.jsonl: "file"; log.jsonl: payload
                self.media.append({"name": name, "step": step, "file": prefix + file})

    def _read_csv(self, tail: _Tail, lines: list[bytes], restart: bool) -> None:
        path = tail.path
        if restart or path not in self._csv_header:
            for name in self._csv_series.pop(path, {}):
                self.series.pop(name, None)
            self._csv_header.pop(path, None)
        own = self._csv_series.setdefault(path, {})
        text = b"\n".join(lines).decode("utf-8", errors="replace")
        for row in csv.reader(io.StringIO(text)):
            header = self._csv_header.get(path)
            if header is None:
                self._csv_header[path] = row
                continue
            if len(row) != len(header):
                continue  # a torn or foreign row
            record = dict(zip(header, row, strict=True))
            step = _float(record.get("step", ""))
            when = _float(record.get("time", record.get("timestamp", "")))
            if "name" in record and "value" in record:
                pairs = [(record["name"], record["value"])]
            else:
                pairs = [
                    (k, v) for k, v in record.items() if k not in ("step", "time", "timestamp")
                ]
            for name, text_value in pairs:
                value = _float(text_value)
                if value is None:
                    continue
                one = own.get(name)
                if one is None:
                    one = own[name] = self.series.setdefault(name, Series())
                one.add(None if step is None else int(step) if math.isfinite(step) else None,
                        when, None, value)  # fmt: skip


def _float(text: str) -> float | None:
    if not text:
        return None
    try:
        return float(text)
    except ValueError:
        return None


class _DbRuns:
    """The collector database's runs and points, read by rowid as points arrive."""

    def __init__(self, store: RunStore) -> None:
        self.store = store
        self.runs: dict[str, dict[str, Any]] = {}
        self.series: dict[str, dict[str, Series]] = {}
        self._rowid = 0

    def refresh(self) -> None:
        self.runs = {run["run_id"]: run for run in self.store.runs()}
        while True:
            rows = self.store.points_after(self._rowid, 200_000)
            if not rows:
                return
            for rowid, run_id, name, value, step, when in rows:
                per_run = self.series.setdefault(run_id, {})
                one = per_run.get(name)
                if one is None:
                    one = per_run[name] = Series()
                number = value if type(value) is float else _NAN
                one.add(step, when, None, number)
                self._rowid = rowid


_DB_STATUS = {"stale": "crashed"}


class Catalog:
    """Every run the dashboard shows, keyed ``dir:<run id>`` or ``db:<run id>``."""

    def __init__(self, store: RunStore, run_dirs: Iterable[str]) -> None:
        self.roots = [Path(p) for p in run_dirs]
        self.dirs: dict[str, _DirRun] = {}
        self.db = _DbRuns(store)
        self._lock = threading.Lock()
        self._last = 0.0

    def refresh(self, force: bool = False) -> None:
        """Discover new runs and read what every run wrote since the last call."""
        with self._lock:
            if not force and time.monotonic() - self._last < _REFRESH_S:
                return
            known = {run.path for run in self.dirs.values()}
            for path in self._run_paths():
                if path not in known:
                    key = f"dir:{path.name}"
                    while key in self.dirs:
                        key += "+"
                    self.dirs[key] = _DirRun(key, path)
            for run in self.dirs.values():
                run.refresh()
            self.db.refresh()
            self._last = time.monotonic()

    def _run_paths(self) -> list[Path]:
        found = []
        for root in self.roots:
            if (root / "run.kv").is_file():
                found.append(root)
            elif root.is_dir():
                found += sorted(p for p in root.iterdir() if (p / "run.kv").is_file())
        return found

    def series(self, key: str) -> dict[str, Series]:
        if key.startswith("db:"):
            return self.db.series.get(key[3:], {})
        run = self.dirs.get(key)
        return run.series if run else {}

    def run_dir(self, key: str) -> Path | None:
        run = self.dirs.get(key)
        return run.path if run else None

    def media(self, key: str) -> list[dict[str, Any]]:
        run = self.dirs.get(key)
        return list(run.media) if run else []

    def summaries(self) -> list[dict[str, Any]]:
        """One row per run for the runs table (status, age, last step, group, tags, config)."""
        rows = []
        for key, run in self.dirs.items():
            info = run.info
            tags = str(info.get("tags", ""))
            rows.append({
                "key": key,
                "source": "dir",
                "run_id": str(info.get("run_id", run.path.name)),
                "name": str(info.get("name") or info.get("slug") or run.path.name),
                "status": str(info.get("status", "?")),
                "age_s": info.get("age_s"),
                "started": info.get("started"),
                "last_step": info.get("last_step"),
                "group": str(info.get("group") or info.get("project") or ""),
                "tags": [t for t in tags.split(",") if t],
                "config": dict(run.config),
                "error": info.get("error"),
                "metrics": {name: len(s) for name, s in run.series.items()},
                "media": len(run.media),
                "stats": (run.path / "stats.jsonl").is_file(),
                "path": str(run.path),
            })  # fmt: skip
        now = time.time()
        for run_id, run in self.db.runs.items():
            series = self.db.series.get(run_id, {})
            steps = [s.step[-1] for s in series.values() if len(s) and s.step[-1] == s.step[-1]]
            info = run.get("info") or {}
            rows.append({
                "key": f"db:{run_id}",
                "source": "collector",
                "run_id": run_id,
                "name": str(run.get("name") or run_id),
                "status": _DB_STATUS.get(run.get("status"), str(run.get("status"))),
                "age_s": now - run["registered"] if run.get("registered") else None,
                "started": None,
                "last_step": int(max(steps)) if steps else None,
                "group": str(info.get("project") or info.get("group") or ""),
                "tags": [str(t) for t in info.get("tags", [])] if isinstance(info.get("tags"), list) else [],
                "config": run.get("config") or {},
                "error": None,
                "metrics": {name: len(s) for name, s in series.items()},
                "media": 0,
                "stats": False,
                "path": None,
            })  # fmt: skip
        return rows


def stat_records(run_dir: Path) -> dict[str, Any]:
    """The experiment side's stat events (``stats.jsonl``) and alerts, grouped for the stats view."""
    overall: list[dict[str, Any]] = []
    episodes: list[dict[str, Any]] = []
    modules: dict[tuple[str, str], dict[str, int]] = {}
    for obj in _jsonl(run_dir / "stats.jsonl"):
        kind = obj.get("kind")
        if kind == "overall_stats":
            overall.append(obj)
        elif kind == "episode_stats":
            episodes.append(obj)
        elif kind == "learning_module_episode_stats":
            counts = modules.setdefault((str(obj.get("mode")), str(obj.get("lm_id"))), {})
            verdict = str(obj.get("primary_performance"))
            counts[verdict] = counts.get(verdict, 0) + 1
    alerts = list(_jsonl(run_dir / "alerts.jsonl"))
    table = [{"mode": m, "lm_id": lm, **c} for (m, lm), c in sorted(modules.items())]
    return {"overall": overall, "episodes": episodes, "modules": table, "alerts": alerts}


def _jsonl(path: Path) -> Iterable[dict[str, Any]]:
    if not path.is_file():
        return
    with open(path, "rb") as fh:
        for raw in fh:
            try:
                obj = json.loads(raw)
            except ValueError:
                continue
            if type(obj) is dict:
                yield obj


def inside(run_dir: Path, relative: str) -> Path | None:
    """``run_dir / relative`` when it is a file inside ``run_dir`` (no ``..``, no symlink out)."""
    base = run_dir.resolve()
    try:
        target = (base / relative).resolve()
    except (OSError, ValueError):
        return None
    if target != base and base in target.parents and target.is_file():
        return target
    return None
