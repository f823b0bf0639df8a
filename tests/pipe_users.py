"""The delivery engine's four users, for one suite that runs each through the engine (issue 29).

Each :class:`PipeUser` builds its :class:`~goggles_io._delivery.pipe.Pipe` with the user's own
factory (its codec, units, batch bounds, acknowledgement and policy tweaks), puts items of the
user's own types with the sizes the user gives them, and says how many units each counts. Only
the sink is not the user's: the suite hands every pipe the same in-memory fake. Forced items
(which never spill: a record holding one stays in memory) come less than once a batch, so that
most records reach the disk.

- ``client``: the socket client (``_transport/client/socket_client.py``): rows (arrays included) and
  handler-operation markers (counting 0, forced, never spilled); acknowledged by the host.
- ``lane``: a handler lane (``_bus/lane_pipe.py``): rows, lists of rows, redelivered lists and
  ``call_handler`` calls (forced, 0); acknowledged when the handler returns.
- ``remote``: the remote sink (``handlers/_remote_delivery.py``): messages counted in points,
  registrations forced; acknowledged when the collector stored them.
- ``broker``: the broker forwarder (``_broker/forwarder.py``): rows; acknowledged by the
  consumer group's mark.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from goggles_io import Event, Kind
from goggles_io._broker.forwarder import broker_pipe
from goggles_io._bus.items import HandlerCall as LaneCall
from goggles_io._bus.items import Redelivered
from goggles_io._bus.lane_pipe import lane_pipe
from goggles_io._delivery.pipe import Pipe
from goggles_io._delivery.policy import DeliveryPolicy
from goggles_io._event.messages import Call
from goggles_io._event.rows import events_of, is_row, nbytes, row_of, step_of
from goggles_io._transport.client.operations import Marker
from goggles_io._transport.client.socket_client import client_pipe
from goggles_io.handlers._remote_delivery import message_bytes, remote_pipe

__all__ = ["USERS", "PipeUser"]

Send = Callable[[int, list[Any], bool], object]
_NO_CAP = 1 << 62  # the suite bounds memory in bytes; every user's item cap stays out of the way


@dataclass(frozen=True)
class PipeUser:
    """One user of the engine, as the suite sees it.

    Attributes:
        name: the test id.
        build: ``(send, policy, max_bytes)`` → the pipe, made by the user's own factory.
        item: the ``i``-th sample item and whether the user puts it forced.
        size: the bytes the user gives ``put`` for an item.
        units: what the test expects an item to count (independent of the user's code).
        ident: the ``i`` an item (as the sink got it) was made from.
        plain: a form to compare an item with its original after a spool round trip.
    """

    name: str
    build: Callable[[Send, DeliveryPolicy, int], Pipe[Any]]
    item: Callable[[int], tuple[Any, bool]]
    size: Callable[[Any], int]
    units: Callable[[Any], int]
    ident: Callable[[Any], int]
    plain: Callable[[Any], Any]

    def typical_size(self) -> int:
        """The mean size of the first sample items that take room: budgets scale by it."""
        sizes = [self.size(self.item(i)[0]) for i in range(33)]
        found = [s for s in sizes if s]
        return sum(found) // len(found)

    def batch_items(self) -> int:
        """The most items one of the user's batches (and spool records) holds."""
        probe = self.build(lambda *_: None, DeliveryPolicy(), 1)
        probe.close()
        return probe.batch_items

    def __str__(self) -> str:
        return self.name


# -- rows (client, lane, broker) --------------------------------------------------------------
def _event(i: int, j: int = 0) -> Any:
    """The row of a metric, or (every third) an image: small, or 4 KiB (the spool writes it
    beside)."""
    if i % 3:
        return row_of(Event(kind=Kind.METRIC, scope="global", payload={"loss": i + j / 8}, step=i))
    if i % 11 == 0:
        pixels = np.full((64, 64), (i + j) % 256, dtype=np.uint8)
    else:
        pixels = np.arange(6, dtype=np.float32).reshape(2, 3) + i + j
    event = Event(kind=Kind.IMAGE, scope="global.cam", payload=pixels, step=i, extra={"j": j})
    return row_of(event)


def _event_units(item: Any) -> int:
    return 1 if is_row(item) else 0


def _plain_row(row: Any) -> Any:
    """A row as its event: arrays compare by value there."""
    return events_of([row])[0]


# -- client: events and handler-operation markers ---------------------------------------------
def _client_item(i: int) -> tuple[Any, bool]:
    if i % 1500 == 3:
        return Marker(Call(i, "flush", {"timeout_s": None})), True
    return _event(i), False


def _client_size(item: Any) -> int:
    return 0 if type(item) is Marker else nbytes(item)


def _client_ident(item: Any) -> int:
    return item.call.token if type(item) is Marker else step_of(item)


def _client_plain(item: Any) -> Any:
    return ("marker", item.call) if type(item) is Marker else _plain_row(item)


# -- lane: events, lists, redelivered lists, calls --------------------------------------------
def _lane_item(i: int) -> tuple[Any, bool]:
    if i % 700 == 3:
        return LaneCall("note", {"i": i}), True
    if i % 5 == 1:
        return [_event(i, j) for j in range(3)], False
    if i % 5 == 2:
        return Redelivered([_event(i, j) for j in range(2)]), False
    return _event(i), False


def _lane_size(item: Any) -> int:
    cls = item.__class__
    if is_row(item):
        return nbytes(item)
    return sum(map(nbytes, item)) if cls is list or cls is Redelivered else 0


def _lane_units(item: Any) -> int:
    cls = item.__class__
    return 1 if is_row(item) else len(item) if cls is list or cls is Redelivered else 0


def _lane_ident(item: Any) -> int:
    cls = item.__class__
    if cls is LaneCall:
        return item.payload["i"]
    return step_of(item) if is_row(item) else step_of(item[0])


def _lane_plain(item: Any) -> Any:
    cls = item.__class__
    if cls is LaneCall:
        return ("call", item.method, item.payload)
    if cls is list or cls is Redelivered:
        return (cls.__name__, events_of(item))
    return _plain_row(item)


# -- remote: messages counted in points -------------------------------------------------------
_RUN = "/api/runs/r1"


def _remote_item(i: int) -> tuple[Any, bool]:
    if i % 100 == 3:
        return ("register", f"{_RUN}/register", {"i": i}, 0), True
    points = [(i * 8 + k, "loss", 0.5 * k, i, 1.5) for k in range(1 + i % 4)]
    return ("points", f"{_RUN}/points", {"points": points}, len(points)), False


def _remote_ident(message: Any) -> int:
    body = message[2]
    return body["i"] if message[0] == "register" else body["points"][0][0] // 8


def _lists(value: Any) -> Any:
    """Tuples as lists, all the way down (the spool gives messages' points back as lists)."""
    if isinstance(value, (list, tuple)):
        return [_lists(v) for v in value]
    if isinstance(value, dict):
        return {k: _lists(v) for k, v in value.items()}
    return value


USERS = [
    PipeUser(
        name="client",
        build=lambda send, policy, max_bytes: client_pipe(send, policy, _NO_CAP, max_bytes),
        item=_client_item,
        size=_client_size,
        units=_event_units,
        ident=_client_ident,
        plain=_client_plain,
    ),
    PipeUser(
        name="lane",
        build=lambda send, policy, max_bytes: lane_pipe(
            send,
            policy,
            label="lane-t",
            queue_size=_NO_CAP,
            queue_bytes=max_bytes,
            backpressure=True,
            on_idle=None,
            on_loss=lambda *_: None,
            name="goggles_io:t",
        ),
        item=_lane_item,
        size=_lane_size,
        units=_lane_units,
        ident=_lane_ident,
        plain=_lane_plain,
    ),
    PipeUser(
        name="remote",
        build=lambda send, policy, max_bytes: remote_pipe(
            send, policy, max_bytes, None, None, lambda *_: None
        ),
        item=_remote_item,
        size=message_bytes,
        units=lambda message: message[3],
        ident=_remote_ident,
        plain=_lists,
    ),
    PipeUser(
        name="broker",
        build=lambda send, policy, max_bytes: broker_pipe(
            send, policy, max_bytes, None, lambda *_: None
        ),
        item=lambda i: (_event(i), False),
        size=nbytes,
        units=_event_units,
        ident=step_of,
        plain=_plain_row,
    ),
]
