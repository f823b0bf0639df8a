"""robo-goggles' ``goggles.shutdown``: :class:`GracefulShutdown`, by its public module path."""

from __future__ import annotations

from goggles_io._api.shutdown import GracefulShutdown

__all__ = ["GracefulShutdown"]
