"""An older revision's code beside this checkout's, for the side-by-side benchmarks."""

from __future__ import annotations

import subprocess
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent

__all__ = ["unpack"]


def unpack(rev: str, into: Path, parts: tuple[str, ...] = ("src",)) -> Path:
    """``rev``'s ``parts`` (folders of the repository) unpacked from git into ``into``."""
    archive = subprocess.run(
        ["git", "-C", str(_ROOT), "archive", rev, *parts], capture_output=True, check=True
    ).stdout
    into.mkdir(parents=True)
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return into
