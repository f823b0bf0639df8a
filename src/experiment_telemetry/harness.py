"""``Experiment``: the lifecycle of a run, from run directory to ``goggles_io.finish()``.

The experiment is the coordinator: it creates the run (directory, ``run.kv``, recorded
config), subscribes recorders, aggregators and transforms, drives epochs and episodes, and
closes everything it opened on the way out, normal or not. An exception marks the run
``failed``, Ctrl-C ``interrupted``; both still close the logs and flush the sinks, so every
event and stat emitted before the failure stays on disk. With ``num_workers`` the episode
loop is run by a ``workers.WorkerLoop`` the experiment holds (episodes in worker processes,
scored here); it calls the experiment's hooks and the ``publish`` it was given, nothing else.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import attrs

import goggles_io
from experiment_telemetry._validate import check_int
from experiment_telemetry.aggregators import STATS_STREAM, Aggregator
from experiment_telemetry.aggregators.standard import make_aggregators, make_watches
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.recorder import (
    ALERTS_FILE,
    RUNTIME_EVENTS_FILE,
    STATS_FILE,
    EventRecorder,
)
from experiment_telemetry.stats import MetricAlert, StatEvent
from experiment_telemetry.transforms import (
    ConsoleTransform,
    CsvTransform,
    GogglesTransform,
    PlainTextHandler,
    Transform,
    WandbAlertTransform,
)
from experiment_telemetry.workers import RuntimeSpec, WorkerLoop, WorkerReport
from goggles_io.runs import RunContext, register_run
from runtime_telemetry import configure, get_telemetry

# make_aggregators and make_watches live in aggregators/standard.py; still importable from here.
__all__ = ["SCOPE", "Experiment", "RunResult", "make_aggregators", "make_watches"]

SCOPE = "experiment"
"""goggles_io scope of everything the transforms log."""
_logger = logging.getLogger(__name__)


def _draws_a_bar(stream: object) -> bool:
    """Whether a progress bar on ``stream`` is seen as one: a terminal, or a notebook's cell
    output. A pipe or a file would get every redraw, in the middle of the episode lines."""
    if "ipykernel" in sys.modules:
        return True
    isatty = getattr(stream, "isatty", None)
    try:
        return bool(isatty and isatty())
    except (OSError, ValueError):  # a closed or detached stream
        return False


@attrs.frozen
class RunResult:
    """What a finished (or failed) run left behind."""

    run_dir: Path
    status: str
    stats: list[StatEvent]
    """Every stat event the aggregators published, in order."""
    files: dict[str, Path]
    """Name -> path of the files written in the run directory."""
    workers: WorkerReport | None = None
    """With ``num_workers``: episodes and events lost, per worker (None in one process)."""


class Experiment:
    """Base class of an experiment: override ``episodes`` and ``run_episode``.

    Hooks: ``pre_episode(context)`` and ``post_epoch(epoch)`` are no-ops to override;
    ``post_episode(context)`` records the context and asks every aggregator to score the
    episode (call ``super()`` when overriding it). ``make_aggregators``,
    ``make_transforms`` and ``make_handlers`` choose what is attached.

    Args:
        root: directory holding runs.
        num_epochs: epochs to run.
        seed: recorded in ``run.kv`` and the config.
        config: settings recorded once with the run (plain scalars or lists of them).
        project, slug: run identity (``RunContext``).
        console: print episode lines and the summary table on stdout.
        wandb: also log to W&B (``WandBHandler``; needs the ``[wandb]`` extra).
        progress: show a tqdm progress bar on stderr, when stderr is a terminal (or a Jupyter
            kernel's): piped or redirected, as when stdout and stderr share one pipe, no bar is
            drawn into the episode lines.
        telemetry_levels: levels set with ``runtime_telemetry.configure`` for the run and
            restored afterwards (default: events at INFO); workers apply them too.
        num_workers: 0 (default) runs episodes here with ``run_episode``; N >= 1 runs them in
            N worker processes (``runtime_spec``, ``episode_kwargs`` and ``learns`` say how;
            needs the goggles_io socket transport). See ``docs/experiment_telemetry.md``.

    ``worker_wait_s`` (class attribute, 30 s) bounds, with workers, a worker's flush after each
    episode and the wait for that episode's events after it: an episode whose events did not
    arrive by then is reported ``EpisodeMissing``, not scored.

    Raises:
        ExperimentValueError: ``num_epochs`` is not an int >= 1, or ``num_workers`` not >= 0.
    """

    worker_wait_s: float = 30.0

    def __init__(
        self,
        *,
        root: str | Path = "runs",
        num_epochs: int = 1,
        seed: int | None = None,
        config: Mapping[str, Any] | None = None,
        project: str = "split-telemetry",
        slug: str = "experiment",
        console: bool = True,
        wandb: bool = False,
        progress: bool = True,
        telemetry_levels: Mapping[str, str | int] | None = None,
        num_workers: int = 0,
    ) -> None:
        check_int("num_epochs", num_epochs, 1)
        check_int("num_workers", num_workers, 0, hint="; 0 runs episodes in this process")
        self.num_workers = num_workers
        self.root = Path(root)
        self.num_epochs = num_epochs
        self.seed = seed
        self.config: dict[str, Any] = {"num_epochs": num_epochs, **dict(config or {})}
        if num_workers:
            self.config.setdefault("num_workers", num_workers)
        if seed is not None:
            self.config.setdefault("seed", seed)
        self.project = project
        self.slug = slug
        self.console = console
        self.wandb = wandb
        self.progress = progress
        self.telemetry_levels = dict(telemetry_levels or {"telemetry": "INFO"})
        self.run_context: RunContext | None = None
        self.aggregators: list[Aggregator] = []
        self.transforms: list[Transform] = []
        self.stats: list[StatEvent] = []
        self._recorder: EventRecorder | None = None
        self.worker_report: WorkerReport | None = None
        self.worker_loop: WorkerLoop | None = None
        """With ``num_workers``, what runs the episode loop (made when the run starts)."""

    # -- what to attach ------------------------------------------------------------------------
    def make_aggregators(self) -> list[Aggregator]:
        """The aggregators of this run; the default is ``make_aggregators(self.config)``."""
        return make_aggregators(self.config)

    def make_transforms(self, run: RunContext) -> list[Transform]:
        """CSV stats always; the console lines when ``console``; goggles metrics always; W&B
        alerts (rate-limited) when ``wandb``."""
        transforms: list[Transform] = [CsvTransform(run.dir), GogglesTransform(scope=SCOPE)]
        if self.console:
            transforms.append(ConsoleTransform(scope=SCOPE))
        if self.wandb:
            transforms.append(WandbAlertTransform(f"wandb:{run.id}", scope=SCOPE))
        return transforms

    def make_handlers(self, run: RunContext) -> list[Any]:
        """goggles_io handlers on ``SCOPE``: ``metrics.csv`` always, stdout and W&B on request."""
        handlers: list[Any] = [goggles_io.CsvHandler(run.dir, name=f"csv:{run.id}")]
        if self.console:
            handlers.append(PlainTextHandler(name=f"text:{run.id}"))
        if self.wandb:
            handlers.append(
                goggles_io.WandBHandler(
                    project=self.project,
                    run_name=run.name(),
                    dir=str(run.dir),
                    name=f"wandb:{run.id}",
                )
            )
        return handlers

    # -- what to run ---------------------------------------------------------------------------
    def episodes(self, epoch: int) -> Iterable[EpisodeContext]:
        """The episodes of ``epoch``, in order (each context's timestamp is reset at its start)."""
        raise NotImplementedError

    def run_episode(self, context: EpisodeContext) -> None:
        """Drive the runtime through one episode; it emits events, never sees ``context``'s target."""
        raise NotImplementedError

    def total_episodes(self) -> int | None:
        """Episodes in the whole run, for the progress bar (None: unknown)."""
        return None

    def runtime_spec(self) -> RuntimeSpec:
        """How each worker process builds the runtime (needed with ``num_workers``)."""
        msg = f"{type(self).__name__} sets num_workers but does not override runtime_spec()."
        raise NotImplementedError(msg)

    def episode_kwargs(self, context: EpisodeContext) -> Mapping[str, Any]:
        """Plain keyword arguments of the runtime's episode method for ``context`` (workers)."""
        msg = f"{type(self).__name__} sets num_workers but does not override episode_kwargs()."
        raise NotImplementedError(msg)

    def learns(self, context: EpisodeContext) -> bool:
        """Whether the episode changes the runtime's memory (default: training episodes).

        Learning episodes run one after another in one worker; the others run in parallel,
        each from the memory the learning episodes before them left.
        """
        return context.mode == "train"

    def pre_episode(self, context: EpisodeContext) -> None:
        """Called before ``run_episode``."""

    def post_episode(self, context: EpisodeContext) -> list[StatEvent]:
        """Record ``context`` in the event log, then have every aggregator score the episode."""
        if self._recorder is not None:
            self._recorder.record(context)
        stats: list[StatEvent] = []
        for aggregator in self.aggregators:
            stats.extend(aggregator.post_episode(context))
        return stats

    def post_epoch(self, epoch: int) -> None:
        """Called after the last episode of ``epoch``."""

    # -- the lifecycle -------------------------------------------------------------------------
    def run(self) -> RunResult:
        """Run every epoch; always close what was opened and call ``goggles_io.finish()``.

        Raises:
            Whatever an episode raised, after the run was closed and marked failed or
            interrupted.
        """
        run = RunContext(
            self.project,
            driver=f"{type(self).__module__}:{type(self).__qualname__}",
            slug=self.slug,
            seed=self.seed,
            root=self.root,
        )
        self.run_context = run
        files = {"runtime_events": run.dir / RUNTIME_EVENTS_FILE, "stats": run.dir / STATS_FILE}
        files["alerts"] = run.dir / ALERTS_FILE
        opened: list[Any] = []
        saved_levels = {name: logging.getLogger(name).level for name in self.telemetry_levels}
        try:
            with run:
                run.set_config(self.config)
                configure(self.telemetry_levels)
                try:
                    self._open(run, opened)
                    self._loop()
                finally:
                    self._close(opened)
        finally:
            for name, level in saved_levels.items():
                logging.getLogger(name).setLevel(level)
        for mode in ("train", "eval"):
            path = run.dir / f"{mode}_stats.csv"
            if path.exists():
                files[f"{mode}_stats"] = path
        for name in ("metrics.csv", "config.yaml", "run.kv"):
            if (run.dir / name).exists():
                files[name] = run.dir / name
        return RunResult(
            run_dir=run.dir,
            status=run.status,
            stats=self.stats,
            files=files,
            workers=self.worker_report,
        )

    def _open(self, run: RunContext, opened: list[Any]) -> None:
        self._recorder = EventRecorder(run.dir / RUNTIME_EVENTS_FILE).subscribe()
        opened.append(self._recorder)
        stats_recorder = EventRecorder(run.dir / STATS_FILE, only=(StatEvent,), skip=())
        opened.append(stats_recorder.subscribe(f"telemetry.{STATS_STREAM}"))
        alerts_recorder = EventRecorder(run.dir / ALERTS_FILE, only=(MetricAlert,), skip=())
        opened.append(alerts_recorder.subscribe(f"telemetry.{STATS_STREAM}"))
        handlers = self.make_handlers(run)
        for handler in handlers:
            goggles_io.attach(handler, scopes=[SCOPE])
        self._attached = [handler.name for handler in handlers]
        register_run(run, *handlers)
        self.transforms = [t.attach() for t in self.make_transforms(run)]
        opened[:0] = self.transforms  # closed before the recorders, after the aggregators
        self.aggregators = [a.subscribe() for a in self.make_aggregators()]
        for aggregator in self.aggregators:
            aggregator.add_listener(self.stats.append)
        opened[:0] = self.aggregators

    def _loop(self) -> None:
        from tqdm import tqdm

        bar = tqdm(
            total=self.total_episodes(),
            desc=self.slug,
            unit="ep",
            file=sys.stderr,
            disable=not (self.progress and _draws_a_bar(sys.stderr)),
            leave=False,
        )
        with bar:
            if self.num_workers:
                self.worker_loop = WorkerLoop(
                    self,
                    self.runtime_spec(),
                    num_workers=self.num_workers,
                    levels=self.telemetry_levels,
                    wait_s=self.worker_wait_s,
                    publish=self._publish,
                )
                self.worker_report = self.worker_loop.report
                self.worker_loop.run(self.num_epochs, bar)
                return
            for epoch in range(self.num_epochs):
                for context in self.episodes(epoch):
                    context = attrs.evolve(context, timestamp=time.time())
                    self.pre_episode(context)
                    self.run_episode(context)
                    self.post_episode(context)
                    bar.update(1)
                self.post_epoch(epoch)

    def _publish(self, stat: StatEvent) -> None:
        """A stat the harness makes itself: in the event log, the stats, on the stats stream."""
        if self._recorder is not None:
            self._recorder.record(stat)
        self.stats.append(stat)
        get_telemetry(STATS_STREAM).emit(stat)

    def _close(self, opened: list[Any]) -> None:
        """Close in order (aggregators, transforms, recorders), then finish goggles_io."""
        for item in opened:
            try:
                if isinstance(item, Aggregator):
                    item.post_run()
                item.close()
            except Exception:
                _logger.exception("closing %r failed; closing the rest", item)
        self._recorder = None
        # The run's sinks belong to this run: detached (each delivered, flushed, closed) so a
        # later run in this process does not re-open them and write into this run's files.
        attached, self._attached = getattr(self, "_attached", []), []
        for name in attached:
            try:
                goggles_io.detach(name, SCOPE)
            except Exception:
                _logger.exception("detaching %r failed; detaching the rest", name)
        try:
            goggles_io.finish()
        except Exception:
            _logger.exception("goggles_io.finish() failed")
