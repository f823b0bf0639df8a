"""Serve an ASGI app with uvicorn on a daemon thread, keeping the collector's wire habits.

Three things uvicorn does differently from what ``docs/remote-protocol.md`` promises, and how
this module bends them back (ADR 0023):

* a request h11 cannot parse (``NONSENSE``, ``Content-Length: -1``) gets a ``text/plain`` 400;
  here it gets ``{"error": "..."}`` naming h11's reason, then the connection closes;
* headers and body leave in two ``send`` calls; here writes made in one loop turn are joined
  into one (one segment, as the stdlib collector did);
* the listening socket is made here (backlog 1024, ``SO_REUSEADDR``) so the port is known
  before serving and a restart binds the same one.

Every accepted socket gets ``TCP_NODELAY``.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Callable
from typing import Any

from goggles_io._util.extras import install_hint

__all__ = ["ServerThread", "missing_ui_extra"]

_BACKLOG = 1024


def missing_ui_extra(exc: ImportError) -> ImportError:
    """The error to raise when uvicorn or starlette is absent: says which extra to install."""
    msg = (
        f"the collector and `telemetry ui` need the [ui] extra ({exc.name} is missing): "
        f"{install_hint('ui')}"
    )
    return ImportError(msg)


class _JoinedWrites:
    """A transport whose writes within one event-loop turn leave as one ``write``."""

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self._transport = transport
        self._loop = loop
        self._pending: list[bytes] = []

    def write(self, data: bytes) -> None:
        if not self._pending:
            self._loop.call_soon(self.flush)
        self._pending.append(bytes(data))

    def flush(self) -> None:
        if self._pending:
            data = b"".join(self._pending)
            self._pending.clear()
            if not self._transport.is_closing():
                self._transport.write(data)

    def close(self) -> None:
        self.flush()
        self._transport.close()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._transport, name)


def _protocol_class(track: Callable[[Any, bool], None]) -> type:
    import h11
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class _Connection(h11.Connection):
        last_error = ""

        def next_event(self) -> Any:
            try:
                return super().next_event()
            except h11.RemoteProtocolError as exc:
                self.last_error = str(exc)
                raise

    class _JsonErrorsProtocol(H11Protocol):
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self.conn = _Connection(h11.SERVER, self.conn._max_incomplete_event_size)

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            self._sock = transport.get_extra_info("socket")
            try:  # asyncio sets it only for sockets made with proto=IPPROTO_TCP: be explicit
                self._sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except (OSError, AttributeError):
                pass
            track(self._sock, True)
            super().connection_made(transport)
            self.transport = _JoinedWrites(transport, asyncio.get_running_loop())  # type: ignore[assignment]

        def connection_lost(self, exc: Exception | None) -> None:
            track(self._sock, False)
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            reason = getattr(self.conn, "last_error", None) or msg  # httptools sets it, h11 not
            body = json.dumps({"error": f"malformed HTTP request: {reason}"}).encode()
            head = (
                "HTTP/1.1 400 Bad Request\r\nContent-Type: application/json\r\n"
                "X-Content-Type-Options: nosniff\r\n"
                f"Content-Length: {len(body)}\r\nConnection: close\r\n\r\n"
            )
            self.transport.write(head.encode("latin-1") + body)
            self.transport.close()

    return _JsonErrorsProtocol


class ServerThread:
    """uvicorn serving ``app`` on ``host:port`` from a daemon thread; start, stop, start again."""

    def __init__(
        self,
        app: Any,
        host: str,
        port: int,
        keep_alive_s: float,
        track: Callable[[Any, bool], None],
    ) -> None:
        try:
            import uvicorn
        except ImportError as exc:
            raise missing_ui_extra(exc) from None
        self._uvicorn = uvicorn
        self.app = app
        self.host = host
        self.port = port
        self.keep_alive_s = keep_alive_s
        self._protocol = _protocol_class(track)
        self._server: Any = None
        self._thread: threading.Thread | None = None

    def start(self) -> int:
        """Bind (the same port again after :meth:`stop`), serve, and return the bound port."""
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((self.host, self.port))
            sock.listen(_BACKLOG)
        except OSError:
            sock.close()
            raise
        self.port = sock.getsockname()[1]
        config = self._uvicorn.Config(
            self.app,
            http=self._protocol,
            lifespan="off",
            log_config=None,
            access_log=False,
            backlog=_BACKLOG,
            timeout_keep_alive=self.keep_alive_s,  # type: ignore[arg-type]
            timeout_graceful_shutdown=1,
            ws="none",
        )
        server = self._uvicorn.Server(config)
        started = threading.Event()

        async def serve() -> None:
            started.set()
            await server.serve(sockets=[sock])

        self._server = server
        self._thread = threading.Thread(
            target=lambda: asyncio.run(serve()), name=f"collector-{self.port}", daemon=True
        )
        self._thread.start()
        started.wait(10)
        return self.port

    @property
    def alive(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def join(self, timeout_s: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout_s)

    def stop(self, timeout_s: float = 5.0) -> None:
        """Stop accepting, close idle keep-alive connections, wait for the thread."""
        if self._server is None:
            return
        self._server.should_exit = True
        self.join(timeout_s)
        self._server = None
