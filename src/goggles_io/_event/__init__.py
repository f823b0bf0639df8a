"""DEFINED, CHECKED, ENCODED: what an event is, how a log call's input is checked, its wire form.

``records`` holds :class:`Event`, :class:`Kind` and :class:`ShmRef`; ``validate`` checks and copies
what a log call was given; ``codec`` is the msgpack wire form (no pickle, ADR 0009);
``remote_protocol`` is the JSON the remote sink and the collector exchange. Nothing here knows
a bus, a socket or a handler.
"""

from __future__ import annotations

__all__: list[str] = []
