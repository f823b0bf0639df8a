"""Isolation for every goggles_io test: global state is reset before and after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from goggles_io._config import reset_defaults


@pytest.fixture(autouse=True)
def _reset_goggles_io(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Start and end every test with a bus that has never been used.

    Unit tests run on the in-process bus (``GOGGLES_TRANSPORT=inprocess``); the socket
    transport is exercised with real processes in ``tests/goggles_io/transport/``.
    """
    monkeypatch.setenv("GOGGLES_TRANSPORT", "inprocess")
    reset_defaults()
    yield
    reset_defaults()
