"""Watch configs: the logging guide's "What to watch" as configured checks on metric series.

Each watch is a frozen config (which metrics, by ``fnmatch`` pattern, and its thresholds);
``WatchAggregator`` turns it into per-series state that sees every point. Checks that need a
statistic work on *block medians* (the median of ``block`` consecutive points) and a noise
scale from the blocks' median absolute deviations: a block costs one small sort, every other
point costs an append, and one outlier never moves a median. A check fires once per failure:
it re-arms only after its evidence stayed clear for a whole window (``blocks`` checks in a row
for growth and divergence, two windows for a counter; a finite value, the metric back), so a
failure that lasts gives one alert, not one per block, even when one noisy window inside it
looks clear.

Default patterns follow the metrics-logging guide's naming rules: a loss ends in ``_loss``, an
evaluation starts with ``eval_``, a return is ``avg_reward`` (the drivers' progress signal) or
``*_return``. A ``<quantity>_<stat>`` name (``reward_mean``, ``action_abs_mean``) is a statistic
of a batch, not a return: a replay batch's ``reward_mean`` barely moves while a healthy SAC's
policy loss (``-Q``) falls, so returns-only patterns are what keeps divergence trustworthy.
"""

from __future__ import annotations

from fnmatch import fnmatchcase
from typing import ClassVar

import attrs

from experiment_telemetry._validate import check_int
from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from experiment_telemetry.stats import SEVERITIES

__all__ = [
    "LOSSES",
    "RETURNS",
    "Collapse",
    "CounterStall",
    "Divergence",
    "Growth",
    "NonFinite",
    "Silence",
    "Watch",
    "default_watches",
]


RETURNS = ("avg_reward", "*_return", "eval_*")
"""The guide's returns: the drivers' ``avg_reward``, ``*_return`` and evaluations (``eval_*``)."""
LOSSES = ("*_loss", "loss")
"""The guide's losses: ``*_loss`` (and DQN's bare ``loss``)."""


def _patterns(value: object) -> tuple[str, ...]:
    if isinstance(value, str) or not all(isinstance(p, str) for p in value):  # type: ignore[attr-defined]
        msg = f"metric patterns must be a tuple of fnmatch patterns, not a bare str (got {value!r}); pass ({value!r},)."
        raise ExperimentTypeError(msg, value)
    return tuple(value)  # type: ignore[arg-type]


def _positive(instance: object, attribute: attrs.Attribute, value: object) -> None:  # type: ignore[type-arg]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        msg = f"{type(instance).__name__}.{attribute.name} must be a number > 0 (got {value!r})."
        raise ExperimentValueError(msg, value)


def _block_size(instance: object, attribute: attrs.Attribute, value: object) -> None:  # type: ignore[type-arg]
    check_int(f"{type(instance).__name__}.{attribute.name}", value, 2)


def _count(instance: object, attribute: attrs.Attribute, value: object) -> None:  # type: ignore[type-arg]
    check_int(f"{type(instance).__name__}.{attribute.name}", value, 1)


def _fraction(instance: object, attribute: attrs.Attribute, value: object) -> None:  # type: ignore[type-arg]
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value < 1:
        msg = f"{type(instance).__name__}.{attribute.name} must be in (0, 1) (got {value!r})."
        raise ExperimentValueError(msg, value)


def _severity(instance: object, attribute: attrs.Attribute, value: object) -> None:  # type: ignore[type-arg]
    if value not in SEVERITIES:
        msg = f"{type(instance).__name__}.severity must be one of {SEVERITIES!r} (got {value!r})."
        raise ExperimentValueError(msg, value)


@attrs.frozen(kw_only=True)
class Watch:
    """Base of the watch configs: which metrics (fnmatch patterns) and how bad an alert is.

    A metric is watched by the first watch of each check whose ``metrics`` match its name and
    whose ``exclude`` does not: list specific watches before the defaults.
    """

    check: ClassVar[str] = ""
    metrics: tuple[str, ...] = attrs.field(default=("*",), converter=_patterns)
    exclude: tuple[str, ...] = attrs.field(default=(), converter=_patterns)
    severity: str = attrs.field(default="warning", validator=_severity)

    def matches(self, name: str) -> bool:
        """Whether this watch applies to the metric ``name``."""
        return any(fnmatchcase(name, p) for p in self.metrics) and not any(
            fnmatchcase(name, p) for p in self.exclude
        )


@attrs.frozen(kw_only=True)
class NonFinite(Watch):
    """NaN or ±inf in a metric: fires on the first such point, again only after a finite one."""

    check: ClassVar[str] = "non_finite"
    severity: str = attrs.field(default="error", validator=_severity)


@attrs.frozen(kw_only=True)
class Growth(Watch):
    """Value explosion: the magnitude climbs geometrically, without levelling off.

    Fires when each of ``blocks`` consecutive block medians of ``|value|`` grew by at least
    ``min_ratio`` over the one before, the later half of those ratios stays at 3/4 or more of the
    earlier half's largest (the growth keeps its pace), the first block's median is over three
    times its MAD (the window starts clear of noise: ``|x|`` of a ramp leaving a noise floor
    looks geometric for a few blocks), and the whole rise exceeds ``z`` noise sigmas. A healthy
    rise slows down (ratios shrink toward 1; a linear ramp's are (k+1)/k); only sustained
    geometric growth keeps them up. Defaults: 6 blocks of 16 points (a window of 96), ratio 1.5;
    a series growing 2x per 16 points from a plateau fires within 96 points of the onset (5
    blocks let a healthy ``mean_q`` climbing a 6x stair of its return from near zero through:
    ``benchmarks/watchers.py``). Growth
    faster than about 4x per block out of a noise floor around zero is missed (no block is clear
    of its own spread); ``NonFinite`` catches it when it overflows.
    """

    check: ClassVar[str] = "value_explosion"
    metrics: tuple[str, ...] = attrs.field(
        default=("mean_q", "q_*", "*_q", "*_q_*"), converter=_patterns
    )
    severity: str = attrs.field(default="error", validator=_severity)
    block: int = attrs.field(default=16, validator=_block_size)
    blocks: int = attrs.field(default=6, validator=_block_size)
    min_ratio: float = attrs.field(default=1.5, validator=_positive)
    z: float = attrs.field(default=3.0, validator=_positive)


@attrs.frozen(kw_only=True)
class Collapse(Watch):
    """Collapse after progress: a higher-is-better metric loses a ``fraction`` of its gain.

    Progress is the best block median minus the first one; it must exceed ``z`` sigmas of a block
    median (noise alone never counts as progress), and so must the drop from the best. The sigma
    comes from the latest 32 blocks' median absolute deviations (8 were too few: their median
    once came out at half the true spread, and one lucky block made a healthy plateau collapse).
    Default metrics are the guide's returns (``RETURNS``). Defaults:
    blocks of 8, fraction 0.5, z 10; a drop past the threshold fires within 16 points of the onset
    (the block it completes in, plus one when the onset splits a block). ``higher_is_better=False``
    watches a metric that should go down.
    """

    check: ClassVar[str] = "collapse"
    metrics: tuple[str, ...] = attrs.field(default=RETURNS, converter=_patterns)
    exclude: tuple[str, ...] = attrs.field(default=LOSSES, converter=_patterns)
    block: int = attrs.field(default=8, validator=_block_size)
    fraction: float = attrs.field(default=0.5, validator=_fraction)
    z: float = attrs.field(default=10.0, validator=_positive)
    min_blocks: int = attrs.field(default=4, validator=_block_size)
    higher_is_better: bool = True


@attrs.frozen(kw_only=True)
class Divergence(Watch):
    """Loss descending while the return stays flat: the model learns something, not the task.

    The pairing: ``metrics`` are the returns (by default the guide's ``RETURNS``: ``avg_reward``,
    ``*_return``, ``eval_*``; never a ``<quantity>_<stat>`` batch statistic such as
    ``reward_mean``), ``losses`` the losses each is compared with; the alert names both. A return
    meets the losses sharing the longest name prefix with it (each trainer's own when several log
    under prefixes in one run; every loss otherwise). When a
    return completes a window of ``blocks`` blocks, every such loss (any source) whose block median fell
    by more than ``loss_drop`` of its value at the window's start (and by more than ``z`` sigmas)
    is checked against the return's rise: flat is a rise below ``z`` sigmas of a block median over
    the window *and* no progress: a best held for two blocks in a row never more than 1.5 such
    gates above the first block, in this return or in any other return the watch sees (a noisy
    ``eval_return`` is not flat next to an ``avg_reward`` that climbed; another trainer's return
    does not count). So a return resting at
    its ceiling after progress is not flagged (nor one that stalls after progress: that needs a
    known ceiling). Order is the aggregator's arrival order, so sources with different step
    counters line up. Defaults: 8 blocks of 8 points, loss_drop 0.3, z 2.5: fires within 72
    points of the return after the onset (median 43 in ``benchmarks/watchers.py``).
    """

    check: ClassVar[str] = "divergence"
    metrics: tuple[str, ...] = attrs.field(default=RETURNS, converter=_patterns)
    exclude: tuple[str, ...] = attrs.field(default=LOSSES, converter=_patterns)
    losses: tuple[str, ...] = attrs.field(default=LOSSES, converter=_patterns)
    block: int = attrs.field(default=8, validator=_block_size)
    blocks: int = attrs.field(default=8, validator=_block_size)
    loss_drop: float = attrs.field(default=0.3, validator=_fraction)
    z: float = attrs.field(default=2.5, validator=_positive)

    def is_loss(self, name: str) -> bool:
        """Whether ``name`` is one of the losses this watch compares with."""
        return any(fnmatchcase(name, p) for p in self.losses)


@attrs.frozen(kw_only=True)
class CounterStall(Watch):
    """A counter not advancing as expected (``train_steps`` vs environment steps).

    Every ``window`` points the counter's advance is divided by the reference's (``reference``, a
    metric of the same bundle, or the bundle's own step when None). Below ``(1 - tolerance)`` of
    ``expected_ratio`` it fires; without an expected ratio the first window's ratio is the
    baseline, so a counter that stops (or slows to half) is found, and a mis-set ratio from the
    start is found only when ``expected_ratio`` says what was intended (e.g. updates_per_step).
    Defaults: ``train_steps`` against the bundle step, window 32, tolerance 0.5: fires within 64
    points of the onset; again only after a window back at the expected rate.
    """

    check: ClassVar[str] = "counter_stall"
    metrics: tuple[str, ...] = attrs.field(default=("train_steps",), converter=_patterns)
    reference: str | None = None
    expected_ratio: float | None = attrs.field(
        default=None, validator=attrs.validators.optional(_positive)
    )
    window: int = attrs.field(default=32, validator=_block_size)
    tolerance: float = attrs.field(default=0.5, validator=_fraction)


@attrs.frozen(kw_only=True)
class Silence(Watch):
    """A metric that stopped arriving while its source keeps logging.

    Every ``check_every`` bundles of a source, each of its metrics with at least ``min_points``
    points is silent when the source's step is past its last point by more than ``factor`` times
    its mean gap (and at least ``min_gap`` steps). Fires once, again after the metric came back.
    Defaults: factor 8, min_points 4, min_gap 1, check_every 16: a metric logged every step is
    reported within 8 + 16 bundles of its last point. A source that stops altogether is not seen
    here (that needs a clock, not events).
    """

    check: ClassVar[str] = "silence"
    factor: float = attrs.field(default=8.0, validator=_positive)
    min_points: int = attrs.field(default=4, validator=_block_size)
    min_gap: int = attrs.field(default=1, validator=_positive)
    check_every: int = attrs.field(default=16, validator=_count)


def default_watches() -> list[Watch]:
    """One watch of each check, with the documented defaults and naming-convention patterns."""
    return [NonFinite(), Growth(), Collapse(), Divergence(), CounterStall(), Silence()]
