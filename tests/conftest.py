"""Session-wide isolation: the dashboard's metric index goes to a temporary cache directory.

``telemetry ui`` keeps its index under ``$XDG_CACHE_HOME/split-telemetry/ui-index``; tests (and
the servers they start as subprocesses, which inherit the variable) must not fill the user's.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True, scope="session")
def _private_cache_home() -> Iterator[None]:
    """Point ``XDG_CACHE_HOME`` at a fresh directory for the whole session, removed after."""
    folder = tempfile.mkdtemp(prefix="telemetry-tests-cache-")
    old = os.environ.get("XDG_CACHE_HOME")
    os.environ["XDG_CACHE_HOME"] = folder
    yield
    if old is None:
        os.environ.pop("XDG_CACHE_HOME", None)
    else:
        os.environ["XDG_CACHE_HOME"] = old
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True, scope="session")
def _no_system_sampler_by_default() -> Iterator[None]:
    """``RunContext`` samples CPU/memory into ``system/log.jsonl`` by default (ADR 0066); tests
    that count a run's metrics or files would see its lines appear or not by timing. Off for the
    session (subprocesses inherit it); the sampler's own tests turn it on explicitly."""
    old = os.environ.get("TELEMETRY_SYSTEM_METRICS")
    os.environ["TELEMETRY_SYSTEM_METRICS"] = "0"
    yield
    if old is None:
        os.environ.pop("TELEMETRY_SYSTEM_METRICS", None)
    else:
        os.environ["TELEMETRY_SYSTEM_METRICS"] = old
