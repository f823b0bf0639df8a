"""SERVED AND SHOWN: the collector (HTTP ingest of the remote sink) and the dashboard, one ASGI app.

Needs the ``[ui]`` extra to serve. ``store`` keeps runs and points in SQLite; ``ingest`` checks
keys and routes the remote protocol onto the store; ``asgi`` is the one ASGI application
(ingest + dashboard); ``uvicorn_thread`` serves it on a thread; ``collector`` puts them together;
``ui`` is the dashboard. A :class:`RunStore` subclass that refuses points raises
:class:`ProtocolError` (the status and body the client gets). It lives outside the I/O library's floors (ADR 0024): goggles_io's
logging path never imports it.
"""

from __future__ import annotations

from goggles_io._event.remote_protocol import ProtocolError
from goggles_io.server.collector import Collector, is_loopback
from goggles_io.server.store import RunStore

__all__ = ["Collector", "ProtocolError", "RunStore", "is_loopback"]
