"""Two telemetry namespaces in one ``telemetry.`` tree: Monty's and ours, each working as designed.

Monty installs a logger factory (``tbp.monty.telemetry``) that makes every logger whose name
starts with ``telemetry.`` a non-propagating ``TelemetryPublisher``. runtime_telemetry's
emitters use the same prefix (``telemetry.<module>``) and rely on propagation: subscribers
(the event log, the aggregators) sit on the ``telemetry`` root. An emitter created after Monty
was imported (the step hook's, the stats stream's) would otherwise reach no subscriber.

So the adapter gives propagation back to every ``telemetry.*`` logger outside Monty's own
subtree (``telemetry.tbp.``), both those that exist and those created later (a wrapper in
front of Monty's factory). Monty's own loggers are left exactly as Monty makes them: they
reach only the handlers its telemetry config declares.
"""

from __future__ import annotations

import logging
import threading
from typing import Any

__all__ = ["MONTY_PREFIX", "share_telemetry_namespace"]

MONTY_PREFIX = "telemetry.tbp."
"""Monty's telemetry loggers: ``telemetry.tbp.monty.<module>``."""
_OURS = "telemetry."
_lock = threading.Lock()


def _give_back(logger: logging.Logger) -> None:
    name = logger.name
    if name.startswith(_OURS) and not name.startswith(MONTY_PREFIX) and not logger.propagate:
        logger.propagate = True


class _PropagatingFactory(logging.Logger):
    """Stands in front of the logger class the manager had (Monty's factory): same loggers,
    propagation given back outside Monty's subtree. Never instantiated: ``__new__`` returns
    the logger the wrapped class makes (a ``Logger`` subclass, as the manager requires)."""

    _wrapped: Any = None

    def __new__(cls, name: str, *args: Any, **kwargs: Any) -> logging.Logger:  # type: ignore[misc]
        wrapped = cls._wrapped or logging.getLoggerClass()
        logger: logging.Logger = wrapped(name, *args, **kwargs)
        _give_back(logger)
        return logger


def share_telemetry_namespace() -> None:
    """Make ``telemetry.*`` loggers outside ``telemetry.tbp.`` propagate again, now and later.

    Idempotent; a no-op on a logger tree Monty never touched.
    """
    manager = logging.Logger.manager
    with _lock:
        current = manager.loggerClass
        if current is not _PropagatingFactory and current is not None:
            _PropagatingFactory._wrapped = current
            manager.setLoggerClass(_PropagatingFactory)
        for logger in list(manager.loggerDict.values()):
            if isinstance(logger, logging.Logger):
                _give_back(logger)
