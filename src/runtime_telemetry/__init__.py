"""Typed runtime telemetry over stdlib ``logging``: what runtime code imports, and nothing else."""

from __future__ import annotations

__all__: list[str] = []
