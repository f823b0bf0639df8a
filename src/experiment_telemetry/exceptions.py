"""Errors raised by ``experiment_telemetry``: each refines a builtin, so callers may catch either."""

from __future__ import annotations

__all__ = [
    "ExperimentTelemetryError",
    "ExperimentTypeError",
    "ExperimentValueError",
    "ReplayError",
    "WorkerError",
]


class ExperimentTelemetryError(Exception):
    """Base class of every error ``experiment_telemetry`` raises."""


class ExperimentValueError(ExperimentTelemetryError, ValueError):
    """An argument has the right type but a bad value; ``value`` holds it."""

    def __init__(self, msg: str, value: object) -> None:
        super().__init__(msg)
        self.value = value


class ExperimentTypeError(ExperimentTelemetryError, TypeError):
    """An argument has the wrong type; ``value`` holds it."""

    def __init__(self, msg: str, value: object) -> None:
        super().__init__(msg)
        self.value = value


class ReplayError(ExperimentTelemetryError, ValueError):
    """A run directory cannot be replayed (missing or damaged event log); ``path`` names it."""

    def __init__(self, msg: str, path: str) -> None:
        super().__init__(msg)
        self.path = path


class WorkerError(ExperimentTelemetryError, RuntimeError):
    """A worker process failed in a way the run cannot go on from: it did not start, every
    worker was lost, or the runtime raised in an episode. ``worker`` and ``episode`` name
    where (``None`` when it does not apply)."""

    def __init__(self, msg: str, worker: int | None, episode: int | None) -> None:
        super().__init__(msg)
        self.worker = worker
        self.episode = episode
