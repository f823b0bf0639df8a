"""The producer's side of the socket transport: what a process that logs runs.

``socket_client.py`` is the ``Transport`` a process gets (``SocketClient``); its pipe's batches
are framed by ``batching.py`` and carried by ``courier.py`` over ``link.py``; ``election.py``
finds or becomes the host; ``operations.py`` and ``placement.py`` attach handlers here or
there; ``pools.py`` stages big arrays; ``leftovers.py`` keeps what ``finish()`` could not
deliver; ``subscription.py`` is a live subscriber's end. The wire files both sides share sit
one folder up (``framing.py``, ``settings.py``, ``identity.py``, ``shm.py``, ``diskpool.py``,
``ring.py``, ``leftover_folder.py``).
"""

from __future__ import annotations

__all__: list[str] = []
