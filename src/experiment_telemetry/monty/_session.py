"""One Monty experiment as one run of this project, driven by Monty's own callbacks.

Monty owns the loop; three pieces of the adapter join it where Monty lets them in: the
telemetry handler (Monty's ``+telemetry`` config), the stats handler (a ``MontyHandler`` in
its logging config) and the step hook (``step_hook``). Whichever needs the run first opens it;
the last one to close closes it (the run's status follows the exception Monty is leaving
with, if any), and an interpreter exit closes what is left.

The run is this project's ``Experiment`` harness without its loop: the same run directory,
event log, aggregators, transforms and goggles handlers (W&B on request), so a Monty run is a
run like any other in ``telemetry runs``, ``telemetry ui``, ``telemetry replay`` and
``telemetry diff``. Where its statistics come from:

- the step hook is on: ``RecognitionAggregator`` from the hook's runtime events (the run's
  ``stats.jsonl``, ``<mode>_stats.csv``, console, W&B); Monty's own numbers, from its
  report, are kept beside them in ``monty/`` (``stats.jsonl``, ``<mode>_stats.csv``);
- otherwise: Monty's own numbers from its report are the run's statistics.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from experiment_telemetry.aggregators import Aggregator
from experiment_telemetry.aggregators.standard import make_aggregators
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.harness import Experiment
from experiment_telemetry.monty._hydra import hydra_settings
from experiment_telemetry.monty._loggers import share_telemetry_namespace
from experiment_telemetry.monty._version import require_monty
from experiment_telemetry.monty.events import MontyEpisodeReported, MontyTelemetryEvent
from experiment_telemetry.monty.report import MONTY_STATS_STREAM, MontyReportAggregator
from experiment_telemetry.recorder import STATS_FILE, EventRecorder
from experiment_telemetry.stats import StatEvent
from experiment_telemetry.transforms import CsvTransform, Transform
from goggles_io.runs import RunContext
from runtime_telemetry import get_telemetry

__all__ = [
    "MONTY_DIR",
    "Options",
    "Session",
    "acquire",
    "configure",
    "current",
    "on_open",
    "release",
    "waiting_for_hook",
]

_logger = logging.getLogger(__name__)
MONTY_DIR = "monty"
"""Folder of a run holding Monty's own numbers when the step hook's are the run's."""
TELEMETRY_STREAM = "experiment_telemetry.monty.telemetry"
"""Emitter of ``MontyTelemetryEvent`` (logger ``telemetry.experiment_telemetry.monty.telemetry``)."""
REPORT_STREAM = "experiment_telemetry.monty.report"
"""Emitter of ``MontyEpisodeReported``."""


@attrs.define
class Options:
    """How the run is made; each piece of the adapter adds what its config says."""

    root: str | None = None
    """Where the run's folder goes (default ``runs``; the shipped configs say Monty's
    output folder)."""
    project: str = "monty"
    slug: str | None = None
    """Short name (default: the experiment's config name, or Monty's ``run_name``)."""
    wandb: bool = False
    console: bool = True
    step_hook: bool = False
    """A step hook is part of the experiment: the run's stats come from its events."""
    stats_handler: bool = False
    """The stats handler is part of the experiment: it ends each episode."""


_options = Options()
_session: Session | None = None
_waiters: list[Callable[[], None]] = []
_lock = threading.RLock()


def configure(**settings: Any) -> None:
    """Record a piece's settings before the run opens; a setting given twice keeps the first
    value that is not the default (a conflict is said once, on this module's logger)."""
    defaults = Options()
    with _lock:
        for name, value in settings.items():
            if value is None:
                continue
            old = getattr(_options, name)
            if name in ("step_hook", "stats_handler"):
                setattr(_options, name, bool(old or value))
            elif old == getattr(defaults, name):
                setattr(_options, name, value)
            elif old != value:
                _logger.warning("Monty adapter: %s=%r ignored, the run uses %r", name, value, old)


def current() -> Session | None:
    """The open run, if any."""
    return _session


def waiting_for_hook() -> bool:
    """Whether a step hook was built but has not opened the run yet: it knows which sensor
    feeds which module, which the run records before the first episode."""
    return _options.step_hook and (_session is None or _session.closed)


def acquire(sensor_to_lm: dict[str, str] | None = None, model: Any = None) -> Session:
    """The run, opened now if no piece opened it yet; the caller holds it until ``release``.

    Raises:
        MontyUnavailableError: Monty is missing or a version the adapter does not know.
    """
    global _session
    with _lock:
        if _session is None or _session.closed:
            require_monty()
            _session = Session(attrs.evolve(_options))
            _session.model = model
            _session.start(sensor_to_lm or {})
            waiting, _waiters[:] = list(_waiters), []
            for flush in waiting:  # telemetry that arrived before the step hook opened the run
                flush()
        _session.holders += 1
        return _session


def on_open(flush: Callable[[], None]) -> None:
    """Call ``flush`` once the run opens (a piece holding events that wait for it)."""
    with _lock:
        if flush not in _waiters:
            _waiters.append(flush)


def release(session: Session) -> None:
    """Drop one hold; the last one closes the run, with the status of the exception Monty is
    leaving with (``sys.exc_info()`` inside its ``__exit__``), if any."""
    with _lock:
        session.holders -= 1
        if session.holders > 0:
            return
    session.close(sys.exc_info()[1])


def _forget(session: Session) -> None:
    """The run closed: the next Monty experiment in this process starts from fresh settings."""
    global _options
    with _lock:
        if _session is session:
            _options = Options()
            _waiters.clear()


@atexit.register
def _close_at_exit() -> None:
    session = _session
    if session is not None and not session.closed:
        session.close(None)


class _SideCsv(CsvTransform):
    """Monty's own numbers as CSVs in ``<run>/monty/`` (from the side stream)."""

    def attach(self, stream: str = MONTY_STATS_STREAM) -> _SideCsv:
        return super().attach(stream)


class _Harness(Experiment):
    """The harness without its loop: Monty drives it through ``Session``."""

    def __init__(self, session: Session, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.config.pop("num_epochs", None)  # the harness's loop setting; Monty's are its own
        self.session = session

    def make_aggregators(self) -> list[Aggregator]:
        aggregators = make_aggregators(self.config)
        if self.session.side_report:
            aggregators.append(MontyReportAggregator(stream=MONTY_STATS_STREAM))
        return aggregators

    def make_transforms(self, run: RunContext) -> list[Transform]:
        transforms = super().make_transforms(run)
        if self.session.side_report:
            transforms.append(_SideCsv(run.dir / MONTY_DIR))
        return transforms


class Session:
    """The run of one Monty experiment (see the module's docstring)."""

    def __init__(self, options: Options) -> None:
        self.options = options
        self.holders = 0
        self.closed = False
        self.episode = 0
        """Run-wide index of the episode in progress (episodes reported so far)."""
        self.model: Any = None
        """Monty's model, once the step hook saw it: the mode of an event arriving now."""
        self.episode_start: float | None = None
        """When the episode in progress started (the step hook's first step), if known."""
        self.telemetry_counts: Counter[str] = Counter()
        """Monty telemetry events received, by Monty's kind."""
        self.hook: Any = None
        """The step hook, asked to say how each episode ended before it is scored."""
        self.side_report = options.step_hook and options.stats_handler
        self.run: RunContext | None = None
        self._harness: _Harness | None = None
        self._opened: list[Any] = []
        self._lock = threading.RLock()
        self._telemetry = get_telemetry(TELEMETRY_STREAM)
        self._report = get_telemetry(REPORT_STREAM)
        self._goggles: Any = None
        self._steps: Counter[str] = Counter()

    @property
    def run_dir(self) -> Path | None:
        return None if self.run is None else self.run.dir

    def start(self, sensor_to_lm: dict[str, str]) -> None:
        """Create the run folder, record the config, attach everything.

        ``sensor_to_lm`` (from the step hook) ties the sensor feeding each module to it, for
        the per-module stepwise targets."""
        # As the demo: goggles_io in this process unless the user chose a transport (a dedicated
        # host's stdout is /dev/null: the console lines would be lost).
        os.environ.setdefault("GOGGLES_TRANSPORT", "inprocess")
        share_telemetry_namespace()
        for emitter in (self._telemetry, self._report):
            emitter.events_logger.propagate = True  # made before the line above, maybe
        opts = self.options
        settings = hydra_settings()
        experiment = str(settings.get("hydra.choices.experiment", "")) or None
        run_name = settings.get("experiment.config.logging.run_name") or None
        slug = opts.slug or (experiment.rsplit("/", 1)[-1] if experiment else run_name) or "monty"
        events = opts.step_hook
        config: dict[str, Any] = {
            "monty.version": require_monty(),
            "monty.stats": "step_hook_events" if events else "monty_report",
            "recognition.enabled": events,
            "monty.report.enabled": not events,
            **(
                {"recognition.sensor_to_lm": [f"{s}={m}" for s, m in sensor_to_lm.items()]}
                if sensor_to_lm
                else {}
            ),
            **settings,
        }
        harness = _Harness(
            self,
            root=opts.root or "runs",
            project=opts.project,
            slug=slug,
            config=config,
            console=opts.console,
            wandb=opts.wandb,
            progress=False,
        )
        seed = settings.get("experiment.config.seed")
        run = RunContext(
            opts.project,
            driver="tbp.monty",
            slug=slug,
            seed=seed if isinstance(seed, int) else None,
            root=harness.root,
            info={"tags": "monty", "group": experiment},
        )
        if multiprocessing.parent_process() is None:
            # SIGTERM now ends Monty's loop as an exception: the run is interrupted. Not in a
            # worker of Monty's run_parallel, whose pool ends idle workers with SIGTERM.
            run.__enter__()
        self.run, self._harness = run, harness
        harness.run_context = run
        try:
            run.set_config(harness.config)
            from runtime_telemetry import configure as configure_levels

            configure_levels(harness.telemetry_levels)
            harness._open(run, self._opened)
            if self.side_report:
                side = EventRecorder(run.dir / MONTY_DIR / STATS_FILE, only=(StatEvent,), skip=())
                self._opened.append(side.subscribe(f"telemetry.{MONTY_STATS_STREAM}"))
        except BaseException as exc:
            self.close(exc)
            raise
        import goggles_io

        self._goggles = goggles_io.get_logger("monty", scope="experiment", with_metrics=True)
        _logger.info("Monty run %s: %s", run.id, run.dir)

    # -- what the pieces hand in -------------------------------------------------------------
    def monty_event(self, event: MontyTelemetryEvent, numbers: dict[str, float]) -> None:
        """A Monty telemetry event: into the event log (and every subscriber), and its numbers
        onto the bus as ``monty/<kind>/<field>`` scalars (the dashboard charts them)."""
        with self._lock:
            if self.closed:
                return
            self.telemetry_counts[event.monty_kind] += 1
            self._telemetry.emit(event)
            if numbers and self._goggles is not None:
                step = self._steps[event.monty_kind]
                self._steps[event.monty_kind] += 1
                for name, value in numbers.items():
                    self._goggles.scalar(f"monty/{event.monty_kind}/{name}", value, step=step)

    def end_episode(self, report: MontyEpisodeReported, context: EpisodeContext) -> list[StatEvent]:
        """Monty reported an episode: the hook says how its modules ended, the report goes into
        the event log, and the episode is scored."""
        with self._lock:
            if self.closed or self._harness is None:
                return []
            hook = self.hook
            if hook is not None:
                hook.finish_episode()
            self._report.emit(report)
            stats = self._harness.post_episode(context)
            self.episode += 1
            self.episode_start = None
            return stats

    def stamp(self) -> tuple[str, int, str | None]:
        """Run id, run-wide episode and mode (known once the step hook saw Monty's model: Monty
        sets its mode before an episode's first step) for an event arriving now."""
        mode = getattr(self.model, "experiment_mode", None)
        return (
            ("" if self.run is None else self.run.id),
            self.episode,
            None if mode is None else str(mode),
        )

    # -- the end -----------------------------------------------------------------------------
    def close(self, exc: BaseException | None = None) -> None:
        """Close aggregators, transforms, recorders and handlers, then the run (``done``, or
        what ``exc`` makes it: ``failed``, ``interrupted``); idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            harness, run = self._harness, self.run
        try:
            if harness is not None:
                harness._close(self._opened)
        finally:
            if run is not None:
                run.__exit__(None if exc is None else type(exc), exc, None)
                _logger.info("Monty run %s: %s (%s)", run.id, run.status, time.strftime("%H:%M:%S"))
            _forget(self)
