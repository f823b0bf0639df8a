"""ROUTED in one process: the :class:`Transport` interface, the in-process bus and its lanes.

``transport`` is the interface every bus implements (and :class:`FinishReport`); ``bus`` routes
events by scope to one ``lane`` per handler (bounded, its own worker thread); ``settings`` parses
the core ``GOGGLES_*`` knobs. The socket transport (``_transport``) and the broker (``_broker``)
build on this floor; it never imports them.
"""

from __future__ import annotations

__all__: list[str] = []
