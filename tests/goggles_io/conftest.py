"""Isolation for every goggles_io test: global state is reset before and after each test."""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

import goggles_io as gg
from goggles_io.testing import MemoryHandler, reset_defaults


@pytest.fixture(autouse=True)
def _reset_goggles_io(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Start and end every test with a bus that has never been used.

    Unit tests run on the in-process bus (``GOGGLES_TRANSPORT=inprocess``); the socket
    transport is exercised with real processes in ``tests/goggles_io/transport/``.
    """
    monkeypatch.setenv("GOGGLES_TRANSPORT", "inprocess")
    spool = tempfile.mkdtemp(prefix="ggspool-")
    monkeypatch.setenv("GOGGLES_SPOOL_DIR", spool)  # private: concurrent runs never meet
    reset_defaults()
    yield
    reset_defaults()
    left = [p.name for p in Path(spool).glob(f"p{os.getpid()}-*")]
    shutil.rmtree(spool, ignore_errors=True)
    assert [] == left, "a spool folder of this process outlived finish()"


@pytest.fixture
def spool_dir() -> Path:
    """This test's private ``GOGGLES_SPOOL_DIR``."""
    return Path(os.environ["GOGGLES_SPOOL_DIR"])


@pytest.fixture
def mem() -> MemoryHandler:
    """A MemoryHandler attached on ``global`` (and so on every ``global.*`` scope)."""
    handler = MemoryHandler(name="mem")
    gg.attach(handler, scopes=["global"])
    return handler
