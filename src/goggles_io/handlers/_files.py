"""File helpers shared by the file-writing handlers (``storage``, ``csv``)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["ends_without_newline"]


def ends_without_newline(path: Path) -> bool:
    """Whether ``path`` ends in a torn line (a writer died mid-line); ``False`` if absent or empty."""
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            if handle.tell() == 0:
                return False
            handle.seek(-1, os.SEEK_END)
            return handle.read(1) != b"\n"
    except FileNotFoundError:
        return False
