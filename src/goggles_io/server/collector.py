"""The collector :class:`~goggles_io.handlers.remote.RemoteHandler` talks to, and the dashboard.

One ASGI application on uvicorn (ADR 0023; the ``[ui]`` extra): the remote protocol
(``docs/remote-protocol.md``) under ``/runs``, and the web dashboard of ``telemetry ui``
everywhere else, over the same database plus any run directories. This module only puts the
pieces together: :class:`~goggles_io.server.store.RunStore` (SQLite, each point stored once),
:class:`~goggles_io.server.ingest.Ingest` (keys and routes), the ASGI app and the server thread.
"""

from __future__ import annotations

import ipaddress
import logging
import os
import threading
from collections.abc import Sequence
from typing import Any

from goggles_io._event.remote_protocol import MAX_BODY_BYTES
from goggles_io.exceptions import ConfigurationError
from goggles_io.server.asgi import CollectorApp
from goggles_io.server.ingest import Ingest
from goggles_io.server.store import RunStore
from goggles_io.server.uvicorn_thread import ServerThread, missing_ui_extra

__all__ = ["Collector", "is_loopback"]

_logger = logging.getLogger(__name__)


def is_loopback(host: str) -> bool:
    """Whether binding ``host`` keeps the collector on this machine (``localhost``, 127/8, ::1)."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # "", "0.0.0.0"-like names and other host names reach beyond this machine


class Collector:
    """A small HTTP collector storing runs and points in SQLite, serving the dashboard too.

    Args:
        db_path: SQLite file, or ``":memory:"``. The database stays open across
            :meth:`shutdown` / :meth:`start`, so a restarted collector keeps its runs.
        host: Interface to bind. Anything beyond loopback needs ``api_key`` and logs a warning
            (the traffic is plain HTTP).
        port: Port to bind; ``0`` picks a free one (see :attr:`port` after :meth:`start`).
        api_key: When set, every request needs ``Authorization: Bearer <api_key>``; checked
            before any body is read.
        response_delay_s: Seconds to wait before answering each request (for tests); lowering
            it releases requests already waiting, so a test never sits out a long delay.
        read_timeout_s: A connection that sends nothing for this long (mid-request or idle
            between keep-alive requests) is closed; a half-sent body gets 408.
        max_body_bytes: Largest accepted body (413 beyond, for any ``Content-Length`` and for
            chunked bodies).
        stale_heartbeats: A ``running`` run silent for this many of its heartbeat periods is
            marked ``stale`` (its finish never came: the process died or could not reach us).
        run_dirs: Run directories, or roots holding them, that the dashboard shows beside the
            database's runs (read only, followed as they grow).
        store: Serve this :class:`RunStore` (a subclass may add storage rules) instead of one
            made from ``db_path`` and ``stale_heartbeats``.
        index_dir: Where the dashboard keeps its index of the runs' metrics (default
            ``$XDG_CACHE_HOME/split-telemetry/ui-index``); never inside a run directory.

    Raises:
        ConfigurationError: ``host`` is beyond loopback and no ``api_key`` is given.
    """

    def __init__(
        self,
        db_path: str = ":memory:",
        host: str = "127.0.0.1",
        port: int = 0,
        api_key: str | None = None,
        response_delay_s: float = 0.0,
        read_timeout_s: float = 30.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        stale_heartbeats: float = 3.0,
        run_dirs: Sequence[str | os.PathLike[str]] = (),
        store: RunStore | None = None,
        index_dir: str | os.PathLike[str] | None = None,
    ) -> None:
        self.host = host
        self.port = port
        if not is_loopback(host) and not api_key:
            msg = (
                f"binding the collector to {host!r} exposes it beyond this machine; it then needs "
                "an API key (api_key=..., or TELEMETRY_COLLECTOR_API_KEY for the CLI), or bind "
                "127.0.0.1."
            )
            raise ConfigurationError(msg, key="host", value=host)
        self.store = RunStore(db_path, stale_heartbeats) if store is None else store
        """The runs and points (stays open across :meth:`shutdown` / :meth:`start`)."""
        self.ingest = Ingest(self.store, api_key, read_timeout_s, max_body_bytes, response_delay_s)
        """Keys, limits and routes of the protocol (``response_delay_s`` may change live)."""
        self.run_dirs = [os.fspath(p) for p in run_dirs]
        self.index_dir = None if index_dir is None else os.fspath(index_dir)
        self._ui: Any = None
        self._conns: set[Any] = set()
        self._conns_lock = threading.Lock()
        self.stopping = threading.Event()  # tells the dashboard's live streams to end
        self._server: ServerThread | None = None

    # The request settings live on ``ingest``, which the app reads while serving.
    @property
    def response_delay_s(self) -> float:
        """Seconds each request waits before its answer (for tests); lowering it releases them."""
        return self.ingest.response_delay_s

    @response_delay_s.setter
    def response_delay_s(self, value: float) -> None:
        self.ingest.response_delay_s = value

    @property
    def requests_received(self) -> int:
        """Requests seen so far, counted before any delay (lets tests see one in flight)."""
        return self.ingest.requests_received

    @property
    def read_timeout_s(self) -> float:
        """A connection silent this long is closed (a half-sent body gets 408)."""
        return self.ingest.read_timeout_s

    @property
    def max_body_bytes(self) -> int:
        """Largest accepted body."""
        return self.ingest.max_body_bytes

    @property
    def connections(self) -> list[Any]:
        """The sockets accepted and still open (for diagnostics and tests)."""
        with self._conns_lock:
            return list(self._conns)

    @property
    def exposed(self) -> bool:
        """Whether the bound interface reaches beyond this machine."""
        return not is_loopback(self.host)

    def __repr__(self) -> str:
        state = "serving" if self._server else "stopped"
        return (
            f"Collector(url={self.url!r}, {state}, auth={'on' if self.ingest.api_key else 'off'})"
        )

    @property
    def url(self) -> str:
        """Base URL, e.g. ``http://127.0.0.1:8765``."""
        return f"http://{self.host}:{self.port}"

    def _make_server(self) -> ServerThread:
        try:
            from goggles_io.server.ui import make_ui_app  # needs the [ui] extra, like the server
        except ImportError as exc:
            raise missing_ui_extra(exc) from None
        self._ui = make_ui_app(self.store, self.run_dirs, self.stopping, self.index_dir)
        app = CollectorApp(self.ingest, self._ui)
        return ServerThread(app, self.host, self.port, self.read_timeout_s, self._track)

    def start(self) -> Collector:
        """Bind (the same port again after a :meth:`shutdown`) and serve on a daemon thread.

        Raises:
            ImportError: the ``[ui]`` extra (uvicorn, starlette, youplot) is not installed.
        """
        if self._server is not None:
            return self
        server = self._make_server()
        self.stopping.clear()
        try:
            self.port = server.start()
        except BaseException:
            ui, self._ui = self._ui, None
            ui.state.catalog.close()
            raise
        self._server = server
        if self.exposed:
            _logger.warning(
                "collector bound to %s:%d is reachable from other machines; requests need the "
                "API key, and traffic is plain HTTP (put TLS in front for untrusted networks)",
                self.host,
                self.port,
            )
        return self

    def serve_forever(self) -> None:
        """Serve on the calling thread until interrupted (the CLI's mode)."""
        self.start()
        assert self._server is not None
        try:
            while self._server.alive:
                self._server.join(0.5)
        finally:
            self.shutdown()

    def shutdown(self, timeout_s: float = 5.0) -> None:
        """Stop serving and drop open keep-alive connections, like a collector going down."""
        server, self._server = self._server, None
        if server is None:
            return
        self.stopping.set()
        server.stop(timeout_s)
        ui, self._ui = self._ui, None
        if ui is not None:
            ui.state.catalog.close()  # stops its indexing thread, removes a temporary index

    def close(self) -> None:
        """Shut down and close the database."""
        self.shutdown()
        self.store.close()

    def __enter__(self) -> Collector:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- reading back (also used by tests and the example) ------------------------------------
    def runs(self) -> list[dict[str, Any]]:
        """Every registered run with its status, counts and config (see :meth:`RunStore.runs`).

        A ``running`` run silent for ``stale_heartbeats`` of its heartbeat periods is marked
        ``stale`` first (and stored so): its process died, or its finish never got through.
        """
        return self.store.runs()

    def points(self, run_id: str, name: str | None = None) -> list[dict[str, Any]]:
        """The points of one run in sequence order, optionally of one metric."""
        return self.store.points(run_id, name)

    def _track(self, conn: Any, add: bool) -> None:
        with self._conns_lock:
            (self._conns.add if add else self._conns.discard)(conn)
