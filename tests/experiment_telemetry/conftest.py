"""Isolation for experiment_telemetry tests: in-process goggles_io, restored logging state."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest

from goggles_io._config import reset_defaults
from runtime_telemetry import Subscriber, configure

_ROOTS = ("telemetry", "snapshots")


def _telemetry_loggers() -> dict[str, logging.Logger]:
    names = [
        name
        for name in logging.root.manager.loggerDict
        if name in _ROOTS or name.startswith(("telemetry.", "snapshots."))
    ]
    return {name: logging.getLogger(name) for name in names}


@pytest.fixture(autouse=True)
def _isolate(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Run goggles_io in-process and fresh; restore telemetry loggers afterwards."""
    monkeypatch.setenv("GOGGLES_TRANSPORT", "inprocess")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    reset_defaults()
    saved = {
        name: (logger.level, list(logger.handlers)) for name, logger in _telemetry_loggers().items()
    }
    configure({"telemetry": "INFO"})
    yield
    reset_defaults()
    for name, logger in _telemetry_loggers().items():
        level, handlers = saved.get(name, (logging.NOTSET, []))
        for handler in logger.handlers:
            if handler not in handlers and isinstance(handler, Subscriber):
                handler.close()
        logger.handlers[:] = handlers
        logger.setLevel(level)
