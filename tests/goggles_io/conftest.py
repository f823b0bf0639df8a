"""Isolation for every goggles_io test: global state is reset before and after each test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from goggles_io._config import reset_defaults


@pytest.fixture(autouse=True)
def _reset_goggles_io() -> Iterator[None]:
    """Start and end every test with a bus that has never been used."""
    reset_defaults()
    yield
    reset_defaults()
