"""One W&B-shaped run over a goggles_io run: ``RunContext`` plus a ``LocalStorageHandler``.

The run directory is a plain goggles_io run (``run.kv``, ``config.kv``, ``log.jsonl``, media
folders), so ``telemetry ui``, ``telemetry diff`` and ``open_run`` read it like any other.
Each run logs on a scope of its own (``wandb.<hex>``), so two runs of one process never write
into each other's folder. Steps follow W&B: ``log`` without ``step`` commits and advances,
``commit=False`` keeps the step, ``step=`` sets it; a step below the current one is logged
(W&B drops it with a warning), and said once per run.
"""

from __future__ import annotations

import fnmatch
import os
import secrets
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from goggles_io._api.functions import attach as _attach
from goggles_io._api.functions import detach, finish
from goggles_io._api.get_logger import get_logger
from goggles_io._event.validate import check_step
from goggles_io._util.report import ReportOnce
from goggles_io.compat._wandb_mappings import Config, Summary, record_into
from goggles_io.compat._wandb_values import Histogram, Image, Video, array_of, flatten, number_of
from goggles_io.exceptions import InvalidPayloadTypeError, NoRunError
from goggles_io.handlers.storage import LocalStorageHandler
from goggles_io.runs.status import RunStatus
from goggles_io.runs.writer import RunContext

__all__ = ["Run"]

_WHO = "goggles_io.compat.wandb"


def _driver() -> str:
    script = sys.argv[0] if sys.argv and sys.argv[0] else ""
    return os.path.abspath(script) if script and script != "-c" else "python"


class Run:
    """What ``wandb.init`` returns: ``log``, ``config``, ``summary``, ``define_metric``, ``finish``.

    Args:
        project: The run's project (``run.kv`` ``project``; the dashboard's group by default).
        name: The run's name (its slug: part of the run id and the dashboard's name column).
        root: The folder the run directory is made in.
        info: More ``run.kv`` fields (``tags``, ``group``, ``notes``).
        disabled: ``mode="disabled"``: accept every call, write nothing.
        on_finish: Called once the run finished (``wandb.run`` moves on).
    """

    def __init__(
        self,
        *,
        project: str,
        name: str | None,
        root: str | os.PathLike[str],
        info: Mapping[str, Any],
        disabled: bool = False,
        on_finish: Callable[[Run], None] | None = None,
    ) -> None:
        self.project = project
        self.disabled = disabled
        self.tell = ReportOnce(who=_WHO)
        self.summary = Summary(self._write_summary)
        self.step = 0  # W&B's current (uncommitted) step
        self._latest: int | None = None  # the step of the last point logged
        self._finished = False
        self._axes: dict[str, str] = {}  # define_metric: name or glob -> step metric
        self._axis_of: dict[str, str | None] = {}
        self.context: RunContext | None = None
        self._on_finish = on_finish
        if disabled:
            self.id, self.name, self.dir = f"disabled-{secrets.token_hex(3)}", name or "", ""
            self.config = Config(lambda items, allow: None)
            return
        self.context = RunContext(
            project, driver=_driver(), slug=name or project, root=root, info=info
        )
        self.id, self.name, self.dir = self.context.id, name or project, str(self.context.dir)
        self.scope = f"wandb.{secrets.token_hex(4)}"
        handler: Any = LocalStorageHandler(self.context.dir, name=f"compat.wandb:{self.id}")
        _attach(handler, scopes=[self.scope])
        self.handler = handler
        self.logger: Any = get_logger("wandb", scope=self.scope, with_metrics=True)
        self.config = Config(record_into(self.context.set_config, self.tell))

    def __repr__(self) -> str:
        return f"Run(id={self.id!r}, dir={self.dir!r})"

    @property
    def path(self) -> Path:
        """The run directory (W&B's ``run.dir`` is its files folder; here, the run's folder)."""
        return Path(self.dir)

    # -- logging -------------------------------------------------------------------------------
    def log(
        self,
        data: Mapping[str, Any],
        step: int | None = None,
        commit: bool | None = None,
        sync: bool | None = None,
    ) -> None:
        """Log ``data`` at ``step`` (default: the current step, then advance unless ``commit=False``).

        Numbers are one metric event per step (per ``step_metric`` value); ``Image``,
        ``Histogram``, ``Video``, lists and arrays of numbers (histograms, as W&B makes them)
        and strings (text) are events of their own.

        Raises:
            NoRunError: the run was finished.
            InvalidPayloadTypeError: ``data`` is not a dict, or a value is none of the above.
            InvalidPayloadError: ``step`` is not an int >= 0.
        """
        if self._finished:
            raise NoRunError(f"run {self.id} is finished: call wandb.init() for a new one.")
        if not isinstance(data, Mapping):
            msg = f"wandb.log takes a dict of name -> value (got {type(data).__name__})."
            raise InvalidPayloadTypeError(msg, value=data)
        if step is not None:
            step = step if type(step) is int and step >= 0 else check_step(step)
            if step < self.step:
                self.tell(
                    "backwards",
                    f"run {self.id}: step {step} is below the current step {self.step}: "
                    "logged all the same (W&B would drop it); said once per run",
                )
            self.step = step
        at = self.step
        if commit or (commit is None and step is None):
            self.step = at + 1
        if self.disabled:
            return
        numbers: dict[str, int | float] = {}
        others: list[tuple[str, Any]] = []
        for key, value in data.items():
            if type(value) is float or type(value) is int:
                numbers[key] = value
            elif isinstance(value, Mapping):
                for k, v in flatten(value, prefix=key).items():
                    self._sort(k, v, numbers, others)
            else:
                self._sort(key, value, numbers, others)
        if numbers:
            self._log_numbers(numbers, at)
        for key, value in others:
            self._log_other(key, value, at)
        self._latest = at

    def _sort(
        self, key: str, value: Any, numbers: dict[str, Any], others: list[tuple[str, Any]]
    ) -> None:
        if type(key) is not str or not key:
            flatten({key: value})  # raises, naming the key
        number = number_of(value)
        if number is not None:
            numbers[key] = number
        elif value is not None:
            others.append((key, value))

    def _log_numbers(self, numbers: dict[str, Any], at: int) -> None:
        self.summary.last.update(numbers)
        if not self._axes:
            self.logger.push(numbers, step=at)
            return
        groups: dict[tuple[str | None, Any], dict[str, Any]] = {}
        for key, value in numbers.items():
            axis = self._axis(key)
            x = None if axis is None else numbers.get(axis, self.summary.last.get(axis))
            groups.setdefault((axis, x) if x is not None else (None, None), {})[key] = value
        for (axis, x), payload in groups.items():
            if axis is None:
                self.logger.push(payload, step=at)
            else:
                self.logger.push(payload, step=at, x=x, x_axis=axis)

    def _log_other(self, key: str, value: Any, at: int) -> None:
        log = self.logger
        if isinstance(value, Image):
            log.image(value.data, step=at, name=key, **_caption(value.caption))
        elif isinstance(value, Histogram):
            log.histogram(value.values, step=at, name=key, bins=value.num_bins)
        elif isinstance(value, Video):
            log.video(value.data, step=at, name=key, fps=value.fps, format=value.format)
        elif isinstance(value, str):
            log.text(value, step=at, name=key)
        elif isinstance(value, Sequence) and value and all(isinstance(v, Image) for v in value):
            for i, image in enumerate(value):
                log.image(image.data, step=at, name=f"{key}/{i}", **_caption(image.caption))
        elif isinstance(value, (list, tuple)) or hasattr(value, "__array__"):
            log.histogram(array_of(value), step=at, name=key)  # W&B makes arrays histograms
        else:
            msg = (
                f"wandb.log({{{key!r}: ...}}): goggles_io.compat.wandb logs numbers, strings, "
                f"arrays, dicts, Image, Histogram and Video (got {type(value).__name__}); "
                "convert it to one of those."
            )
            raise InvalidPayloadTypeError(msg, value=value)

    def _write_summary(self, key: str, value: Any) -> None:
        if self.disabled:
            return
        at = self.step if self._latest is None else self._latest
        number = number_of(value)
        if number is not None:
            self.logger.push({key: number}, step=at)
            return
        self.tell(
            "summary-text",
            f"summary[{key!r}] is not a number: kept in log.jsonl as the text 'summary/{key}' "
            "(a run's summary shows numbers only); said once",
        )
        self.logger.text(str(value), step=at, name=f"summary/{key}")

    # -- declarations --------------------------------------------------------------------------
    def define_metric(
        self,
        name: str,
        step_metric: str | None = None,
        step_sync: bool | None = None,
        hidden: bool | None = None,
        summary: str | None = None,
        goal: str | None = None,
        overwrite: bool | None = None,
    ) -> None:
        """Plot ``name`` (a name or a glob such as ``"val/*"``) against ``step_metric``.

        Each point takes as x the ``step_metric`` value logged in the same call, else its last
        logged value (W&B's ``step_sync``); it is goggles_io's custom x-axis
        (``extra.x_axis``), the dashboard's "custom" axis. ``summary=``, ``goal=`` and
        ``hidden=`` are accepted and said once to have no effect (the summary is the last value).
        """
        if type(name) is not str or not name:
            msg = f"define_metric name must be a non-empty str (got {name!r})."
            raise InvalidPayloadTypeError(msg, value=name)
        if any(v is not None for v in (hidden, summary, goal)):
            self.tell(
                "define_metric",
                "define_metric(hidden=, summary=, goal=) has no effect here: "
                "a run's summary is the last value of each metric; said once",
            )
        if step_metric is not None:
            self._axes[name] = step_metric
            self._axis_of.clear()

    def _axis(self, key: str) -> str | None:
        try:
            return self._axis_of[key]
        except KeyError:
            pass
        axis = self._axes.get(key)
        if axis is None:
            for pattern, metric in self._axes.items():
                if fnmatch.fnmatchcase(key, pattern):
                    axis = metric
        if axis == key:
            axis = None
        self._axis_of[key] = axis
        return axis

    # -- the end -------------------------------------------------------------------------------
    def finish(self, exit_code: int | None = None, quiet: bool | None = None) -> None:
        """Deliver everything logged (``goggles_io.finish()``), then close the run: ``done``,
        or ``failed`` with a non-zero ``exit_code``. A second call does nothing."""
        if self._finished:
            return
        self._finished = True
        if self.context is not None:
            finish()
            detach(self.handler.name, self.scope)
            self.context.close(RunStatus.DONE if not exit_code else RunStatus.FAILED)
        if self._on_finish is not None:
            self._on_finish(self)

    @property
    def finished(self) -> bool:
        return self._finished

    def __enter__(self) -> Run:
        return self

    def __exit__(self, *exc_info: object) -> None:
        exc = exc_info[1]  # (type, exception, traceback): only the exception matters here
        self.finish(exit_code=0 if exc is None else 1)


def _caption(caption: str | None) -> dict[str, Any]:
    return {} if caption is None else {"caption": caption}
