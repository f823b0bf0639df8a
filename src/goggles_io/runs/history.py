"""Reading runs from code (notebooks): a run's metrics as a table, its config, alerts and stats.

The shapes are the ones users know: ``open_run(path).history()`` is W&B's
``wandb.Api().run(...).history()`` (one row per step, one column per metric), and
``search_runs(root)`` is ``mlflow.search_runs`` (one row per run, ``config.<key>`` and
``summary.<metric>`` columns). Both return a pandas ``DataFrame`` when pandas is installed
(``pip install 'split-telemetry[frames]'``) and plain columns (``{column: [values]}``)
otherwise, or whichever ``pandas=`` asks for.

Run directories with a ``run.kv`` (:class:`~goggles_io.runs.RunContext`) and without one
(robo-goggles' ``LocalStorageHandler`` layout: ``log.jsonl`` and media folders) are both runs;
the latter are named by their folder and their status is ``unknown``.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from functools import cached_property
from pathlib import Path
from typing import Any

from goggles_io._util.safe_read import iter_chunks, open_inside
from goggles_io.runs.compare import read_config
from goggles_io.runs.lines import (
    CSV_FILE,
    EVENT_FILES,
    Columns,
    Objects,
    Parsed,
    csv_rows,
    file_objects,
    json_lines,
    metric_sources,
)
from goggles_io.runs.reader import last_step, read_run
from goggles_io.runs.tfevents import (
    TFEVENTS_GLOB,
    is_tfevents,
    missing_reader,
    read_records,
    tf_events,
    tfevents_files,
)

__all__ = ["Run", "describe_run", "find_runs", "is_run_dir", "open_run", "search_runs"]

_OBJECT_FILES = ("alerts.jsonl", "stats.jsonl")
_TF_BUDGET = 1 << 20  # bytes of event records decoded at a time
UNKNOWN_STATUS = "unknown"
"""The status of a run directory without ``run.kv`` (nothing says whether it finished)."""


def is_run_dir(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` is a run directory: it holds ``run.kv``, an event log, ``metrics.csv``
    or TensorBoard event files."""
    base = Path(path)
    if any((base / name).is_file() for name in ("run.kv", *EVENT_FILES, CSV_FILE)):
        return True
    return any(p.is_file() for p in base.glob(TFEVENTS_GLOB))  # a TensorBoard log directory


def find_runs(*roots: str | os.PathLike[str]) -> list[Path]:
    """Run directories among ``roots``: each root that is one, else its children that are."""
    found: list[Path] = []
    for root in roots:
        base = Path(root)
        if is_run_dir(base):
            found.append(base)
        elif base.is_dir():
            found += sorted(p for p in base.iterdir() if p.is_dir() and is_run_dir(p))
    return found


def describe_run(run_dir: str | os.PathLike[str], *, with_last_step: bool = True) -> dict[str, Any]:
    """``run.kv`` with its derived status, or what is known of a run directory without one.

    Without ``run.kv`` the run is named by its folder, ``status`` is ``unknown`` and
    ``started`` is the event log's modification time (ISO 8601, UTC); ``error`` says why a
    ``run.kv`` could not be read. Never raises for a damaged run.
    """
    path = Path(run_dir)
    if (path / "run.kv").is_file():
        try:
            return read_run(path, with_last_step=with_last_step)
        except (OSError, ValueError) as exc:
            return {"run_id": path.name, "run_dir": str(path), "status": "unreadable",
                    "error": str(exc), "age_s": None, "last_step": None}  # fmt: skip
    import datetime as _dt
    import time

    files = [path / name for name in (*EVENT_FILES, CSV_FILE) if (path / name).is_file()]
    tensorboard = tfevents_files(path)
    mtime = max((f.stat().st_mtime for f in files + tensorboard), default=path.stat().st_mtime)
    layout = "robo-goggles" if (path / "log.jsonl").is_file() else "files"
    started = _dt.datetime.fromtimestamp(mtime, _dt.timezone.utc).isoformat(timespec="seconds")
    return {
        "run_id": path.name,
        "name": path.name,
        "run_dir": str(path),
        "status": UNKNOWN_STATUS,
        "layout": "tensorboard" if tensorboard and not files else layout,
        "note": "no run.kv: named by its folder; status unknown"
        + ("; TensorBoard event files, read-only" if tensorboard and not files else ""),
        "started": started,
        "age_s": time.time() - mtime,
        "last_step": last_step(path) if with_last_step else None,
    }


def _read_all(run_dir: Path) -> Parsed:
    """Every metric point and media item of the run, each metric from the file that owns it.

    Files are read in bounded pieces: a line over ``MAX_LINE_BYTES`` is skipped and counted,
    a file resolving outside the run (a symlink out) or not regular (a FIFO) is not read.
    """
    merged = Parsed()
    for source in metric_sources(run_dir):
        parsed = Parsed()
        too_long = [0]
        header: list[str] | None = None
        folder = "" if source.parent == run_dir else source.parent.name
        if is_tfevents(source):
            _read_tfevents(run_dir, source, merged)
            continue
        try:
            with open_inside(run_dir, source) as fh:
                for chunk in iter_chunks(fh, too_long):
                    if source.suffix == ".csv":
                        if header is None and too_long[0]:
                            header = []  # the header line was unreadable: so is every row
                        _, header = csv_rows(
                            chunk.decode("utf-8", errors="replace"), header, parsed
                        )
                    else:
                        json_lines(chunk.split(b"\n"), folder, parsed)
        except OSError:
            continue
        for name, columns in parsed.metrics.items():
            merged.metrics.setdefault(name, columns)
        merged.media += parsed.media
        merged.skipped += parsed.skipped + too_long[0]
    return merged


def _read_tfevents(run_dir: Path, source: Path, merged: Parsed) -> None:
    """Every scalar of one TensorBoard event file into ``merged`` (names it has not yet)."""
    if missing_reader():
        return
    parsed = Parsed()
    folder = "" if source.parent == run_dir else source.parent.relative_to(run_dir).as_posix()
    offset = 0
    try:
        with open_inside(run_dir, source) as fh:
            while True:
                records, after, skipped = read_records(fh, offset, _TF_BUDGET)
                tf_events(records, folder, parsed)
                parsed.skipped += skipped
                if after == offset:
                    break
                offset = after
    except OSError:
        return
    for name, columns in parsed.metrics.items():
        merged.metrics.setdefault(name, columns)
    merged.media += parsed.media  # add_text's blocks
    merged.skipped += parsed.skipped


def _frame(columns: dict[str, list[Any]], pandas: bool | None) -> Any:
    if pandas is False:
        return columns
    try:
        import pandas as pd
    except ImportError:
        if pandas:
            msg = "pandas=True needs pandas: pip install 'split-telemetry[frames]'"
            raise ImportError(msg) from None
        return columns
    return pd.DataFrame(columns)


class Run:
    """One run directory read back: info, config, metrics, alerts, stats and media, read on first
    use; ``unreadable`` counts the lines that could not be read.

    Args:
        run_dir: The run directory (with or without ``run.kv``).
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.path = Path(run_dir)
        if not self.path.is_dir():
            msg = f"run_dir must be a run directory (got {os.fspath(run_dir)!r}: not a directory)"
            raise NotADirectoryError(msg)
        self._object_files: dict[str, Objects] = {}

    def __repr__(self) -> str:
        return f"Run({str(self.path)!r}, status={self.info.get('status')!r})"

    @cached_property
    def info(self) -> dict[str, Any]:
        """``run.kv`` plus status, age and last step (see :func:`describe_run`)."""
        return describe_run(self.path)

    @property
    def id(self) -> str:
        return str(self.info.get("run_id", self.path.name))

    @property
    def name(self) -> str:
        return str(self.info.get("name") or self.info.get("slug") or self.path.name)

    @cached_property
    def config(self) -> dict[str, Any]:
        """The recorded config with typed values (``config.kv``, ``metrics.config.kv``)."""
        return read_config(self.path)

    @cached_property
    def _parsed(self) -> Parsed:
        return _read_all(self.path)

    @property
    def metrics(self) -> list[str]:
        """Names of the metrics the run logged, sorted."""
        return sorted(self._parsed.metrics)

    def series(self, name: str) -> Columns:
        """One metric's points in logged order: ``step``, ``time``, ``x``, ``value`` lists.

        Raises:
            KeyError: the run logged no metric ``name`` (the message lists what it has).
        """
        try:
            return self._parsed.metrics[name]
        except KeyError:
            msg = f"run {self.id!r} has no metric {name!r}; it has {self.metrics[:20]}"
            raise KeyError(msg) from None

    def history(self, keys: Sequence[str] | None = None, *, pandas: bool | None = None) -> Any:
        """One row per step, one column per metric (``None`` where a metric has no value).

        Like W&B's ``run.history()``; a second value of a metric at the same step gets a row
        of its own (nothing is dropped). ``keys`` picks metrics; ``pandas`` forces the type.
        """
        names = list(keys) if keys is not None else self.metrics
        rows: dict[tuple[float, int], dict[str, float]] = {}
        for name in names:
            seen: dict[float, int] = {}
            col = self.series(name)
            for step, value in zip(col.step, col.value, strict=True):
                nth = seen[step] = seen.get(step, -1) + 1
                rows.setdefault((step, nth), {})[name] = value
        order = sorted(rows, key=lambda k: (k[0] != k[0], k[0], k[1]))  # NaN steps last
        table: dict[str, list[Any]] = {"step": [None if k[0] != k[0] else int(k[0]) for k in order]}
        for name in names:
            table[name] = [rows[k].get(name) for k in order]
        return _frame(table, pandas)

    @property
    def summary(self) -> dict[str, float]:
        """The last value of every metric (W&B's ``run.summary``)."""
        return {name: col.value[-1] for name, col in sorted(self._parsed.metrics.items()) if col}

    @property
    def media(self) -> list[dict[str, Any]]:
        """Media items logged: kind, name, step, file (relative to the run directory)."""
        return list(self._parsed.media)

    @property
    def alerts(self) -> list[dict[str, Any]]:
        """The metric watchers' alerts (``alerts.jsonl``), in the order they fired."""
        return self._objects("alerts.jsonl").items

    @property
    def stats(self) -> list[dict[str, Any]]:
        """The experiment harness's stat records (``stats.jsonl``) as dicts, NaN restored."""
        return self._objects("stats.jsonl").items

    @property
    def unreadable(self) -> dict[str, int]:
        """Lines that could not be read, by file (``{"stats.jsonl": 3}``); empty when none.

        A torn or foreign line is left out of ``alerts``, ``stats`` and the metrics, and
        counted here, never dropped in silence. Metric files are counted together as
        ``"metrics"``.
        """
        counts = {name: self._objects(name).unreadable for name in _OBJECT_FILES}
        counts["metrics"] = self._parsed.skipped
        return {name: n for name, n in counts.items() if n}

    def _objects(self, name: str) -> Objects:
        found = self._object_files.get(name)
        if found is None:
            found = file_objects(self.path, name)  # bounded lines, inside the run only
            self._object_files[name] = found
        return found


def open_run(run_dir: str | os.PathLike[str]) -> Run:
    """The run in ``run_dir`` (see :class:`Run`); nothing is read until asked for."""
    return Run(run_dir)


def search_runs(
    *roots: str | os.PathLike[str], pandas: bool | None = None, metrics: Iterable[str] = ()
) -> Any:
    """One row per run under ``roots`` (default ``runs``): id, name, status, started, path,
    ``config.<key>`` columns and ``summary.<metric>`` (last value) columns, oldest first.

    Like ``mlflow.search_runs``. ``metrics`` limits the summary columns (reading every run's
    metrics costs a full read of its files; by default all are read).
    """
    wanted = list(metrics)
    records = []
    for path in find_runs(*(roots or ("runs",))):
        run = Run(path)
        row: dict[str, Any] = {
            "run_id": run.id,
            "name": run.name,
            "status": run.info.get("status"),
            "started": run.info.get("started"),
            "path": str(path),
        }
        row.update({f"config.{k}": v for k, v in run.config.items()})
        summary = run.summary
        for name in wanted or summary:
            row[f"summary.{name}"] = summary.get(name)
        records.append(row)
    records.sort(key=lambda r: str(r.get("started") or ""))
    columns: dict[str, list[Any]] = {}
    for record in records:
        for key in record:
            columns.setdefault(key, [])
    for key in columns:
        columns[key] = [record.get(key) for record in records]
    return _frame(columns, pandas)
