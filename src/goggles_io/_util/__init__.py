"""Leaves every floor may use: env names, the stderr reporter, secrets, plain YAML, kv files.

Nothing here imports another part of goggles_io except :mod:`goggles_io.exceptions`.
"""

from __future__ import annotations

__all__: list[str] = []
