"""Stat events: what aggregators emit after scoring an episode, and transforms turn into output.

They are registered runtime_telemetry schemas, so they travel on the experiment's own stream
(``telemetry.experiment_telemetry.stats``), serialise with ``to_dict``/``to_json`` and replay.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import attrs

from runtime_telemetry import TelemetryEvent

__all__ = [
    "ALERT_CHECKS",
    "SEVERITIES",
    "VERDICTS",
    "EpisodeMissing",
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
"""Every verdict, weakest first (Monty's ``performance_options``): an episode's verdict is its
strongest module verdict. A module or an episode may also have none (``None``)."""

Vector3 = tuple[float, float, float]
Quaternion = tuple[float, float, float, float]


def _result(value: Any) -> str | tuple[str, ...] | None:
    """Monty's ``result``: a graph id, None, or (after a time-out) the list of possible matches."""
    if value is None or isinstance(value, str):
        return value
    return tuple(str(v) for v in value)


def _canonical(values: dict[str, float]) -> dict[str, float]:
    """One canonical NaN (a mean over a NaN is a fresh NaN object), so replay compares equal."""
    return {k: math.nan if v != v else v for k, v in values.items()}


def _number(value: float | None) -> float | None:
    """One canonical NaN, so an alert equals its replayed copy."""
    if value is None:
        return None
    number = float(value)
    return math.nan if math.isnan(number) else number


def _eq_key(value: float | None) -> object:
    """Compare NaN equal to NaN (attrs compares field by field, and NaN != NaN)."""
    return "nan" if value is not None and math.isnan(value) else value


@attrs.frozen(kw_only=True)
class StatEvent(TelemetryEvent, abstract=True):
    """Base of every stat event; ``timestamp`` is the time of the data it summarises."""


@attrs.frozen(kw_only=True)
class LearningModuleEpisodeStats(StatEvent):
    """One learning module's result in one episode: Monty's per-LM statistics, by Monty's names.

    After our own ``mode``, ``epoch``, ``episode``, ``lm_id`` and ``evidence_based``, the fields
    follow Monty's ``get_stats_per_lm``; each is documented in ``docs/experiment_telemetry.md``
    (what Monty computes, from which events, and where we depart). NaN marks a mean over
    nothing, None a value that does not apply. Version 2: ADR 0026.
    """

    version = 2
    mode: str
    epoch: int
    episode: int
    lm_id: str
    evidence_based: bool = False
    """Whether the module keeps evidence (Monty's evidence LMs): it has the most-likely
    fields and ``_mlh`` verdicts; other modules have the possible-pose fields."""
    primary_performance: str | None = None
    """One of ``VERDICTS``, or None: the module reached no conclusion (no verdict)."""
    stepwise_performance: str | None = None
    """The same rules against ``stepwise_target_object``."""
    num_steps: int = 0
    """Inputs the module processed (matching and exploring); 0 when not on the object."""
    result: Any = attrs.field(default=None, converter=_result)
    """The recognised graph, the new graph of a no-match, or (timed out) the possible matches."""
    rotation_error: float | None = None
    """Degrees, for ``correct``/``correct_mlh`` only: the smallest geodesic angle to the target."""
    num_possible_matches: int = 0
    detected_location: Vector3 | None = None
    detected_rotation: Vector3 | None = None
    """Euler angles (extrinsic x-y-z, degrees, 3 places, mod 360) of the detected rotation."""
    detected_scale: float | None = None
    location_rel_body: Vector3 = (0.0, 0.0, 0.0)
    detected_path: tuple[Vector3, ...] | None = None
    symmetry_evidence: int = 0
    individual_ts_reached_at_step: int | None = None
    """Inputs processed at the module's first conclusion (recognition or no-match)."""
    individual_ts_performance: str = "patch_off_object"
    """The verdict of that first conclusion alone: correct, confused, no_match or time_out."""
    individual_ts_rotation_error: float | None = None
    time: float = 0.0
    """Seconds from the module's reset to its last matching input (wall clock)."""
    mean_objects_per_graph: float = attrs.field(default=math.nan, converter=_number, eq=_eq_key)
    mean_graphs_per_object: float = attrs.field(default=math.nan, converter=_number, eq=_eq_key)
    TFNP: str = "unknown_object_not_matched_(TN)"
    possible_match_sources: str = ""
    most_likely_object: str | None = None
    most_likely_location: Vector3 | None = None
    most_likely_rotation: Vector3 | None = None
    highest_evidence: float | None = None
    episode_avg_prediction_error: float | None = attrs.field(
        default=None, converter=_number, eq=_eq_key
    )
    possible_object_poses: tuple[Vector3, ...] | None = None
    possible_object_locations: tuple[Vector3, ...] | None = None
    goal_states_attempted: int = 0
    goal_state_achieved: int = 0
    monty_steps: int = 0
    monty_matching_steps: int = 0
    episode_seed: int | None = None
    primary_target_object: str = ""
    primary_target_position: Vector3 = (0.0, 0.0, 0.0)
    primary_target_rotation_euler: Vector3 = (0.0, 0.0, 0.0)
    primary_target_rotation_quat: Quaternion = (1.0, 0.0, 0.0, 0.0)
    """``(w, x, y, z)``, this project's order."""
    primary_target_scale: float = 1.0
    stepwise_target_object: str | None = None
    detected_labels: tuple[str, ...] = ()
    """Ours: labels known for the last recognised graph when the episode was scored."""
    possible_matches: tuple[str, ...] = ()
    """Ours: graph ids still possible at the end (0 when not on the object, like Monty)."""


@attrs.frozen(kw_only=True)
class EpisodeStats(StatEvent):
    """One episode: Monty's ``episode/*`` values, over this episode's module stats.

    The flags are 0/1 and describe this episode only (an episode without a verdict has all
    flags 0). Version 2: ADR 0026.
    """

    version = 2
    mode: str
    epoch: int
    episode: int
    target: str
    performance: str | None
    """The strongest module verdict, or None when no module has one."""
    num_learning_modules: int
    correct: int = 0
    """1 for ``correct`` or ``correct_mlh`` (Monty's ``episode/correct``)."""
    no_match: int = 0
    confused: int = 0
    """1 for ``confused`` or ``confused_mlh``."""
    correct_mlh: int = 0
    confused_mlh: int = 0
    pose_time_out: int = 0
    time_out: int = 0
    consistent_child_obj: int = 0
    consistent_child_or_parent: int = 0
    used_mlh_after_time_out: int = 0
    rotation_error: float = -1.0
    """Mean of the modules' rotation errors; -1 when none has one."""
    lm_steps: int = 0
    """The most inputs any module processed."""
    monty_steps: int = 0
    monty_matching_steps: int = 0
    mean_lm_steps_to_indv_ts: float = attrs.field(default=math.nan, converter=_number, eq=_eq_key)
    run_time: float = 0.0
    """The longest module ``time`` (wall clock)."""
    symmetry_evidence: float = attrs.field(default=math.nan, converter=_number, eq=_eq_key)
    goal_states_attempted: int = 0
    goal_state_success_rate: float = 0.0
    avg_prediction_error: float = attrs.field(default=math.nan, converter=_number, eq=_eq_key)


@attrs.frozen(kw_only=True)
class OverallStats(StatEvent):
    """Running totals of one mode after every episode of that mode: Monty's ``overall/*``.

    Percentages are 0..100 of ``num_episodes`` (``_per_lm``: of the module-episodes), so
    episodes and modules without a verdict count in the denominators, as in Monty.
    Version 2: ADR 0026.
    """

    version = 2
    mode: str
    epoch: int
    episode: int
    """The episode after which these totals hold."""
    num_episodes: int
    percent_correct: float
    """``correct`` + ``correct_mlh`` episodes."""
    percent_no_match: float
    percent_confused: float
    """``confused`` + ``confused_mlh`` episodes."""
    percent_correct_mlh: float
    percent_confused_mlh: float
    percent_pose_time_out: float
    percent_time_out: float
    percent_used_mlh_after_timeout: float
    percent_consistent_child_obj: float
    percent_correct_child_or_parent: float
    """Module-episodes ``consistent_child_obj``, ``correct`` or ``correct_mlh``."""
    avg_rotation_error: float = attrs.field(converter=_number, eq=_eq_key)
    avg_num_lm_steps: float = attrs.field(converter=_number, eq=_eq_key)
    avg_num_monty_steps: float = attrs.field(converter=_number, eq=_eq_key)
    avg_num_monty_matching_steps: float = attrs.field(converter=_number, eq=_eq_key)
    avg_prediction_error: float = attrs.field(converter=_number, eq=_eq_key)
    run_time: float
    """Sum of the modules' ``time`` over the mode's episodes, per module (wall clock)."""
    avg_episode_run_time: float = attrs.field(converter=_number, eq=_eq_key)
    """Mean module ``time`` over module-episodes (wall clock)."""
    percent_correct_per_lm: float
    percent_confused_per_lm: float
    percent_patch_off_object_per_lm: float
    percent_no_label_per_lm: float
    percent_pose_time_out_per_lm: float
    percent_time_out_per_lm: float
    percent_consistent_child_obj_per_lm: float
    percent_no_match_per_lm: float
    num_lm_episodes: int = 0
    """Ours: module-episodes so far (the ``_per_lm`` denominator)."""
    episode_verdicts: dict[str, int] = attrs.field(factory=dict, hash=False)
    """Ours: episodes per episode verdict (``"none"``: no verdict)."""
    lm_verdicts: dict[str, int] = attrs.field(factory=dict, hash=False)
    """Ours: module-episodes per module verdict (``"none"``: no verdict)."""


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


@attrs.frozen(kw_only=True)
class EpisodeMissing(StatEvent):
    """An episode a worker finished whose events did not reach the experiment in time.

    Its end marker did not arrive within the pool's wait (``flush_timeout_s`` after the
    worker said it was done): over a broker, Redis was down or away; locally, none of its
    events arrived. The episode is not scored (a verdict from no or half the events would be
    wrong, e.g. ``patch_off_object``); what arrived later is ignored; the run goes on.
    Recorded like :class:`WorkerLost`, so replay reproduces it.
    """

    mode: str
    epoch: int
    episode: int
    target: str
    worker: int
    """The worker's index in the pool."""
    pid: int
    sent: int
    """Events the worker sent for the episode."""
    arrived: int
    """Of those, events that had arrived when the wait ended."""
    outcome: str = "events_missing"
