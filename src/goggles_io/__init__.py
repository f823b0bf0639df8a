"""A robo-goggles-compatible I/O layer: logger, event bus, handlers, histories."""

from __future__ import annotations

__all__: list[str] = []
