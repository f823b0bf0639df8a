"""How a handler lane configures the delivery engine: one place, for the lane and its tests.

A lane's :class:`~goggles_io._delivery.pipe.Pipe` counts in events (a row counts one, a list of
rows its length, a control none: :func:`~goggles_io._bus.items.lane_units`), spills through
:class:`~goggles_io._bus.spilled_items.LaneCodec`, and acknowledges a batch as soon as the
handler returned from it. The engine's property tests
(``tests/goggles_io/delivery/``) build the lane's pipe with this function, as the lane does.
"""

from __future__ import annotations

from collections.abc import Callable

import attrs

from goggles_io._bus.front import run_extra
from goggles_io._bus.items import LaneItem, lane_units
from goggles_io._bus.spilled_items import LaneCodec
from goggles_io._delivery.pipe import Pipe
from goggles_io._delivery.policy import DeliveryPolicy

__all__ = ["lane_pipe"]


def lane_pipe(
    send: Callable[[int, list[LaneItem], bool], object],
    policy: DeliveryPolicy,
    *,
    label: str,
    queue_size: int,
    queue_bytes: int,
    backpressure: bool,
    on_idle: Callable[[], float | None] | None,
    on_loss: Callable[[str, int, str], object] | None,
    name: str,
    on_put: Callable[[], object] | None = None,
) -> Pipe[LaneItem]:
    """A lane's pipe; ``backpressure=False`` (a live subscriber) never blocks its producer;
    ``on_put`` counts each row offered through ``Pipe.put_one`` (the lane's tally)."""
    if not backpressure:  # a live subscriber's reader never makes its producer wait
        policy = attrs.evolve(policy, block_timeout_s=0.0)
    return Pipe(
        send,
        label=label,
        policy=policy,
        max_bytes=queue_bytes,
        max_items=queue_size,
        codec=LaneCodec(),
        units=lane_units,
        run_extra=run_extra,
        ack_on_return=True,
        on_idle=on_idle,
        on_loss=on_loss,
        on_put=on_put,
        name=name,
    )
