"""Reading runs back: one run directory's ``run.kv`` with its derived status, every run under a
root, and the last step and metric values a run wrote.

A run whose ``run.kv`` says ``running`` but whose heartbeat is stale (or whose pid is dead on
this host) reads as ``crashed``. Damaged files never hide other runs: ``list_runs`` lists them as
``unreadable`` with the reason.
"""

from __future__ import annotations

import csv
import datetime as _dt
import io
import math
import os
import socket
import time
from pathlib import Path
from typing import Any

import nonfinite_json
from goggles_io._util.kvfile import read_kv
from goggles_io._util.safe_read import open_inside
from goggles_io.runs.status import DEFAULT_HEARTBEAT_S, RunStatus
from goggles_io.runs.tfevents import last_step as tf_last_step

__all__ = ["last_metrics", "last_step", "list_runs", "read_run"]

_STALE_FACTOR = 3.0  # a heartbeat older than this many periods means the writer is gone
_TAIL_BYTES = 256 * 1024  # enough for the last rows of any metrics file


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except (PermissionError, OSError):
        return True
    return True


def read_run(run_dir: str | os.PathLike[str], *, with_last_step: bool = True) -> dict[str, Any]:
    """Read one run directory: ``run.kv`` plus derived ``status``, ``age_s`` and ``last_step``.

    ``with_last_step=False`` skips reading the metric files' tails (``last_step`` is then
    ``None``): the dashboard knows the last step from its index and re-reads status often.

    ``status`` is ``crashed`` when ``run.kv`` says ``running`` but the heartbeat is older than
    three periods, or the pid is dead on this host.

    Damaged fields never raise: a ``heartbeat_s`` that is not a positive finite number means
    the default period, a ``pid`` that is not a plausible pid is ignored, a ``started`` without
    a time zone is taken as UTC.

    Raises:
        FileNotFoundError: ``run_dir`` holds no ``run.kv``.
        RunFileError: ``run.kv`` is not valid UTF-8 (the message names the file and line).
    """
    path = Path(run_dir)
    info: dict[str, Any] = dict(read_kv(path / "run.kv", inside=path))
    info["run_dir"] = str(path)
    if info.get("status") == RunStatus.RUNNING:
        period = _period(info.get("heartbeat_s"))
        try:
            beat_age = time.time() - (path / "heartbeat").stat().st_mtime
        except OSError:
            beat_age = float("inf")
        same_host = info.get("host") == socket.gethostname()
        pid = _pid(info.get("pid"))
        dead = same_host and pid is not None and not _pid_alive(pid)
        if dead or beat_age > _STALE_FACTOR * period + 1.0:
            info["status"] = RunStatus.CRASHED
    info["age_s"] = _age_s(info.get("started"))
    info["last_step"] = last_step(path) if with_last_step else None
    return info


def _period(text: Any) -> float:
    try:
        period = float(text)
    except (TypeError, ValueError):
        return DEFAULT_HEARTBEAT_S
    return period if 0 < period < float("inf") else DEFAULT_HEARTBEAT_S  # nan fails both


def _pid(text: Any) -> int | None:
    raw = str(text or "")
    if not raw.isascii() or not raw.isdigit() or len(raw) > 10:
        return None
    pid = int(raw)
    return pid if 0 < pid < 2**31 else None


def _age_s(text: Any) -> float | None:
    try:
        started = _dt.datetime.fromisoformat(str(text))
    except ValueError:
        return None
    if started.tzinfo is None:
        started = started.replace(tzinfo=_dt.timezone.utc)
    return (_dt.datetime.now(_dt.timezone.utc) - started).total_seconds()


def list_runs(root: str | os.PathLike[str] = "runs") -> list[dict[str, Any]]:
    """Every run under ``root`` (directories with a ``run.kv``), oldest first.

    A run whose files cannot be read is still listed, with ``status="unreadable"`` and the
    reason in ``error`` (naming the file and line), so one damaged run hides no other.
    """
    base = Path(root)
    if not base.is_dir():
        return []
    runs = []
    for p in sorted(base.iterdir()):
        if not (p / "run.kv").is_file():
            continue
        try:
            runs.append(read_run(p))
        except (OSError, ValueError) as exc:
            runs.append({"run_id": p.name, "run_dir": str(p), "status": "unreadable",
                         "error": str(exc), "age_s": None, "last_step": None})  # fmt: skip
    return sorted(runs, key=lambda r: str(r.get("started", "")))


def _tail_lines(run_dir: Path, path: Path) -> list[str]:
    with open_inside(run_dir, path) as fh:
        fh.seek(0, os.SEEK_END)
        size = fh.tell()
        fh.seek(max(0, size - _TAIL_BYTES))
        data = fh.read().decode("utf-8", errors="replace")
    lines = data.splitlines()
    if data and not data.endswith("\n"):
        lines = lines[:-1]  # a torn last line: the writer died mid-row
    return lines[1:] if size > _TAIL_BYTES else lines


def _number(text: str) -> float | None:
    try:
        value = float(text)
    except ValueError:
        return None
    return value


def _csv_last(run_dir: Path, path: Path) -> tuple[int | None, dict[str, float]]:
    with open_inside(run_dir, path) as fh:  # one bad byte further down must not hide the whole file
        header = next(csv.reader([fh.readline(_TAIL_BYTES).decode("utf-8", errors="replace")]), [])
    rows = list(csv.reader(io.StringIO("\n".join(_tail_lines(run_dir, path)))))
    step: int | None = None
    values: dict[str, float] = {}
    long_format = "name" in header and "value" in header
    for row in rows:
        if row == header or len(row) != len(header):
            continue  # the header itself, or a torn last row
        record = dict(zip(header, row, strict=True))
        raw_step = _number(record.get("step", ""))
        if raw_step is not None and math.isfinite(raw_step):
            step = int(raw_step) if step is None else max(step, int(raw_step))
        if long_format:
            value = _number(record["value"])
            if value is not None:
                values[record["name"]] = value
            continue
        for col, text in record.items():
            value = _number(text) if col not in ("step", "time", "timestamp", "wall_time") else None
            if value is not None:
                values[col] = value
    return step, values


def _jsonl_last(run_dir: Path, path: Path) -> tuple[int | None, dict[str, float]]:
    step: int | None = None
    values: dict[str, float] = {}
    for line in _tail_lines(run_dir, path):
        try:
            obj = nonfinite_json.loads(line)  # NaN/inf logged are shown as such
        except ValueError:
            continue  # a torn last line after a crash
        if not isinstance(obj, dict):
            continue
        if isinstance(obj.get("step"), int):  # the largest: add_hparams logs at step 0, last
            step = obj["step"] if step is None else max(step, obj["step"])
        payload = obj.get("payload")
        if str(obj.get("kind")) == "metric" and isinstance(payload, dict):
            values.update({k: v for k, v in payload.items() if isinstance(v, (int, float))})
        elif isinstance(obj.get("name"), str) and isinstance(obj.get("value"), (int, float)):
            values[obj["name"]] = obj["value"]
    return step, values


def _metric_files(run_dir: Path) -> list[Path]:
    found = [*run_dir.glob("metrics.csv"), *run_dir.glob("*/metrics.csv")]
    for name in ("log.jsonl", "events.jsonl"):  # LocalStorageHandler's, and old runs' file
        found += [*run_dir.glob(name), *run_dir.glob(f"*/{name}")]
    return found


def _scan(run_dir: Path) -> tuple[int | None, dict[str, float]]:
    step: int | None = None
    values: dict[str, float] = {}
    for path in _metric_files(run_dir):
        try:
            got_step, got = (_csv_last if path.suffix == ".csv" else _jsonl_last)(run_dir, path)
        except (OSError, StopIteration, ValueError, csv.Error):
            continue  # unreadable or damaged: the other files still count
        values.update(got)
        if got_step is not None:
            step = got_step if step is None else max(step, got_step)
    got_step = tf_last_step(run_dir)
    if got_step is not None:
        step = got_step if step is None else max(step, got_step)
    return step, values


def last_step(run_dir: str | os.PathLike[str]) -> int | None:
    """The largest step among the last lines of the run's ``metrics.csv`` and ``log.jsonl``
    (``events.jsonl``) and the last records of its TensorBoard event files, or ``None``."""
    return _scan(Path(run_dir))[0]


def last_metrics(run_dir: str | os.PathLike[str]) -> dict[str, float]:
    """The last value of each metric in ``metrics.csv`` / ``log.jsonl`` (``events.jsonl``) of the run."""
    return _scan(Path(run_dir))[1]
