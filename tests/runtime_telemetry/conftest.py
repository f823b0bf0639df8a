"""Isolation for runtime_telemetry tests: each test leaves stdlib logging as it found it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from logging_isolation import restored_telemetry_loggers


@pytest.fixture(autouse=True)
def _restore_logging_state() -> Iterator[None]:
    """Restore levels, handlers, propagation and disabled flags of telemetry.* and snapshots.*."""
    with restored_telemetry_loggers():
        yield
