"""Optional dependencies, imported where they are needed, with the extra to install when missing.

``import goggles_io`` never imports wandb, pillow, imageio, uvicorn or jax; the code that needs
one calls :func:`import_extra`, whose error names the package and the ``pip install`` line.
"""

from __future__ import annotations

import importlib
from types import ModuleType

__all__ = ["import_extra", "install_hint"]


def install_hint(extra: str) -> str:
    """The command that installs ``extra``: ``pip install 'split-telemetry[<extra>]'``."""
    return f"pip install 'split-telemetry[{extra}]'"


def import_extra(module: str, *, purpose: str, extra: str) -> ModuleType:
    """Import ``module``, or raise ``ImportError`` saying ``purpose`` needs it and how to install it.

    Raises:
        ImportError: ``module`` (or something it imports) is not installed; the message names
            the missing package and the extra, e.g. ``WandBHandler needs wandb (pip install
            'split-telemetry[wandb]')``.
    """
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        missing = exc.name or module.partition(".")[0]
        msg = f"{purpose} needs {missing}: {install_hint(extra)}"
        raise ImportError(msg, name=exc.name) from exc
