"""Shared set-up of the helper scripts: install the socket transport and the test sink."""

from __future__ import annotations

from jsonl_sink import JsonlSink

import goggles_io as gg
from goggles_io._api.state import set_transport_factory
from goggles_io._transport.client.socket_client import SocketClient
from goggles_io._transport.settings import read_transport_settings

__all__ = ["attach_sink", "use_socket"]


def use_socket() -> None:
    """Route this process through the socket transport (explicitly, whatever the default)."""
    set_transport_factory(lambda settings: SocketClient(settings, read_transport_settings()))


def attach_sink(path: str, delay_s: float = 0.0) -> None:
    """Attach the JSONL test sink on ``global`` (first registration wins across processes)."""
    gg.attach(JsonlSink(path, delay_s=delay_s), scopes=["global"])
