"""Isolation for experiment_telemetry tests: in-process goggles_io, restored logging state."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from goggles_io.testing import reset_defaults
from logging_isolation import restored_telemetry_loggers
from runtime_telemetry import configure


@pytest.fixture(autouse=True)
def _isolate(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run goggles_io in-process and fresh; restore telemetry loggers afterwards."""
    monkeypatch.setenv("GOGGLES_TRANSPORT", "inprocess")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    reset_defaults()
    with restored_telemetry_loggers():
        configure({"telemetry": "INFO"})
        yield
        reset_defaults()
