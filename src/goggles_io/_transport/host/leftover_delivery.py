"""Delivering one left-over folder into its own run's handlers, and nowhere else (ADR 0060).

A folder is the rest of one process's pipeline: the handler operations it issued (``attach``
with each handler's spec, ``call`` with its recorded config and run), and its events in order,
operations among them. It is replayed into a **bus of its own**, made for that folder alone in
the deliverer's process: its handlers are rebuilt from the recorded specs (so they write the
run folders those specs name), and its events reach those handlers only. The live host, and so
every other run's handlers, never sees them; a later run's handler of the same name is another
handler. This is what Vector and Fluent Bit do with a disk buffer: what is kept belongs to its
pipeline and is replayed into that pipeline.

The deliverer feeds the bus as fast as its handlers take events (it waits for room, never
spills: the folder itself is the buffer) and gives up only after ``GOGGLES_FINISH_STALL``
seconds in which no handler took anything, or at Ctrl-C. A handler that took all its events is
written into the manifest as done: a later delivery of the folder skips it. A folder is removed
once every handler is done; otherwise it stays, and its next delivery marks every event
redelivered (a handler may have taken part of it).
"""

from __future__ import annotations

import math
from typing import Any

import attrs

from goggles_io._bus.bus import EventBus
from goggles_io._bus.settings import Settings
from goggles_io._bus.transport import HandlerStats
from goggles_io._delivery.drain import wait_while_progressing
from goggles_io._delivery.policy import WhenFull
from goggles_io._event.messages import REPLAYED
from goggles_io._transport.host.specs import build_handler
from goggles_io._transport.leftover_folder import OP, SENT, Folder, Unreadable
from goggles_io.exceptions import UnknownHandlerError

__all__ = ["Delivered", "deliver_folder"]

_ROOM = 1024  # events a record holds at most: the room waited for before each is routed


@attrs.define
class Delivered:
    """What became of one folder's events."""

    events: int  # in the folder
    handlers: dict[str, HandlerStats] = attrs.field(factory=dict)
    unbuilt: dict[str, str] = attrs.field(factory=dict)  # handler name -> why it was not built
    failed_ops: int = 0
    stalled: bool = False  # a handler took nothing for the stall deadline
    abandoned: bool = False  # Ctrl-C
    done: set[str] = attrs.field(factory=set)  # handlers that took all of theirs

    @property
    def complete(self) -> bool:
        """Every handler took every event routed to it: the folder may go."""
        return not self.unbuilt and not any(s.dropped or _left(s) for s in self.handlers.values())

    @property
    def lost(self) -> int:
        """Events handed to a handler that raised on them or refused them itself."""
        return sum(s.failed + s.lost for s in self.handlers.values())


def _check_op(op: Any) -> tuple[str, dict[str, Any]]:
    if type(op) is not list or len(op) != 2 or op[0] not in REPLAYED or type(op[1]) is not dict:
        raise Unreadable(f"it holds an operation that cannot be replayed: {op!r:.100}")
    return op[0], op[1]


def check_folder(folder: Folder) -> tuple[dict[str, Any], list[tuple[str, dict[str, Any]]]]:
    """The manifest and operations, with every record read once: all of a folder must be
    readable before any of it is delivered. Raises :class:`Unreadable`."""
    manifest = folder.manifest()
    ops = [_check_op(op) for op in folder.ops()]
    events = 0
    for kind, value in folder.records():
        if kind == OP:
            _check_op(value)
        else:
            events += len(value)
    if events != manifest["events"]:
        raise Unreadable(f"it holds {events} events, its manifest says {manifest['events']}")
    return manifest, ops


class _Replay:
    """The folder's own bus, and its operations applied to it in order."""

    def __init__(self, settings: Settings, stall_s: float, skip: set[str]) -> None:
        self.bus = EventBus(
            async_mode=True,
            queue_size=settings.queue_size,
            queue_bytes=settings.queue_bytes,
            # Its lanes wait for room, never spill nor drop: the folder is the buffer.
            policy=attrs.evolve(settings.delivery, when_full=WhenFull.BLOCK),
            stall_s=stall_s,
        )
        self.bus.producers_keep = True
        # A process's whole stream: events for its in-process handlers, or for handlers done
        # before, reach none here by design.
        self.bus.unrouted.enabled = False
        self.skip = skip  # handlers a delivery before took everything into

    def apply(self, op: str, args: dict[str, Any], out: Delivered) -> None:
        """Apply one recorded operation; one that fails is counted, the rest go on."""
        name = _name_of(op, args)
        if name in self.skip or name in out.unbuilt:
            return
        try:
            if op in ("attach", "replace"):
                try:
                    handler = build_handler(args["spec"])
                except Exception as exc:
                    out.unbuilt[name] = f"{type(exc).__name__}: {exc}"
                    return
                if op == "attach":
                    self.bus.attach(handler, list(args["scopes"]))
                else:
                    enable = bool(args["enable"])
                    self.bus.replace(handler, list(args["scopes"]), enable=enable)
            elif op == "detach":
                self.bus.detach(name, str(args["scope"]), missing_ok=True)
            else:
                self.bus.call(name, str(args["method"]), args.get("payload"))
        except UnknownHandlerError:
            return  # a call to a handler the process ran itself (in-process): not in the folder
        except Exception:
            out.failed_ops += 1

    def progress(self) -> int:
        return sum(s.delivered + s.dropped + s.failed for s in self.bus.stats().values())


def _name_of(op: str, args: dict[str, Any]) -> str:
    if op in ("attach", "replace"):
        spec = args.get("spec")
        data = spec.get("data") if isinstance(spec, dict) else None
        return str(data.get("name")) if isinstance(data, dict) else ""
    return str(args.get("name"))


def deliver_folder(
    folder: Folder,
    manifest: dict[str, Any],
    ops: list[tuple[str, dict[str, Any]]],
    *,
    settings: Settings,
    stall_s: float,
) -> Delivered:
    """Replay ``folder`` into a bus of its own; what became of its events. The manifest is
    updated first (one more delivery begun) and, when the folder stays, last (the handlers
    done). Raises :class:`Unreadable` when the folder changed under us."""
    again = manifest.get("deliveries", 0) > 0  # begun before: any of it may have arrived
    done_before = {str(n) for n in manifest.get("done") or [] if isinstance(n, str)}
    folder.write_manifest({**manifest, "deliveries": manifest.get("deliveries", 0) + 1})
    out = Delivered(events=int(manifest["events"]))
    replay = _Replay(settings, stall_s, done_before)
    bus = replay.bus
    for op, args in ops:
        replay.apply(op, args, out)
    fed = 0
    try:
        for kind, value in folder.records():
            if kind == OP:
                replay.apply(*_check_op(value), out)
                continue
            wait = wait_while_progressing(
                lambda: int(bus.congested(_ROOM)),
                stall_s=stall_s,
                what="their own run's handlers",
                taken=replay.progress,
                report_every_s=math.inf,
            )
            if wait.stalled or wait.abandoned:
                out.stalled, out.abandoned = wait.stalled, wait.abandoned
                break
            bus.put_rows(list(value), redelivered=again or kind == SENT)
            fed += len(value)
    except KeyboardInterrupt:
        out.abandoned = True
    _settle(replay, out, stall_s)
    fed_all = fed == out.events and not (out.stalled or out.abandoned)
    out.done = done_before | {n for n, s in out.handlers.items() if fed_all and not _left(s)}
    if not (out.complete and fed_all):
        manifest = {**manifest, "deliveries": manifest.get("deliveries", 0) + 1}
        folder.write_manifest({**manifest, "done": sorted(out.done)})
    return out


def _left(stats: HandlerStats) -> int:
    """Events routed to a handler that it has neither taken nor refused (still queued)."""
    return max((stats.logged or 0) - stats.delivered - stats.dropped - stats.failed, 0)


def _settle(replay: _Replay, out: Delivered, stall_s: float) -> None:
    """Wait while the handlers take what was routed to them (none of it is ever counted lost:
    the folder keeps it), then close those that took everything; a hung one is left alone."""
    bus = replay.bus
    gave_up = out.stalled or out.abandoned
    wait = wait_while_progressing(
        lambda: sum(map(_left, bus.stats().values())),
        stall_s=0.0 if gave_up else stall_s,
        what="their own run's handlers",
        taken=replay.progress,
    )
    out.stalled = out.stalled or wait.stalled
    out.abandoned = out.abandoned or wait.abandoned
    if wait.drained:
        out.handlers = dict(bus.finish(stall_s=stall_s).handlers)
        return
    stats = bus.stats()
    for scope, names in bus.scopes.items():
        for name in names:
            if name in stats and not _left(stats[name]):
                bus.detach(name, scope, missing_ok=True)  # its last scope closes it
    out.handlers = dict(bus.stats())
