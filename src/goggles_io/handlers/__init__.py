"""Every sink goggles_io ships, one module each; heavy ones are imported on first use.

``ConsoleHandler`` and ``NoOpHandler`` load eagerly; ``LocalStorageHandler``, ``CsvHandler``,
``WandBHandler`` and ``RemoteHandler`` load when first accessed, so ``import goggles_io`` stays
cheap and never pulls wandb in.
"""

from __future__ import annotations

from goggles_io._lazy import lazy_exports as _lazy_exports
from goggles_io.handlers.base import BaseHandler, Handler, register_handler
from goggles_io.handlers.console import ConsoleHandler
from goggles_io.handlers.noop import NoOpHandler

__all__ = [
    "BaseHandler",
    "ConsoleHandler",
    "CsvHandler",
    "Handler",
    "LocalStorageHandler",
    "NoOpHandler",
    "RemoteHandler",
    "WandBHandler",
    "register_handler",
]

# Public name -> submodule that defines it (owned by other modules; imported lazily).
_LAZY = {
    "CsvHandler": "goggles_io.handlers.csv",
    "LocalStorageHandler": "goggles_io.handlers.storage",
    "RemoteHandler": "goggles_io.handlers.remote",
    "WandBHandler": "goggles_io.handlers.wandb",
}


__getattr__, __dir__ = _lazy_exports(__name__, _LAZY, globals())
