"""The ``wandb`` API a training script uses, logging through goggles_io: change one import.

``import goggles_io.compat.wandb as wandb`` and an unchanged script's ``wandb.init(config=...)``,
``wandb.log({...}, step=...)``, ``wandb.config``, ``wandb.summary[...]``,
``wandb.define_metric`` and ``wandb.finish()`` write a goggles_io run (``RunContext``, events in
``log.jsonl`` through ``LocalStorageHandler``): the dashboard, ``telemetry diff`` and
``open_run`` read it, nothing is uploaded, no account is needed. Differences from W&B, on
purpose: a step that goes backwards is logged, not dropped (said once per run); runs land in
``./runs/<run id>/`` (``dir=`` is the runs folder), where ``telemetry ui`` looks by default.
``init`` arguments with no meaning here (``entity``, ``resume``, ``settings``, ...) are accepted
and each said once on stderr. See ``docs/coming-from-tensorboard-or-wandb.md``.
"""

from __future__ import annotations

import atexit
import os
import sys
import threading
from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Any

from goggles_io._util.report import ReportOnce
from goggles_io.compat._wandb_run import Run
from goggles_io.compat._wandb_values import Histogram, Image, Video
from goggles_io.exceptions import ConfigurationError, NoRunError

__all__ = [
    "Histogram",
    "Image",
    "Run",
    "Video",
    "config",
    "define_metric",
    "finish",
    "init",
    "log",
    "login",
    "run",
    "summary",
    "watch",
]

DEFAULT_ROOT = "runs"
"""Where runs land without ``dir=``: the folder ``telemetry ui`` and ``telemetry runs`` read."""
_MODES = ("online", "offline", "disabled", "shared", "dryrun", "run")
_tell = ReportOnce(who="goggles_io.compat.wandb")
_lock = threading.Lock()
_active: list[Run] = []  # runs not finished yet, oldest first
_uncaught: list[BaseException] = []


class _NoRun:
    """``wandb.config`` / ``wandb.summary`` before ``init``: every use says to call it first."""

    def __init__(self, what: str) -> None:
        object.__setattr__(self, "_what", what)

    def _fail(self, *args: Any, **kwargs: Any) -> Any:
        raise NoRunError(f"call wandb.init() before using wandb.{self._what}.")

    __getitem__ = __setitem__ = __contains__ = __iter__ = __len__ = _fail
    update = keys = items = get = as_dict = _fail

    def __getattr__(self, name: str) -> Any:
        self._fail()

    def __setattr__(self, name: str, value: Any) -> None:
        self._fail()

    def __repr__(self) -> str:
        return f"<wandb.{self._what}: no run yet (call wandb.init())>"


run: Run | None = None
config: Any = _NoRun("config")
summary: Any = _NoRun("summary")


def init(
    project: str | None = None,
    name: str | None = None,
    config: Any = None,
    dir: str | os.PathLike[str] | None = None,
    tags: Sequence[str] | None = None,
    notes: str | None = None,
    mode: str | None = None,
    group: str | None = None,
    reinit: bool | str | None = None,
    **ignored: Any,
) -> Run:
    """Start a run: ``<dir or ./runs>/<run id>/`` with ``run.kv`` written before any step.

    ``config`` (a dict or an ``argparse.Namespace``) is recorded as the run's config; ``tags``,
    ``group`` and ``notes`` go into ``run.kv`` (the dashboard filters and groups by them).
    ``mode="disabled"`` (or ``WANDB_MODE=disabled``) gives a run that writes nothing; every
    other mode writes the run here. A run still open is finished first (W&B's
    ``reinit="finish_previous"``); ``reinit=False`` / ``"return_previous"`` returns it,
    ``"create_new"`` keeps it open beside the new one.

    Raises:
        ConfigurationError: ``mode`` is not a W&B mode, or ``tags`` is a bare string.
        ConfigConflictError: never on a fresh run; see ``Config.update``.
    """
    for key in sorted(ignored):
        _tell(f"init:{key}", f"wandb.init({key}=...) has no effect here; ignored")
    mode = mode or os.environ.get("WANDB_MODE") or "offline"
    if mode not in _MODES:
        msg = f"mode must be one of {_MODES!r} (got {mode!r})."
        raise ConfigurationError(msg, key="mode", value=mode)
    if isinstance(tags, str):
        msg = f"tags must be a list of str (got the str {tags!r}); pass tags=[{tags!r}]."
        raise ConfigurationError(msg, key="tags", value=tags)
    disabled = mode == "disabled" or os.environ.get("WANDB_DISABLED", "").lower() in ("true", "1")
    with _lock:
        previous = _active[-1] if _active else None
    if previous is not None:
        if reinit in (False, "return_previous"):
            return previous
        if reinit != "create_new":
            previous.finish()
    project = project or os.environ.get("WANDB_PROJECT") or "uncategorized"
    info = {
        "tags": ",".join(str(t) for t in tags) if tags else None,
        "group": group,
        "notes": notes,
        "source": "goggles_io.compat.wandb",
    }
    new = Run(
        project=project,
        name=name or os.environ.get("WANDB_NAME"),
        root=DEFAULT_ROOT if dir is None else dir,
        info=info,
        disabled=disabled,
        on_finish=_forget,
    )
    if config is not None:
        new.config.update(config)
    with _lock:
        _active.append(new)
        first = len(_active) == 1 and not _hooked
    if first:
        _hook()
    _set_globals(new)
    return new


def _set_globals(current: Run | None) -> None:
    names = globals()  # the module's attributes: `wandb.run` reads them at each use
    names["run"] = current
    names["config"] = current.config if current is not None else _NoRun("config")
    names["summary"] = current.summary if current is not None else _NoRun("summary")


def _current(what: str) -> Run:
    if run is None:
        raise NoRunError(f"call wandb.init() before wandb.{what}().")
    return run


def log(
    data: Mapping[str, Any],
    step: int | None = None,
    commit: bool | None = None,
    sync: bool | None = None,
) -> None:
    """``run.log`` of the current run (see :meth:`Run.log`)."""
    (run or _current("log")).log(data, step, commit, sync)


def define_metric(name: str, step_metric: str | None = None, **kwargs: Any) -> None:
    """``run.define_metric`` of the current run (see :meth:`Run.define_metric`)."""
    _current("define_metric").define_metric(name, step_metric, **kwargs)


def finish(exit_code: int | None = None, quiet: bool | None = None) -> None:
    """Finish the current run (nothing to do without one), as ``wandb.finish`` does."""
    if run is not None:
        run.finish(exit_code)


def _forget(finished: Run) -> None:
    """A run finished (through ``wandb.finish`` or its own ``finish``): the newest open one is
    ``wandb.run`` again, or none."""
    with _lock:
        if finished in _active:
            _active.remove(finished)
        newest = _active[-1] if _active else None
    if run is finished or run is None:
        _set_globals(newest)


def login(*args: Any, **kwargs: Any) -> bool:
    """Nothing to log in to: runs are written here. Returns ``True`` as W&B does when logged in."""
    return True


def watch(*args: Any, **kwargs: Any) -> None:
    """W&B's gradient hooks on a torch model are not made here: said once, then ignored."""
    _tell("watch", "wandb.watch(model) logs nothing here (no gradient hooks); ignored")


def __getattr__(name: str) -> Any:
    msg = (
        f"goggles_io.compat.wandb has no {name!r}: it covers init, log, config, summary, "
        "define_metric, finish, run, Image, Histogram, Video, login and watch "
        "(docs/coming-from-tensorboard-or-wandb.md)."
    )
    raise AttributeError(msg)


# -- at exit: the runs a script did not finish are finished (failed after an uncaught error) --
_hooked = False


def _hook() -> None:
    global _hooked
    _hooked = True
    previous = sys.excepthook

    def excepthook(kind: type[BaseException], exc: BaseException, tb: TracebackType | None) -> None:
        _uncaught.append(exc)
        previous(kind, exc, tb)

    sys.excepthook = excepthook
    atexit.register(_finish_all)


def _finish_all() -> None:
    code = 1 if _uncaught else 0
    while True:
        with _lock:
            if not _active:
                return
            one = _active.pop()
        one.finish(exit_code=code)
