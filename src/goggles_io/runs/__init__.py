"""Runs: a run directory written before step 0 and read back by every tool (``run.kv``, config).

:class:`RunContext` and :func:`register_run` write a run (:mod:`goggles_io.runs.writer`);
:func:`read_run`, :func:`list_runs`, :func:`last_step` and :func:`last_metrics` read runs back
(:mod:`goggles_io.runs.reader`); :func:`open_run` and :func:`search_runs` read a run's metrics,
config and alerts as tables for notebooks (:mod:`goggles_io.runs.history`); :func:`diff_configs`
shows what differed between runs (:mod:`goggles_io.runs.compare`); :func:`read_kv` /
:func:`write_kv` are the ``key=value`` format of ``run.kv`` and ``config.kv``.
"""

from __future__ import annotations

from goggles_io._util.kvfile import read_kv, write_kv
from goggles_io.exceptions import RunFileError
from goggles_io.runs.compare import ConfigDiff, DiffRow, diff_configs, format_diff, read_config
from goggles_io.runs.history import Run, describe_run, find_runs, is_run_dir, open_run, search_runs
from goggles_io.runs.reader import last_metrics, last_step, list_runs, read_run
from goggles_io.runs.status import RunStatus, lost_events, shown_status
from goggles_io.runs.writer import RunContext, register_run

__all__ = [
    "ConfigDiff",
    "DiffRow",
    "Run",
    "RunContext",
    "RunFileError",
    "RunStatus",
    "describe_run",
    "diff_configs",
    "find_runs",
    "format_diff",
    "is_run_dir",
    "last_metrics",
    "last_step",
    "list_runs",
    "lost_events",
    "open_run",
    "read_config",
    "read_kv",
    "read_run",
    "register_run",
    "search_runs",
    "shown_status",
    "write_kv",
]
