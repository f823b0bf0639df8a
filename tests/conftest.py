"""Session-wide isolation: the dashboard's metric index goes to a temporary cache directory.

``telemetry ui`` keeps its index under ``$XDG_CACHE_HOME/split-telemetry/ui-index``; tests (and
the servers they start as subprocesses, which inherit the variable) must not fill the user's.

Also marks the README's quick subset (``python3 -m pytest -m quick``): see :data:`QUICK`.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

QUICK = (
    "runtime_telemetry",
    "experiment_telemetry/aggregators",
    "experiment_telemetry/transforms",
    "experiment_telemetry/test_",
    "goggles_io/api",
    "goggles_io/bus",
    "goggles_io/config",
    "goggles_io/delivery",
    "goggles_io/event",
    "goggles_io/filters",
    "goggles_io/history",
    "goggles_io/media",
    "goggles_io/runs",
    "goggles_io/util",
    "goggles_io/test_",
    "test_architecture.py",
    "test_doc_snippets.py",
    "test_lazy_names_typed.py",
    "test_nonfinite_json.py",
    "test_readme.py",
)
"""Paths under ``tests/`` (prefixes) whose tests make the quick subset, unless marked ``slow``:
the in-process floors of each package, about 2 minutes on 2 cores. Left out: what starts
processes, servers or browsers (transport, broker, server, handlers' HTTP sinks, workers, the
CLI and demo, e2e), compat (W&B offline), and the mypy baseline check."""
NOT_QUICK = ("goggles_io/bus/test_finish_waits.py",)
"""Inside :data:`QUICK` but left out: a 200,000-event slow sink alone takes ~18 s."""
_TESTS = Path(__file__).parent


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark the quick subset (``-m quick``); the full suite runs as before."""
    quick = pytest.mark.quick
    for item in items:
        try:
            where = item.path.relative_to(_TESTS).as_posix()
        except ValueError:
            continue
        if (
            where.startswith(QUICK)
            and not where.startswith(NOT_QUICK)
            and item.get_closest_marker("slow") is None
        ):
            item.add_marker(quick)


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
