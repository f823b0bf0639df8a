"""Every sink goggles_io ships, one module each; heavy ones are imported on first use.

``ConsoleHandler`` and ``NoOpHandler`` load eagerly; ``LocalStorageHandler``, ``CsvHandler``,
``WandBHandler`` and ``RemoteHandler`` load when first accessed, so ``import goggles_io`` stays
cheap and never pulls wandb in. ``Sequences`` and ``SequenceLog`` are the helpers a custom sink
uses to hold each event once across host deaths (ADR 0057).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader as _lazy

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
    "SequenceLog",
    "Sequences",
    "WandBHandler",
    "register_handler",
]

if TYPE_CHECKING:  # what the lazy names are, for type checkers (imported on first use)
    from goggles_io.handlers.csv import CsvHandler
    from goggles_io.handlers.remote import RemoteHandler
    from goggles_io.handlers.sequences import SequenceLog, Sequences
    from goggles_io.handlers.storage import LocalStorageHandler
    from goggles_io.handlers.wandb import WandBHandler

# Heavy sinks load on first access, from the module that defines each.
__getattr__, _, _ = _lazy.attach(
    __name__,
    submod_attrs={
        "csv": ["CsvHandler"],
        "remote": ["RemoteHandler"],
        "sequences": ["SequenceLog", "Sequences"],
        "storage": ["LocalStorageHandler"],
        "wandb": ["WandBHandler"],
    },
)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
