"""Other loggers' APIs over goggles_io: scripts written for them log here with one import changed.

Each submodule is imported only when asked for (``import goggles_io.compat.wandb as wandb``),
so importing this package costs nothing and pulls in no optional dependency.
"""

from __future__ import annotations

__all__: list[str] = []
