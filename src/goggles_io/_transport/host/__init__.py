"""The host's side of the socket transport: one host per socket path owns the handlers.

``server.py`` runs the host (its ``Host`` and the dedicated process's ``main``); ``acks.py``,
``departures.py``, ``subscriber.py`` and ``heap.py`` serve it; ``specs.py`` builds a handler
from a client's words; ``leftover_delivery.py`` and ``leftover_deliverer.py`` deliver what a
dead producer left, into handlers of their own. Nothing here imports the client side
(``../client/``). ``python -m goggles_io._transport.host`` runs the dedicated host
(``__main__.py``): that command line is how a host process is recognised (the election's lock
file, the tests' kills), so the name stays this package's.
"""

from __future__ import annotations

from goggles_io._transport.host.server import Host, main

__all__ = ["Host", "main"]
