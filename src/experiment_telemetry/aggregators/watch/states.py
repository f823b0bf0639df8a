"""Per-series state of the watches: what each check keeps between points, and when it fires.

Over 400 lines, one piece: the watches' states share one update-and-fire protocol and are
compared side by side; apart, each would lose the others it is read against.

One state object per (source, metric, check). ``update`` runs for every finite point, so it
appends and returns until a block is complete; the statistics run once per block (their
building blocks, shared by every check, are in ``blocks.py``).
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Mapping
from typing import Protocol

from experiment_telemetry.aggregators.watch.blocks import (
    MAD_TO_SIGMA,
    BlockState,
    OncePerFailure,
    median_and_mad,
    median_of,
    median_sd,
)
from experiment_telemetry.aggregators.watch.configs import (
    Collapse,
    CounterStall,
    Divergence,
    Growth,
)

__all__ = ["Finding", "Pairing", "SeriesState", "make_states", "median_and_mad", "median_of"]

_CLEAR = 3.0  # first block median over its MAD: the window starts clear of its noise
_KEEPS_PACE = 0.75  # later growth ratios at least this share of the earlier ones
_PROGRESSED = 1.5  # best - first above this many flat gates: the return has made progress
_LOSS_HISTORY = 256  # block medians kept per loss series (an even number)
_COUNTER_CLEAR_WINDOWS = 2  # windows back at the expected rate before a stall counts as over
_NOISE_MADS = 32  # block MADs behind a return's noise scale: the median of 8 is too jumpy

Finding = tuple[str, "float | None", "float | None", tuple[float, ...], "str | None"]
"""What a check found: (message, observed, threshold, window, related metric)."""


class SeriesState(Protocol):
    """What ``WatchAggregator`` calls for each finite point of a watched series."""

    check: str
    severity: str

    def update(
        self, seq: int, step: int, value: float, values: Mapping[str, float]
    ) -> Finding | None: ...


class _GrowthState(BlockState):
    __slots__ = ("medians", "once")
    watch: Growth

    def __init__(self, watch: Growth) -> None:
        super().__init__(watch, watch.blocks)
        self.once = OncePerFailure(watch.blocks)
        self.medians: deque[float] = deque(maxlen=watch.blocks)

    def update(
        self, seq: int, step: int, value: float, values: Mapping[str, float]
    ) -> Finding | None:
        buf = self.buf
        buf.append(abs(value))
        if len(buf) < self.block:
            return None
        w = self.watch
        medians = self.medians
        medians.append(self._close(buf))
        if len(medians) < w.blocks:
            return None
        ratios = [
            b / a if a > 0 else (math.inf if b > 0 else 1.0)
            for a, b in zip(medians, list(medians)[1:], strict=False)
        ]
        weakest = min(ratios)
        half = len(ratios) // 2
        # Geometric growth keeps its pace; a ramp out of a noise floor slows down.
        slowing = min(ratios[half:]) < _KEEPS_PACE * max(ratios[:half])
        rise = medians[-1] - medians[0]
        noise = MAD_TO_SIGMA * median_of(self.mads)
        # The window must start clear of its own noise: |x| of a ramp leaving a noise floor
        # looks geometric for a few blocks; a plateau that starts to explode does not.
        unclear = medians[0] <= _CLEAR * self.mads[0]
        if weakest < w.min_ratio or slowing or unclear or rise <= w.z * noise:
            # Hysteresis: the explosion is over only when the window as a whole stopped
            # growing, not when noise broke one of its block-to-block ratios.
            if medians[-1] < w.min_ratio * medians[0] or rise <= w.z * noise:
                self.once.calm()
            else:
                self.once.hold()
            return None
        if not self.once.fire():  # still the same explosion
            return None
        window = tuple(medians)
        message = (
            f"|value| grew >= {weakest:.3g}x per {w.block} points for {len(window) - 1} blocks "
            f"in a row ({window[0]:.4g} -> {window[-1]:.4g})"
        )
        return message, weakest if math.isfinite(weakest) else None, w.min_ratio, window, None


class _CollapseState(BlockState):
    __slots__ = ("best", "blocks", "initial", "recent", "sign")
    watch: Collapse

    def __init__(self, watch: Collapse) -> None:
        super().__init__(watch, _NOISE_MADS)
        self.sign = 1.0 if watch.higher_is_better else -1.0
        self.recent: deque[float] = deque(maxlen=8)
        self.initial: float | None = None
        self.best = -math.inf
        self.blocks = 0

    def update(
        self, seq: int, step: int, value: float, values: Mapping[str, float]
    ) -> Finding | None:
        buf = self.buf
        buf.append(value * self.sign)
        if len(buf) < self.block:
            return None
        w = self.watch
        median = self._close(buf)
        self.recent.append(median * self.sign)
        self.blocks += 1
        if self.initial is None:
            self.initial = self.best = median
            return None
        if median >= self.best:
            self.best = median
            return None
        if self.blocks < w.min_blocks:
            return None
        gate = w.z * median_sd(self.mads, w.block)
        progress = self.best - self.initial
        drop = self.best - median
        if progress <= gate or drop <= gate or drop <= w.fraction * progress:
            return None
        best, initial = self.best * self.sign, self.initial * self.sign
        self.initial = self.best = median
        self.blocks = 1
        message = (
            f"fell to {median * self.sign:.4g} from its best {best:.4g}: lost "
            f"{100 * drop / progress:.0f}% of the {progress:.4g} gained since {initial:.4g}"
        )
        return message, drop / progress, w.fraction, tuple(self.recent), None


class _LossState(BlockState):
    """A loss series: block medians with the arrival number that completed each."""

    __slots__ = ("blocks",)
    watch: Divergence

    def __init__(self, watch: Divergence) -> None:
        super().__init__(watch, 8)
        self.blocks: list[tuple[int, float]] = []  # thinned, so it reaches back in time

    def update(
        self, seq: int, step: int, value: float, values: Mapping[str, float]
    ) -> Finding | None:
        buf = self.buf
        buf.append(value)
        if len(buf) >= self.block:
            blocks = self.blocks
            blocks.append((seq, self._close(buf)))
            if len(blocks) >= _LOSS_HISTORY:
                del blocks[::2]  # half the resolution, twice the reach; the latest stays
        return None

    def drop_since(self, seq: int, before: int) -> tuple[float, float, float] | None:
        """(start, end, noise) of the loss from around ``seq`` to now, or None without evidence."""
        blocks = self.blocks
        if len(blocks) < 2:
            return None
        start: float | None = None
        for end_seq, median in blocks:
            if end_seq > seq:
                break
            start = median
        if start is None:
            first_seq, first = blocks[0]
            if first_seq >= before:  # the loss began well inside the window
                return None
            start = first
        return start, blocks[-1][1], median_sd(self.mads, self.watch.block)


def _shared_prefix(a: str, b: str) -> int:
    """How many leading ``/``-separated folders the names ``a`` and ``b`` share."""
    n = 0
    for x, y in zip(a.split("/")[:-1], b.split("/")[:-1], strict=False):
        if x != y:
            break
        n += 1
    return n


class Pairing:
    """What one divergence watch pairs: every loss series (any source) and every return series.

    A return is compared with the losses that share the longest name prefix with it: with
    several trainers logging under their own prefixes in one run (``a/critic_loss``,
    ``a/eval_return``, ``b/...``) each return meets its own trainer's losses; when nothing
    tells them apart (``critic_loss`` and ``episode_return``, or ``train/...`` and ``eval/...``)
    it meets every loss. A return that made progress clears the returns paired with the same
    losses (the trainer is learning the task), so a noisy ``eval_return`` is not flat next to
    an ``avg_reward`` that climbed, and one trainer's progress never hides another's failure.
    """

    __slots__ = ("losses", "returns")

    def __init__(self) -> None:
        self.losses: dict[tuple[str, str], _LossState] = {}
        self.returns: list[_ProgressState] = []

    def losses_for(self, name: str) -> list[tuple[tuple[str, str], _LossState]]:
        """The losses the return ``name`` is paired with, sorted by (source, name)."""
        if not self.losses:
            return []
        depth = {key: _shared_prefix(key[1], name) for key in self.losses}
        best = max(depth.values())
        return [(key, loss) for key, loss in sorted(self.losses.items()) if depth[key] == best]

    def peers(self, ret: _ProgressState) -> list[_ProgressState]:
        """The other returns paired with at least one of the losses ``ret`` is paired with."""
        mine = {key for key, _ in self.losses_for(ret.name)}
        return [
            r for r in self.returns
            if r is not ret and (not mine or mine & {key for key, _ in self.losses_for(r.name)})
        ]  # fmt: skip


class _ProgressState(BlockState):
    __slots__ = ("best", "first", "hub", "medians", "name", "once", "source", "start", "starts")
    watch: Divergence

    def __init__(self, watch: Divergence, source: str, name: str, hub: Pairing) -> None:
        super().__init__(watch, _NOISE_MADS)
        self.source = source
        self.name = name
        self.hub = hub  # shared by every series of this watch
        self.once = OncePerFailure(watch.blocks)
        self.first: float | None = None
        self.best = -math.inf
        self.start = 0
        self.medians: deque[float] = deque(maxlen=watch.blocks)
        self.starts: deque[int] = deque(maxlen=watch.blocks)

    def progressed(self) -> bool:
        """Whether this return has held a best (two blocks in a row) clearly above its start."""
        if self.first is None or not self.mads:
            return False
        w = self.watch
        return self.best - self.first > _PROGRESSED * w.z * median_sd(self.mads, w.block)

    def update(
        self, seq: int, step: int, value: float, values: Mapping[str, float]
    ) -> Finding | None:
        buf = self.buf
        if not buf:
            self.start = seq
        buf.append(value)
        if len(buf) < self.block:
            return None
        w = self.watch
        median = self._close(buf)
        medians = self.medians
        medians.append(median)
        self.starts.append(self.start)
        if self.first is None:
            self.first = median
        elif len(medians) > 1:
            # Progress held for two blocks in a row: one lucky block median is not progress.
            self.best = max(self.best, min(medians[-2], median))
        if len(medians) < w.blocks:
            return None
        flat = w.z * median_sd(self.mads, w.block)
        rise = medians[-1] - medians[0]
        # A return that rose earlier and now sits at its ceiling is not "flat": only one that
        # never got clearly above its first block is.
        if rise > flat:
            self.once.calm()
            return None
        if self.progressed() or any(r.progressed() for r in self.hub.peers(self)):
            # Progress (here or in another return of this trainer) says the task is learnt;
            # it ends an ongoing divergence only once a window rises (noise makes it flicker).
            self.once.hold()
            return None
        span, middle = self.starts[0], self.starts[len(self.starts) // 2]
        still_falling = False  # a loss falls, only by less than loss_drop: the failure goes on
        for (source, name), loss in self.hub.losses_for(self.name):
            found = loss.drop_since(span, middle)
            if found is None:
                continue
            start, end, noise = found
            drop = start - end
            if drop <= w.z * noise:
                continue
            if drop <= w.loss_drop * abs(start):
                still_falling = True
                continue
            if not self.once.fire():  # the same divergence, one block later
                return None
            window = tuple(medians)
            related = name if source == self.source else f"{source}/{name}"
            message = (
                f"{related} fell {100 * drop / abs(start):.0f}% ({start:.4g} -> {end:.4g}) while "
                f"the return it is paired with, {self.name}, stayed flat (rise {rise:.4g} <= "
                f"{flat:.4g} over {len(window)} blocks of {w.block}; best {self.best:.4g} from "
                f"{self.first:.4g}: no progress)"
            )
            return message, drop / abs(start), w.loss_drop, window, related
        if still_falling:
            self.once.hold()
        else:
            self.once.calm()
        return None


class _CounterState:
    __slots__ = (
        "baseline",
        "check",
        "count",
        "counter0",
        "once",
        "reference",
        "reference0",
        "severity",
        "watch",
        "window",
    )

    def __init__(self, watch: CounterStall) -> None:
        self.watch = watch
        self.check, self.severity = watch.check, watch.severity
        self.reference, self.window = watch.reference, watch.window
        self.count = 0
        self.counter0 = 0.0
        self.reference0 = 0.0
        self.baseline: float | None = watch.expected_ratio
        self.once = OncePerFailure(_COUNTER_CLEAR_WINDOWS)

    def update(
        self, seq: int, step: int, value: float, values: Mapping[str, float]
    ) -> Finding | None:
        count = self.count
        if count and count + 1 < self.window:  # inside a window: only the ends matter
            self.count = count + 1
            return None
        w = self.watch
        reference = float(step) if self.reference is None else values.get(self.reference)
        if reference is None or not math.isfinite(reference):
            return None
        if count == 0:
            self.counter0, self.reference0, self.count = value, reference, 1
            return None
        counter0, reference0 = self.counter0, self.reference0
        self.counter0, self.reference0, self.count = value, reference, 1
        advance = reference - reference0
        if advance <= 0:
            return None
        ratio = (value - counter0) / advance
        if self.baseline is None:
            if ratio > 0:
                self.baseline = ratio
            return None
        limit = (1.0 - w.tolerance) * self.baseline
        if ratio >= limit:
            self.once.calm()
            return None
        if not self.once.fire():
            return None
        against = w.reference or "step"
        message = (
            f"advanced {value - counter0:.4g} per {advance:.4g} of {against}: ratio {ratio:.3g} "
            f"< {limit:.3g} ({1 - w.tolerance:.0%} of the expected {self.baseline:.3g})"
        )
        return message, ratio, limit, (counter0, value, reference0, reference), against


def make_states(watch: object, source: str, name: str, hub: Pairing) -> list[SeriesState]:
    """The states ``watch`` keeps for ``name`` of ``source`` (``hub``: that watch's pairing)."""
    if isinstance(watch, Growth):
        return [_GrowthState(watch)] if watch.matches(name) else []
    if isinstance(watch, Collapse):
        return [_CollapseState(watch)] if watch.matches(name) else []
    if isinstance(watch, CounterStall):
        return [_CounterState(watch)] if watch.matches(name) else []
    if isinstance(watch, Divergence):
        states: list[SeriesState] = []
        if watch.is_loss(name):
            loss = hub.losses[(source, name)] = _LossState(watch)
            states.append(loss)
        if watch.matches(name):
            progress = _ProgressState(watch, source, name, hub)
            hub.returns.append(progress)
            states.append(progress)
        return states
    return []
