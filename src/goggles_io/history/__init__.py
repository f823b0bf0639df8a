"""Device-resident histories for JAX pipelines: fixed-size (B, T, *shape) windows kept on device.

Import this module by path (``from goggles_io.history import ...``); it needs jax, installed with
``pip install 'split-telemetry[jax]'``. The API is robo-goggles': ``spec`` (field specs),
``buffer`` (create, update), ``utils`` (peek, slice, host/device moves), ``types`` (aliases).
Two layouts share it: the shift layout (a dict of arrays, newest entry last along T, as
robo-goggles has it) and the ring layout (:class:`RingHistory`, one slot written per update,
O(1) in T, read through ordered views). ``log_history`` sends a field to a goggles_io logger.
"""

from __future__ import annotations

try:
    import jax  # noqa: F401
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    msg = "goggles_io.history needs jax: pip install 'split-telemetry[jax]'"
    raise ImportError(msg) from exc

from goggles_io.history.bridge import log_history
from goggles_io.history.buffer import create_history, update_history
from goggles_io.history.ring import RingHistory, ordered
from goggles_io.history.spec import HistoryFieldSpec, HistorySpec
from goggles_io.history.utils import peek_last, slice_history, to_device, to_host

__all__ = [
    "HistoryFieldSpec",
    "HistorySpec",
    "RingHistory",
    "create_history",
    "log_history",
    "ordered",
    "peek_last",
    "slice_history",
    "to_device",
    "to_host",
    "update_history",
]
