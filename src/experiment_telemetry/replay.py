"""Replay: recompute a run's stats from its recorded event log, and compare with the live ones.

The event log holds every runtime event the aggregators saw and, at each episode's end, the
``EpisodeContext`` the harness scored it with, in the order they happened. Feeding the same
lines to fresh aggregators must give the same stat events, timestamps included: that equality
is the proof that the events alone carry enough to score an experiment.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import experiment_telemetry.monty.events  # noqa: F401  (registers Monty's records; no Monty needed)
import runtime_telemetry.events.metrics  # noqa: F401  (registers MetricsBundle for decoding)
from experiment_telemetry.aggregators import Aggregator
from experiment_telemetry.aggregators.standard import make_aggregators
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.exceptions import ReplayError
from experiment_telemetry.recorder import RUNTIME_EVENTS_FILE, STATS_FILE
from experiment_telemetry.stats import EpisodeMissing, StatEvent, WorkerLost
from runtime_telemetry import TelemetrySchema, from_json
from runtime_telemetry.exceptions import SchemaDecodeError, UnknownKindError

__all__ = ["read_config", "read_log", "read_stats", "replay", "replay_run"]


def _file(run_dir: str | os.PathLike[str], name: str) -> Path:
    base = Path(run_dir)
    path = base / name if base.is_dir() else base
    if not path.is_file():
        msg = f"{str(path)!r} does not exist; pass a run directory written by the harness."
        raise ReplayError(msg, str(path))
    return path


def read_log(
    path: str | os.PathLike[str], *, tolerant: bool = False, skipped: list[int] | None = None
) -> Iterator[TelemetrySchema]:
    """Yield the schemas of a JSON-lines log (a run directory means its runtime event log).

    Args:
        path: the log, or a run directory.
        tolerant: skip a torn last line (no final newline and not decodable: what a killed
            writer leaves) instead of refusing the whole log.
        skipped: when given, the 1-based numbers of skipped lines are appended to it.

    Raises:
        ReplayError: the file is missing or unreadable, or a line is not valid UTF-8 or does
            not decode (the message names the file and line).
    """
    file = _file(path, RUNTIME_EVENTS_FILE)
    try:
        handle = open(file, "rb")
    except OSError as exc:
        raise ReplayError(
            f"{str(file)!r}: cannot be read ({exc.strerror or exc})", str(file)
        ) from None
    with handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.strip():
                continue
            try:
                schema = from_json(raw.decode("utf-8"))
            except UnicodeDecodeError as exc:
                problem = f"not valid UTF-8 ({exc.reason} at byte {exc.start})"
            except (SchemaDecodeError, UnknownKindError, ValueError) as exc:
                problem = str(exc)
            else:
                yield schema
                continue
            if tolerant and not raw.endswith(b"\n"):  # a torn last line: count and stop
                if skipped is not None:
                    skipped.append(number)
                return
            msg = f"{str(file)!r}: line {number}: {problem}"
            if not raw.endswith(b"\n"):  # the last line, cut short: a killed writer's
                msg += (
                    "; it is the last line and has no newline (a run killed mid-write?): "
                    "pass --tolerant (tolerant=True) to skip it"
                )
            raise ReplayError(msg, str(file))


def read_stats(
    run_dir: str | os.PathLike[str], *, tolerant: bool = False, skipped: list[int] | None = None
) -> list[StatEvent]:
    """The stat events recorded live in ``run_dir``, in order (``tolerant``: see :func:`read_log`)."""
    file = _file(run_dir, STATS_FILE)
    stats = list(read_log(file, tolerant=tolerant, skipped=skipped))
    bad = [s for s in stats if not isinstance(s, StatEvent)]
    if bad:
        msg = f"{str(file)!r} holds a non-stat schema {bad[0]!r}."
        raise ReplayError(msg, str(file))
    return stats  # type: ignore[return-value]


def read_config(run_dir: str | os.PathLike[str]) -> dict[str, Any]:
    """The config recorded with the run (``config.yaml``; empty when there is none)."""
    path = Path(run_dir) / "config.yaml"
    if not path.is_file():
        return {}
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:  # a multi-line report with a caret: one line is enough
        raise ValueError("not valid YAML: " + " ".join(str(exc).split())) from None
    return dict(data) if isinstance(data, Mapping) else {}


def replay(
    schemas: Iterator[TelemetrySchema] | Sequence[TelemetrySchema],
    aggregators: Sequence[Aggregator],
) -> list[StatEvent]:
    """Feed ``schemas`` to ``aggregators`` as the harness did; return every stat, in order.

    Each ``EpisodeContext`` ends an episode (``post_episode``); a ``WorkerLost`` (an episode
    whose worker process died) or an ``EpisodeMissing`` (one whose events never arrived) is a
    stat of its own, passed through; every other schema is
    delivered as an event. The run's end (``post_run``) closes what is still open.
    """
    stats: list[StatEvent] = []
    for aggregator in aggregators:
        aggregator.add_listener(stats.append)
    for schema in schemas:
        if isinstance(schema, EpisodeContext):
            for aggregator in aggregators:
                aggregator.post_episode(schema)
        elif isinstance(schema, (WorkerLost, EpisodeMissing)):
            stats.append(schema)
        elif not isinstance(schema, StatEvent):
            for aggregator in aggregators:
                aggregator.feed(schema)
    for aggregator in aggregators:
        aggregator.post_run()
    return stats


def replay_run(
    run_dir: str | os.PathLike[str],
    aggregators: Sequence[Aggregator] | None = None,
    *,
    tolerant: bool = False,
    skipped: list[int] | None = None,
) -> list[StatEvent]:
    """Replay ``run_dir``'s event log through ``aggregators`` (default: the standard ones,
    configured from the run's recorded config). ``tolerant``/``skipped``: see :func:`read_log`.

    Raises:
        ReplayError: the run directory has no event log, or the log (or config) is damaged.
    """
    log = _file(run_dir, RUNTIME_EVENTS_FILE)
    if aggregators is None:
        try:
            config = read_config(run_dir)
        except (OSError, ValueError) as exc:  # yaml errors are ValueErrors; bad UTF-8 too
            msg = f"{str(Path(run_dir) / 'config.yaml')!r}: {exc}"
            raise ReplayError(msg, str(run_dir)) from None
        aggregators = make_aggregators(config)
    return replay(read_log(log, tolerant=tolerant, skipped=skipped), aggregators)
