"""What carries a ``RemoteHandler``'s messages: a delivery pipe and the HTTP sender behind it.

Messages wait in a :class:`~goggles_io._delivery.pipe.Pipe` (memory within ``queue_bytes``,
estimated at ~200 bytes a queued point, then the spool as msgpack records, in order); its worker
hands each batch to :class:`~goggles_io.handlers._sender.Sender`, and a batch the collector
stored is acknowledged. The training thread never waits on the network: a message that finds
memory and spool full is refused at once and counted; control messages (register, finish) are
never refused. Every count is in points (``units``): refused, lost, unsent.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import attrs
import msgpack

from goggles_io._delivery.losses import (
    NOT_DELIVERED,
    QUEUE_FULL,
    SPOOL_FULL,
    SPOOL_UNREADABLE,
    UNENCODABLE,
)
from goggles_io._delivery.pipe import Pipe
from goggles_io._delivery.policy import DeliveryPolicy, check_when_full, read_delivery_policy
from goggles_io._delivery.spool import SpoolRecord
from goggles_io.handlers._sender import _COALESCE_POINTS, Message, Sender

__all__ = [
    "POINT_BYTES",
    "MessageCodec",
    "RemoteDelivery",
    "losses_of",
    "message_bytes",
    "remote_pipe",
    "start_delivery",
    "tally_line",
]

POINT_BYTES = 200  # one queued point: a 5-tuple, its float and int objects
_MESSAGE_BYTES = 512
_REFUSED = (QUEUE_FULL, SPOOL_FULL, UNENCODABLE)
_LOST = (NOT_DELIVERED, SPOOL_UNREADABLE)


class MessageCodec:
    """Messages as one msgpack record (tuples come back as lists; the sender reads either)."""

    def encode(self, items: list[Message]) -> tuple[bytes, list[bytes]]:
        return msgpack.packb([list(m) for m in items], use_bin_type=True), []

    def decode(self, record: SpoolRecord) -> list[Message]:
        found = msgpack.unpackb(record.data, raw=False)
        if not isinstance(found, list) or not all(
            isinstance(m, list) and len(m) == 4 for m in found
        ):
            msg = "not a list of messages"
            raise ValueError(msg)
        return [(m[0], m[1], m[2], m[3]) for m in found]


def _points_in(messages: list[Message]) -> int:
    """The points a list of messages holds: the remote pipe counts in points."""
    return sum(message[3] for message in messages)


def message_bytes(message: Message) -> int:
    """What a queued message counts against the memory budget."""
    return _MESSAGE_BYTES + POINT_BYTES * message[3]


def remote_pipe(
    send: Callable[[int, list[Message], bool], object],
    policy: DeliveryPolicy,
    queue_bytes: int,
    queue_batches: int | None,
    on_idle: Callable[[], float | None] | None,
    on_loss: Callable[[str, int, str], object] | None,
) -> Pipe[Message]:
    """The remote sink's pipe, counted in points. A function so the engine's tests build the
    pipe exactly as the sink does."""
    return Pipe(
        send,
        label="remote",
        # The training thread must not wait on the network: "block" is read as "drop".
        policy=attrs.evolve(policy, block_timeout_s=0.0),
        max_bytes=queue_bytes,
        max_items=queue_batches or 1 << 62,
        batch_items=64,
        batch_bytes=_COALESCE_POINTS * POINT_BYTES,
        codec=MessageCodec(),
        units=_points_in,
        ack_on_return=True,
        on_idle=on_idle,
        on_loss=on_loss,
        name="goggles-remote-sender",
    )


class RemoteDelivery:
    """One run's outgoing messages: the pipe that keeps them and the sender that posts them."""

    def __init__(
        self,
        sender: Sender,
        policy: DeliveryPolicy,
        queue_bytes: int,
        queue_batches: int | None,
        logger: logging.Logger,
    ) -> None:
        self.sender = sender
        self.refused_batches = 0
        self.refused_points = 0
        self.on_stored: Callable[[], object] = lambda: None  # after each batch the sink took
        self._logger = logger
        self._said: set[str] = set()
        self.pipe = remote_pipe(
            self._send, policy, queue_bytes, queue_batches, sender.idle, self._said_once
        )

    def _send(self, seq: int, messages: list[Message], redelivered: bool) -> None:
        self.sender.send(seq, messages, redelivered)
        self.on_stored()

    def put(self, message: Message, *, force: bool = False) -> bool:
        """Queue ``message`` without waiting; ``False`` when refused (counted)."""
        taken = self.pipe.put(message, message_bytes(message), force=force)
        if not taken:
            self.refused_batches += 1
            self.refused_points += message[3]
        return taken

    def done_points(self) -> int:
        """Of the points the pipe accepted, how many the collector stored or the pipe counted
        lost (every unit put ends as one or the other; refusals are not accepted)."""
        return self.pipe.delivered + sum(self.pipe.losses().values()) - self.refused_points

    def _said_once(self, reason: str, points: int, detail: str) -> None:
        if reason not in _REFUSED or reason in self._said:
            return
        self._said.add(reason)
        self._logger.warning(
            "remote queue full (%d bytes in memory, then the spool: %s): refusing batches "
            "instead of blocking; the tally at close() counts them",
            self.pipe.max_bytes,
            detail or "spilling is off",
        )

    def close(self, stall_s: float) -> None:
        """Send what is queued while the collector takes it (no progress for ``stall_s``: give
        up and count the rest lost), then stop."""
        self.pipe.drain(stall_s)
        self.pipe.close(join_s=1.0)
        self.sender.close()

    def stats(self) -> dict[str, int]:
        """Counters: points sent / refused / rejected / lost, batches refused, retries, queued."""
        losses = self.pipe.losses()
        s = self.sender
        return {
            "points_sent": s.points_sent,
            "refused_batches": self.refused_batches,
            "refused_points": sum(losses.get(r, 0) for r in _REFUSED),
            "retries": s.retries,
            "rejected_points": s.rejected_points,
            "lost_points": sum(losses.get(r, 0) for r in _LOST),
            "split_requests": s.split_requests,
            "queued": self.pipe.left(),
        }

    def unsent_points(self) -> int:
        """Points queued or in flight: what a close still draining has not got through yet."""
        return self.pipe.left()


def start_delivery(handler: Any, api_key: Any, run: Any, logger: logging.Logger) -> RemoteDelivery:
    """The delivery of a ``RemoteHandler`` (made with its first message): its settings, its
    key (revealed only into the request headers) and its run's heartbeat and registration."""
    headers = {"Content-Type": "application/json", "Connection": "keep-alive"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key.reveal()}"
    policy = read_delivery_policy()
    if handler.when_full is not None:
        policy = policy.stricter(check_when_full(handler.when_full))
    sender = Sender(
        handler._url,
        headers,
        handler.timeout_s,
        handler.heartbeat_s,
        run.heartbeat_message,
        run.register_message,
        handler.max_body_bytes,
    )
    return RemoteDelivery(sender, policy, handler.queue_bytes, handler.queue_batches, logger)


def tally_line(name: str, s: dict[str, int], invalid: int) -> str:
    """The line a closing ``RemoteHandler`` prints: what it sent, refused, retried and lost."""
    return (
        f"remote [{name}]: {s['points_sent']} points sent, "
        f"{s['refused_batches']} batches refused ({s['refused_points']} points), "
        f"{s['retries']} retries, {s['rejected_points']} rejected, {s['lost_points']} lost"
        + (f", {invalid} invalid" if invalid else "")
    )


def losses_of(
    delivery: RemoteDelivery | None, last: dict[str, int], invalid: int
) -> dict[str, int]:
    """A remote sink's points not stored, by reason (``RemoteHandler.losses``): from its live
    delivery, else from the last one's final ``stats``."""
    stats = delivery.stats() if delivery is not None else dict(last)
    counts = {
        "refused": stats.get("refused_points", 0),
        "rejected": stats.get("rejected_points", 0),
        "invalid": invalid,
        "lost": stats.get("lost_points", 0),
        "unsent": delivery.unsent_points() if delivery is not None else 0,
    }
    return {reason: n for reason, n in counts.items() if n}
