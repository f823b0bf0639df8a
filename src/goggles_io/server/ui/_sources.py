"""Every run the dashboard shows, and the background thread that keeps their index current.

Runs come from run directories (with ``run.kv``, or robo-goggles' layout without one: named by
folder, status ``unknown``) under the given roots, and from the collector's database. The
page is answered from what is indexed so far (``indexed`` says how far): the server is ready
before a large log is read, and live runs keep appending. Nothing here writes into a run
directory; a run both in a folder and in the collector (``RunContext`` plus ``RemoteHandler``)
is one row, joined by run id (:func:`_join`); the index lives in a cache directory the dashboard owns (``index_dir``, default
``$XDG_CACHE_HOME/split-telemetry/ui-index``; a temporary one if that cannot be written).
"""

from __future__ import annotations

import os
import shutil
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from goggles_io._util.env import ENV_CACHE_HOME
from goggles_io._util.report import ReportOnce
from goggles_io._util.safe_read import resolves_inside
from goggles_io.runs import describe_run, find_runs, lost_events, read_config, shown_status
from goggles_io.server.store import RunStore
from goggles_io.server.ui._feed import DbFeeder, DirFeeder, index_folder
from goggles_io.server.ui._index import RunIndex

__all__ = ["Catalog", "default_index_dir"]

_TICK_S = 0.5  # how often the files are looked at when nothing is waiting
_FIRST_ANSWER_S = 1.0  # indexing waits this long for the first page request to be answered
_INFO_S = 1.0  # run.kv and heartbeat re-read at most this often
_BUDGET = 2 << 20  # bytes indexed per run per turn, parsed 64 KiB at a time (_feed._PARSE_BYTES)
_WANT_S = 10.0  # a run charted this recently is indexed before the others
_DB_STATUS = {"stale": "crashed"}
_UNSETTLED = ("running", "unknown", "?")  # a folder status the collector's end may improve on
_report = ReportOnce(who="telemetry ui")


def default_index_dir() -> Path:
    """``$XDG_CACHE_HOME/split-telemetry/ui-index`` (``~/.cache`` when unset)."""
    base = os.environ.get(ENV_CACHE_HOME) or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "split-telemetry" / "ui-index"


def _writable(folder: Path) -> bool:
    try:
        folder.mkdir(parents=True, exist_ok=True)
        probe = folder / f".probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError:
        return False
    return True


class _DirRun:
    def __init__(self, key: str, path: Path, root: Path) -> None:
        self.key = key
        self.path = path
        self.feeder = DirFeeder(path, root)
        self.info: dict[str, Any] = {}
        self.config: dict[str, Any] = {}
        self.read_at = 0.0

    def refresh_info(self) -> None:
        self.info = describe_run(self.path, with_last_step=False)
        self.config = read_config(self.path)
        self.read_at = time.monotonic()


class Catalog:
    """The runs of ``run_dirs`` (run directories or roots holding them) and of ``store``.

    Call :meth:`start` to index in the background and :meth:`close` to stop (a temporary
    index is removed then).
    """

    def __init__(self, store: RunStore, run_dirs: list[str], index_dir: str | None = None) -> None:
        self.roots = [Path(p) for p in run_dirs]
        self._temp: str | None = None
        root = Path(index_dir) if index_dir else default_index_dir()
        if not _writable(root):
            self._temp = tempfile.mkdtemp(prefix="telemetry-ui-index-")
            _report(
                "index", f"cannot write the index in {str(root)!r}; using {self._temp} (not kept)"
            )
            root = Path(self._temp)
        self.index_root = root
        self.dirs: dict[str, _DirRun] = {}
        self.store = store
        db_path = getattr(store, "db_path", ":memory:")
        if db_path == ":memory:":  # nothing to keep: the database itself is gone at exit
            self._db_temp: str | None = tempfile.mkdtemp(prefix="telemetry-ui-db-index-")
            db_folder, owner = Path(self._db_temp), f"db:memory:{id(store)}"
        else:
            self._db_temp = None
            ino = os.stat(db_path).st_ino if os.path.exists(db_path) else 0
            owner = f"db:{os.path.abspath(db_path)}:{ino}"
            db_folder = index_folder(root, "db", owner)
        self.db = DbFeeder(store, db_folder, owner)
        self.db_runs: list[dict[str, Any]] = []
        self.joined: dict[str, str] = {}  # folder key -> run id of its collector copy
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._answered = threading.Event()
        self._thread: threading.Thread | None = None
        self._wanted: dict[str, float] = {}  # run key -> when the page last charted it
        self.version = 0  # bumped whenever anything shown may have changed

    # -- lifecycle ----------------------------------------------------------------------------
    def start(self) -> None:
        """Index in a daemon thread until :meth:`close`."""
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._run, name="telemetry-ui-index", daemon=True
            )
            self._thread.start()

    def close(self) -> None:
        """Stop indexing; remove a temporary index."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(10.0)
        for temp in (self._temp, self._db_temp):
            if temp:
                shutil.rmtree(temp, ignore_errors=True)

    def poke(self) -> None:
        """Look at the files now (a page asked for fresh data)."""
        self._wake.set()

    def want(self, keys: list[str]) -> None:
        """The page charts ``keys`` now: index them before the others (a chart drawn from a
        part of its run says so, and the rest of that run comes first)."""
        now = time.monotonic()
        for key in keys:
            self._wanted[key] = now
        self._wake.set()

    def answered(self) -> None:
        """The first runs table went out: indexing may take the CPU now."""
        self._answered.set()

    def _run(self) -> None:
        # The server's start and its first answer come first (server ready in a fraction of a
        # second however much there is to read); parsing holds the GIL for long stretches.
        self._answered.wait(_FIRST_ANSWER_S)
        while not self._stop.is_set():
            try:
                busy = self.turn()
            except Exception as exc:  # never let one damaged file end indexing for all runs
                _report(f"turn:{type(exc).__name__}", f"indexing failed once: {exc!r}; going on")
                busy = False
            if not busy:
                self._wake.wait(_TICK_S)
                self._wake.clear()

    def turn(self) -> bool:
        """One pass: find new runs, re-read their status, index a little of each."""
        self.discover()
        busy = False
        runs = list(self.dirs.values())
        now = time.monotonic()
        wanted = [
            run
            for run in runs
            if run.feeder.pending and now - self._wanted.get(run.key, -_WANT_S) < _WANT_S
        ]
        for run in wanted or runs:  # runs on the page first; then every run, a little each
            if self._stop.is_set():
                return False
            before = run.feeder.index.points
            try:
                busy |= run.feeder.step(_BUDGET)
            except (OSError, ValueError) as exc:  # one unreadable run never stops the others
                _report(
                    f"run:{run.key}", f"cannot index {str(run.path)!r}: {exc}; other runs go on"
                )
            if run.feeder.index.points != before:
                self.version += 1
        before_rows = self.db.pending
        busy |= self.db.step(_BUDGET)
        if busy or before_rows:
            self.version += 1
        return busy

    def discover(self) -> None:
        """Add run directories that appeared; re-read run.kv of each at most once a second."""
        with self._lock:
            known = {run.path for run in self.dirs.values()}
            found = [p for root in self.roots for p in find_runs(root) if resolves_inside(root, p)]
            for path in found:  # a run folder symlinked in from outside its root is not served
                if path not in known:
                    key = f"dir:{path.name}"
                    while key in self.dirs:
                        key += "+"
                    self.dirs[key] = _DirRun(key, path, self.index_root)
            for key in [k for k, run in self.dirs.items() if not run.path.is_dir()]:
                del self.dirs[key]  # the run directory was removed: it leaves the table
                self.version += 1
            now = time.monotonic()
            for run in self.dirs.values():
                if now - run.read_at >= _INFO_S:
                    old = (run.info.get("status"), run.config)
                    try:
                        run.refresh_info()
                    except OSError:
                        continue  # removed between the listing and the read: gone next turn
                    if old != (run.info.get("status"), run.config):
                        self.version += 1
            self.db_runs = self.store.runs()

    # -- reading ------------------------------------------------------------------------------
    def _dir(self, key: str) -> _DirRun | None:
        """The run directory ``key``, looking for new runs first if it is not known yet (a
        request may come before the background thread's first pass)."""
        run = self.dirs.get(key)
        if run is None and key.startswith("dir:"):
            self.discover()
            run = self.dirs.get(key)
        return run

    def index(self, key: str) -> RunIndex | None:
        """The index of run ``key`` (``dir:...`` or ``db:...``), or ``None``.

        A joined row's charts read the folder; while the folder holds no metric (a run that
        logs only through its ``RemoteHandler``) they read the collector's copy.
        """
        if key.startswith("db:"):
            return self.db.runs.get(key[3:])
        run = self._dir(key)
        if run is None:
            return None
        if key in self.joined and not run.feeder.index.metrics and not run.feeder.pending:
            return self.db.runs.get(self.joined[key]) or run.feeder.index
        return run.feeder.index

    def run_dir(self, key: str) -> Path | None:
        run = self._dir(key)
        return run.path if run else None

    def config(self, key: str) -> dict[str, Any] | None:
        """The run's typed config, or ``None`` for an unknown key."""
        if key.startswith("db:"):
            run = next((r for r in self.db_runs if r["run_id"] == key[3:]), None)
            return None if run is None else dict(run.get("config") or {})
        found = self._dir(key)
        return None if found is None else dict(found.config)

    def summaries(self) -> list[dict[str, Any]]:
        """One row per run for the runs table: identity, status, config and metric summaries."""
        if not self.dirs and not self.db_runs:
            self.discover()
        rows = [self._dir_row(run) for run in list(self.dirs.values())]
        by_id: dict[str, dict[str, Any]] = {}
        for row in rows:
            by_id.setdefault(row["run_id"], row)
        now = time.time()
        joined: dict[str, str] = {}
        for run in self.db_runs:
            run_id = run["run_id"]
            raw_status = run.get("status")
            status = _DB_STATUS.get(str(raw_status), str(raw_status))
            if run_id in by_id:
                row = by_id[run_id]
                _join(row, status)
                joined[row["key"]] = run_id
                if not row["metrics"] and row["indexed"] >= 1.0:  # index() charts the copy
                    row.update(_index_part(self.db.runs.get(run_id), 0))
                continue
            info = run.get("info") or {}
            tags = info.get("tags")
            rows.append({
                "key": f"db:{run_id}", "source": "collector", "sources": ["collector"],
                "keys": {"collector": f"db:{run_id}"}, "run_id": run_id,
                "name": str(run.get("name") or run_id),
                "status": status,
                "age_s": now - run["registered"] if run.get("registered") else None,
                "started": None, "group": str(info.get("project") or info.get("group") or ""),
                "tags": [str(t) for t in tags] if isinstance(tags, list) else [],
                "config": run.get("config") or {}, "path": None, "note": None,
                "stats": False, "alerts": False, "layout": "collector",
                **_index_part(self.db.runs.get(run_id), 0),
            })  # fmt: skip
        self.joined = joined
        return rows

    def _dir_row(self, run: _DirRun) -> dict[str, Any]:
        info = run.info
        tags = str(info.get("tags", ""))
        return {
            "key": run.key,
            "source": "dir",
            "sources": ["dir"],
            "keys": {"dir": run.key},
            "run_id": str(info.get("run_id", run.path.name)),
            "name": str(info.get("name") or info.get("slug") or run.path.name),
            "status": shown_status(info),  # "done (lost 120)": never a plain done
            "lost": lost_events(info),
            "age_s": info.get("age_s"),
            "started": info.get("started"),
            "group": str(info.get("group") or info.get("project") or ""),
            "tags": [t for t in tags.split(",") if t],
            "config": run.config,
            "path": str(run.path),
            "note": _note(info, run.feeder.index),
            "stats": (run.path / "stats.jsonl").is_file(),
            "alerts": (run.path / "alerts.jsonl").is_file(),
            "layout": info.get("layout", "run.kv"),
            **_index_part(run.feeder.index, run.feeder.pending),
        }


def _join(row: dict[str, Any], db_status: str) -> None:
    """Make a folder's row the row of its collector copy too (same run id).

    The status is the more informative of the two: the folder's (it knows ``failed``,
    ``interrupted``, ``done (lost 120)``) unless it is still ``running`` or ``unknown`` while
    the collector already knows the end (``crashed``, ``done``).
    """
    row["sources"] = ["dir", "collector"]
    row["keys"] = {"dir": row["key"], "collector": f"db:{row['run_id']}"}
    if row["status"] in _UNSETTLED and db_status not in _UNSETTLED:
        row["status"] = db_status


def _note(info: dict[str, Any], index: RunIndex) -> str | None:
    """The run's note: why it has no run.kv or why that was unreadable, and files not read."""
    with index.lock:
        refused = list(index.extra.get("refused", {}).values())
    parts = [str(p) for p in (info.get("note") or info.get("error"), *refused) if p]
    return "; ".join(parts) or None


def _index_part(index: RunIndex | None, pending: int) -> dict[str, Any]:
    """The runs-table columns that come from the index: last step, summaries, progress."""
    if index is None:
        return {"last_step": None, "metrics": {}, "summary": {}, "media": 0, "unreadable": 0,
                "indexed": 1.0}  # fmt: skip
    with index.lock:
        metrics = list(index.metrics.values())
        done = sum(int(s.get("offset", 0)) for s in index.sources.values())
        media = len(index.media)
        unreadable = int(index.extra.get("skipped", 0))
    steps = [step for m in metrics if (step := m.ends.get("step")) is not None]
    return {
        "last_step": int(max(steps)) if steps else None,
        "metrics": {m.name: m.count for m in metrics},
        "summary": {
            m.name: {"last": m.last, "min": m.low, "max": m.high, "bad": m.bad} for m in metrics
        },
        "media": media,
        "unreadable": unreadable,  # lines skipped: not JSON, torn, or over MAX_LINE_BYTES
        "indexed": 1.0 if not pending else done / (done + pending),
    }
