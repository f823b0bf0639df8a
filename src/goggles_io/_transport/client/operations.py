"""Handler operations of the socket client: attach, detach, configure, call_handler, subscribe.

They travel through the client's pipe as :class:`Marker` items, in order with the events around
them, and are replayed on a new host (after a host death, or in a forked child). A handler the
host cannot build runs here instead (see :mod:`goggles_io._transport.client.placement`).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

import msgpack

from goggles_io._event.messages import Call, Reply
from goggles_io._transport.client.placement import runs_in_attaching_process
from goggles_io.exceptions import InvalidPayloadError, UnknownScopeError
from goggles_io.handlers.base import Handler, check_remote_method, get_handler_class

if TYPE_CHECKING:
    from goggles_io._bus.settings import Settings
    from goggles_io._transport.client.election import HostElector
    from goggles_io._transport.client.placement import LocalHandlers

__all__ = ["HandlerOperations", "Marker"]


class Marker:
    """A control operation travelling through the queue, in order with the events around it."""

    __slots__ = ("call", "done", "result")

    def __init__(self, call: Call) -> None:
        self.call = call
        self.done = threading.Event()
        self.result: Reply | None = None


class OperationsClient(Protocol):
    """What the operations need of the socket client that holds them."""

    socket_path: str
    settings: Settings
    local: LocalHandlers

    @property
    def elector(self) -> HostElector: ...

    def control(self, op: str, args: dict[str, Any]) -> Marker: ...

    def flush(self, timeout_s: float | None = None) -> bool: ...

    def warn_once(self, key: str, message: str) -> None: ...


class HandlerOperations:
    """The handler-facing part of :class:`~goggles_io._transport.client.socket_client.SocketClient`: what this
    process attached, and the operations it sends (through the client's pipe, in order)."""

    def __init__(self, client: OperationsClient) -> None:
        self.client = client
        self.attached: dict[str, tuple[type, set[str]]] = {}  # name -> (class, scopes), ours

    def _spec(self, handler: Handler) -> dict[str, Any]:
        spec = handler.to_dict()
        get_handler_class(str(spec.get("cls")))  # unregistered classes fail here, at the call
        try:  # so does a spec the wire cannot carry (it would be replayed on every reconnect)
            msgpack.packb(spec, use_bin_type=True)  # builtins only: what the codec sends as is
        except (TypeError, ValueError, OverflowError) as exc:
            msg = (
                f"handler {handler.name!r} cannot be sent to the host: its config() must return "
                f"msgpack-safe builtins (str, int, float, bool, None, lists, dicts) ({exc})"
            )
            raise InvalidPayloadError(msg, value=spec) from None
        return spec

    def attach(self, handler: Handler, scopes: Sequence[str]) -> None:
        """Attach on the host; ordered before every event emitted after this returns.

        A handler the host cannot build (its class lives in ``__main__``, a notebook or a
        function, or was never registered) runs here instead, fed by a subscription to the
        host, so it still sees every process's events (see :mod:`goggles_io._transport.client.placement`).
        """
        if runs_in_attaching_process(handler):
            self.client.local.attach(handler, scopes)
            cls, known = self.attached.get(handler.name, (type(handler), set()))
            self.attached[handler.name] = (cls, known | set(scopes))
            return
        # Never waits for the host (ADR 0025): events logged before it is up wait in the queue
        # and, past its budget, in the client pipe's spool; none is lost to a slow start.
        self.client.control("attach", {"spec": self._spec(handler), "scopes": list(scopes)})
        cls, known = self.attached.get(handler.name, (type(handler), set()))
        self.attached[handler.name] = (cls, known | set(scopes))  # the first class wins

    @property
    def is_host(self) -> bool:
        """Whether the host runs in this process (``GOGGLES_DEDICATED_HOST=0`` and we won the
        election); waits until connected, since the election happens on the first connection."""
        client = self.client
        client.flush(client.settings.shutdown_timeout_s)
        return client.elector.host is not None

    def open_subscription(self, sub: Any) -> None:
        """Connect a :class:`~goggles_io._api.subscribe.Subscription` to this socket's host."""
        sub.connect(self.client.socket_path, self._elect_quietly)

    def _elect_quietly(self) -> None:
        client = self.client
        try:
            client.elector.elect()
        except Exception as exc:
            client.warn_once("elect", f"cannot start a host on {client.socket_path!r}: {exc}")

    def detach(self, name: str, scope: str) -> None:
        """Detach on the host, in order with the events around it.

        Raises:
            UnknownScopeError: this process attached ``name`` but not on ``scope``.
        """
        found = self.attached.get(name)
        if found is not None and scope not in found[1]:
            msg = f"handler {name!r} is not attached on scope {scope!r} (its scopes: {sorted(found[1])!r})."
            raise UnknownScopeError(msg, name=name, scope=scope)
        if self.client.local.has_handler(name):
            self.client.local.detach(name, scope)
        else:
            self.client.control("detach", {"name": name, "scope": scope})
        if found is not None:
            found[1].discard(scope)
            if not found[1]:
                del self.attached[name]

    def replace(self, handler: Handler, scopes: Sequence[str], *, enable: bool) -> None:
        """Last-wins replacement (``configure``) on the host."""
        args = {"spec": self._spec(handler), "scopes": list(scopes), "enable": enable}
        self.client.control("replace", args)
        _, known = self.attached.pop(handler.name, (None, set()))
        kept = (known - set(scopes)) | (set(scopes) if enable else set())
        if kept:
            self.attached[handler.name] = (type(handler), kept)

    def call(self, name: str, method: str, payload: Any) -> None:
        """Run ``method(payload)`` on the host's handler ``name``, after the events queued before.

        The method is checked here when this process attached ``name`` (it knows the class);
        otherwise the host checks it and a refusal is counted and reported once on both sides.
        """
        found = self.attached.get(name)
        if found is not None:
            check_remote_method(found[0], method)
        self.client.control("call", {"name": name, "method": method, "payload": payload})

    def has_handler(self, name: str) -> bool:
        """Return whether this process attached a handler named ``name``."""
        return name in self.attached
