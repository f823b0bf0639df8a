"""The old public path of the collector: ``from goggles_io.collector import Collector`` works.

The collector now lives in :mod:`goggles_io.server` (ADR 0024).
"""

from __future__ import annotations

from goggles_io.server.collector import Collector, is_loopback

__all__ = ["Collector", "is_loopback"]
