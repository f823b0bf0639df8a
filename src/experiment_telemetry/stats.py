"""Stat events: what aggregators emit after scoring an episode, and transforms turn into output.

They are registered runtime_telemetry schemas, so they travel on the experiment's own stream
(``telemetry.experiment_telemetry.stats``), serialise with ``to_dict``/``to_json`` and replay.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import attrs

from runtime_telemetry import TelemetryEvent

__all__ = [
    "ALERT_CHECKS",
    "SEVERITIES",
    "VERDICTS",
    "EpisodeStats",
    "LearningModuleEpisodeStats",
    "MetricAlert",
    "MetricWindowStats",
    "OverallStats",
    "StatEvent",
    "WorkerLost",
]

VERDICTS = (
    "patch_off_object",
    "no_label",
    "pose_time_out",
    "time_out",
    "consistent_child_obj",
    "confused_mlh",
    "correct_mlh",
    "no_match",
    "confused",
    "correct",
)
"""Every verdict, weakest first: an episode's verdict is its strongest module verdict."""

Vector3 = tuple[float, float, float]
Quaternion = tuple[float, float, float, float]


def _canonical(values: dict[str, float]) -> dict[str, float]:
    """One canonical NaN (a mean over a NaN is a fresh NaN object), so replay compares equal."""
    return {k: math.nan if v != v else v for k, v in values.items()}


@attrs.frozen(kw_only=True)
class StatEvent(TelemetryEvent, abstract=True):
    """Base of every stat event; ``timestamp`` is the time of the data it summarises."""


@attrs.frozen(kw_only=True)
class LearningModuleEpisodeStats(StatEvent):
    """One learning module's result in one episode."""

    mode: str
    epoch: int
    episode: int
    target: str
    lm_id: str
    primary_performance: str
    """One of ``VERDICTS``."""
    rotation_error: float | None = None
    """Degrees, for ``correct``/``correct_mlh`` only: the smallest geodesic angle to the target."""
    num_steps: int = 0
    """Matching steps: the module's steps with its input on the object."""
    terminal_step: int | None = None
    """The module's step at its first terminal state (recognised, no match, timed out)."""
    first_terminal_performance: str | None = None
    """The verdict the first terminal state alone would have earned."""
    symmetry_evidence: int | None = None
    detected_object: str | None = None
    """Graph id the module recognised."""
    detected_labels: tuple[str, ...] = ()
    """Labels known for ``detected_object`` when the episode was scored."""
    detected_location: Vector3 | None = None
    detected_rotation: Quaternion | None = None
    most_likely_object: str | None = None
    """Graph id of the module's last most-likely hypothesis, if it emitted one."""
    possible_matches: tuple[str, ...] = ()
    """Graph ids still possible at the end."""


@attrs.frozen(kw_only=True)
class EpisodeStats(StatEvent):
    """One episode: its verdict (the strongest module verdict) and its step counts."""

    mode: str
    epoch: int
    episode: int
    target: str
    performance: str
    num_learning_modules: int
    num_steps: int
    """The most matching steps any module took."""
    terminal_step: int | None
    """The earliest step at which a module reached a terminal state."""
    run_time_s: float
    """From the episode's start to its last runtime event, in seconds."""


@attrs.frozen(kw_only=True)
class OverallStats(StatEvent):
    """Running totals of one mode, updated after every episode of that mode (percent 0..100)."""

    mode: str
    epoch: int
    episode: int
    """The episode after which these totals hold."""
    num_episodes: int
    percent_correct: float
    percent_confused: float
    percent_no_match: float
    percent_time_out: float
    percent_pose_time_out: float
    percent_correct_mlh: float
    percent_used_mlh_after_timeout: float
    avg_rotation_error: float | None
    avg_num_lm_steps: float
    avg_episode_run_time: float


@attrs.frozen(kw_only=True)
class MetricWindowStats(StatEvent):
    """Metric bundles of one source reduced over one window of one cadence."""

    source: str
    cadence: str
    """``"progress"`` or ``"diagnostic"``."""
    step: int
    """The source's step that closed the window."""
    count: int
    """Bundles in the window."""
    mean: dict[str, float] = attrs.field(hash=False, converter=_canonical)
    last: dict[str, float] = attrs.field(hash=False, converter=_canonical)


ALERT_CHECKS = (
    "non_finite",
    "value_explosion",
    "collapse",
    "divergence",
    "counter_stall",
    "silence",
)
"""Every check a ``MetricAlert`` can report (``experiment_telemetry.aggregators.watch``)."""
SEVERITIES = ("warning", "error")
"""Alert severities, mildest first."""


def _number(value: float | None) -> float | None:
    """One canonical NaN, so an alert equals its replayed copy."""
    if value is None:
        return None
    number = float(value)
    return math.nan if math.isnan(number) else number


def _eq_key(value: float | None) -> object:
    """Compare NaN equal to NaN (attrs compares field by field, and NaN != NaN)."""
    return "nan" if value is not None and math.isnan(value) else value


def _numbers(values: Iterable[float]) -> tuple[float, ...]:
    return tuple(math.nan if math.isnan(v) else float(v) for v in values)


@attrs.frozen(kw_only=True)
class MetricAlert(StatEvent):
    """A watcher saw a known training failure in a metric series (the logging guide's list).

    ``timestamp`` is the bundle that completed the evidence, so replay reproduces the alert.
    """

    check: str
    """One of ``ALERT_CHECKS`` (the issue's alert kind; ``kind`` is the schema's own name)."""
    severity: str
    """One of ``SEVERITIES``."""
    source: str
    """The bundle source (the scope) the metric came from."""
    metric: str
    step: int
    """The source's step at which the evidence was complete."""
    observed: float | None = attrs.field(default=None, converter=_number, eq=_eq_key)
    """The statistic that crossed the threshold (e.g. the drop, the growth ratio)."""
    threshold: float | None = attrs.field(default=None, converter=_number, eq=_eq_key)
    window: tuple[float, ...] = attrs.field(
        default=(), converter=_numbers, eq=lambda w: tuple(map(_eq_key, w))
    )
    """The evidence: the values (or block medians) the check looked at, oldest first."""
    related: str | None = None
    """The other metric of a two-metric check (the loss of ``divergence``, the reference of
    ``counter_stall``)."""
    message: str = ""
    """One readable sentence for consoles and W&B."""


@attrs.frozen(kw_only=True)
class WorkerLost(StatEvent):
    """An episode run in a worker process that ended (killed, crashed) before finishing it.

    The episode is not scored (its partial events are discarded: a verdict from half an
    episode would be wrong); the run goes on with the other workers. Recorded in both the
    stats and the event log, so replay reproduces it.
    """

    mode: str
    epoch: int
    episode: int
    target: str
    worker: int
    """The worker's index in the pool."""
    pid: int
    returncode: int | None = None
    """The worker's exit status; negative: killed by that signal (-9: SIGKILL)."""
    outcome: str = "worker_lost"
