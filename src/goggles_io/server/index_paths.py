"""Where the dashboard keeps its index: the cache folder, and one folder per run or database.

Apart from the dashboard's modules so that what starts before the web stack is imported (the
text digested ahead, ADR 0087) finds an index kept from an earlier start.
"""

from __future__ import annotations

import hashlib
import os
from pathlib import Path

from goggles_io._util.env import ENV_CACHE_HOME

__all__ = ["default_index_dir", "index_folder"]


def default_index_dir() -> Path:
    """``$XDG_CACHE_HOME/split-telemetry/ui-index`` (``~/.cache`` when unset)."""
    base = os.environ.get(ENV_CACHE_HOME) or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "split-telemetry" / "ui-index"


def index_folder(root: Path, kind: str, owner: str) -> Path:
    """Where the index of ``owner`` (a run directory or database path) lives under ``root``."""
    return root / kind / hashlib.sha1(owner.encode("utf-8", "surrogatepass")).hexdigest()[:20]
