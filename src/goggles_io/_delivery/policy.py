"""The one delivery policy of every bounded buffer: spill to disk, then block, then drop.

Every buffer between a log call and a sink (the client queue, the shared-memory pool, each
handler lane, the remote sink's queue, the broker forwarder's buffer) does the same when its
memory budget is full, in this order (ADR 0025):

1. **spill**: append to a private on-disk spool (:mod:`goggles_io._delivery.spool`) within the
   process's spool budget;
2. **block**: wait for room, for at most ``block_timeout_s`` in total per burst (a burst ends
   when the buffer has drained), never while the host is known dead;
3. **drop**: count the event by reason and report it once, saying what to do.

``GOGGLES_WHEN_FULL=block`` skips the spill, ``drop`` skips both (the behaviour before ADR 0025).
A handler may ask for a stricter policy for its own lane (``when_full=`` on the handler).
"""

from __future__ import annotations

import enum
import os
import threading
import time
from collections.abc import Callable, Mapping

import attrs

from goggles_io._util.env import (
    ENV_BLOCK_TIMEOUT,
    ENV_SPOOL_BYTES,
    ENV_SPOOL_DIR,
    ENV_WHEN_FULL,
    read_number,
    read_text,
)
from goggles_io.exceptions import ConfigurationError

__all__ = [
    "DEFAULT_BLOCK_TIMEOUT_S",
    "DEFAULT_SPOOL_BYTES",
    "BlockAllowance",
    "DeliveryPolicy",
    "WhenFull",
    "advice",
    "check_when_full",
    "read_delivery_policy",
]

DEFAULT_SPOOL_BYTES = 4 * 1024**3
DEFAULT_BLOCK_TIMEOUT_S = 5.0


class WhenFull(str, enum.Enum):
    """What a full buffer does; each value also does what the stricter ones after it do."""

    SPILL = "spill"  # spill, then block, then drop
    BLOCK = "block"  # block, then drop
    DROP = "drop"  # drop at once

    def __str__(self) -> str:
        return self.value


_ORDER = {WhenFull.SPILL: 0, WhenFull.BLOCK: 1, WhenFull.DROP: 2}


def check_when_full(value: object, key: str = "when_full") -> WhenFull | None:
    """``value`` as a :class:`WhenFull` (``None`` stays ``None``: the process-wide policy).

    Raises:
        ConfigurationError: ``value`` is not ``"spill"``, ``"block"`` or ``"drop"``.
    """
    if value is None or isinstance(value, WhenFull):
        return value
    if isinstance(value, str) and value.strip().lower() in WhenFull._value2member_map_:
        return WhenFull(value.strip().lower())
    msg = f"{key} must be one of 'spill', 'block', 'drop' (got {value!r})."
    raise ConfigurationError(msg, key=key, value=value)


@attrs.frozen(kw_only=True)
class DeliveryPolicy:
    """The parsed policy knobs (argument > env variable > default)."""

    when_full: WhenFull = WhenFull.SPILL
    spool_bytes: int = DEFAULT_SPOOL_BYTES
    spool_dir: str | None = None
    block_timeout_s: float = DEFAULT_BLOCK_TIMEOUT_S

    def stricter(self, when_full: WhenFull | None) -> DeliveryPolicy:
        """This policy, or ``when_full`` where that is stricter (a handler's own choice)."""
        if when_full is None or _ORDER[when_full] <= _ORDER[self.when_full]:
            return self
        return attrs.evolve(self, when_full=when_full)

    @property
    def spills(self) -> bool:
        """Whether a full buffer goes to disk first."""
        return self.when_full is WhenFull.SPILL

    @property
    def blocks(self) -> bool:
        """Whether a full buffer (and a full spool) waits before dropping."""
        return self.when_full is not WhenFull.DROP and self.block_timeout_s > 0


def read_delivery_policy(env: Mapping[str, str] | None = None) -> DeliveryPolicy:
    """Parse ``GOGGLES_WHEN_FULL``, ``GOGGLES_SPOOL_BYTES``, ``GOGGLES_SPOOL_DIR``,
    ``GOGGLES_BLOCK_TIMEOUT``; a malformed value raises naming the variable."""
    env = os.environ if env is None else env
    when = check_when_full(read_text(env, ENV_WHEN_FULL), ENV_WHEN_FULL) or WhenFull.SPILL
    return DeliveryPolicy(
        when_full=when,
        spool_bytes=read_number(env, ENV_SPOOL_BYTES, DEFAULT_SPOOL_BYTES, minimum=0),
        spool_dir=read_text(env, ENV_SPOOL_DIR),
        block_timeout_s=read_number(env, ENV_BLOCK_TIMEOUT, DEFAULT_BLOCK_TIMEOUT_S, minimum=0.0),
    )


def advice(what: str) -> str:
    """What to tell a user whose events ``what`` dropped: the knobs that would have kept them."""
    return (
        f"{what}; to keep such bursts: leave {ENV_WHEN_FULL}=spill (the default) and give the "
        f"spool room ({ENV_SPOOL_BYTES}, {ENV_SPOOL_DIR} on a disk with free space), raise "
        f"{ENV_BLOCK_TIMEOUT} so producers wait longer, or log less often"
    )


class BlockAllowance:
    """The time a producer may still wait on one full buffer in this burst.

    ``wait(has_room)`` polls ``has_room`` until it is true or the allowance is spent; the time
    waited is taken from the allowance, which :meth:`refill` restores once the buffer drained
    (the burst is over). Kafka's ``max.block.ms`` is per call; ours is per burst, so a burst of
    a million calls waits a few seconds in all, not a few seconds each.
    """

    __slots__ = ("_left", "_lock", "total_s")

    def __init__(self, total_s: float) -> None:
        self.total_s = total_s
        self._left = total_s
        self._lock = threading.Lock()

    @property
    def left_s(self) -> float:
        """Seconds still allowed in this burst."""
        return self._left

    def refill(self) -> None:
        """The buffer drained: the next burst may wait the full allowance again."""
        self._left = self.total_s

    def wait(
        self, has_room: Callable[[], bool], *, give_up: Callable[[], bool] | None = None
    ) -> bool:
        """Wait until ``has_room()`` (``True``) or the allowance or ``give_up()`` ends it."""
        if self._left <= 0:
            return bool(has_room())
        start = time.monotonic()
        delay = 0.0005
        try:
            while True:
                if has_room():
                    return True
                if give_up is not None and give_up():
                    return False
                if time.monotonic() - start >= self._left:
                    return False
                time.sleep(delay)
                delay = min(delay * 2, 0.01)
        finally:
            with self._lock:
                self._left = max(0.0, self._left - (time.monotonic() - start))
