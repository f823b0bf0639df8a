"""A robo-goggles-compatible I/O layer: ``import goggles_io as gg`` runs code written for goggles.

Loggers emit :class:`Event` records onto a bus that routes them by scope to handlers, each
with its own bounded queue and worker thread. Heavy pieces (W&B, storage, remote, histories)
are imported on first use.
"""

from __future__ import annotations

import logging as _logging
from logging import CRITICAL, DEBUG, ERROR, INFO, NOTSET, WARNING

from goggles_io._api import attach, call_handler, configure, detach, finish, flush, get_bus
from goggles_io._bus import EventBus, FinishReport
from goggles_io._config import freeze
from goggles_io._data import GogglesLogger
from goggles_io._get_logger import get_logger
from goggles_io._lazy import lazy_exports as _lazy_exports
from goggles_io._logger import TextLogger
from goggles_io._records import Event, Kind
from goggles_io._settings import async_from_env as _async_from_env
from goggles_io._timing import timeit, trace_on_error
from goggles_io.handlers.base import BaseHandler, Handler, register_handler
from goggles_io.handlers.console import ConsoleHandler
from goggles_io.handlers.noop import NoOpHandler

__all__ = [
    "CRITICAL",
    "DEBUG",
    "ERROR",
    "GOGGLES_ASYNC",
    "INFO",
    "NOTSET",
    "WARNING",
    "BaseHandler",
    "ConsoleHandler",
    "CsvHandler",
    "Event",
    "EventBus",
    "FinishReport",
    "GogglesLogger",
    "GracefulShutdown",
    "Handler",
    "Kind",
    "LocalStorageHandler",
    "NoOpHandler",
    "PrettyConfig",
    "RemoteHandler",
    "Subscription",
    "TextLogger",
    "WandBHandler",
    "attach",
    "call_handler",
    "configure",
    "detach",
    "finish",
    "flush",
    "freeze",
    "get_bus",
    "get_logger",
    "load_configuration",
    "register_handler",
    "save_configuration",
    "subscribe",
    "timeit",
    "trace_on_error",
]

# A library attaches only a NullHandler to its stdlib logger: the application decides output.
# "goggles" too: code moved from robo-goggles configures (and checks) that logger name.
for _name in ("goggles_io", "goggles"):
    if not any(isinstance(h, _logging.NullHandler) for h in _logging.getLogger(_name).handlers):
        _logging.getLogger(_name).addHandler(_logging.NullHandler())

# Public name -> module that defines it, imported on first access (keeps import cheap).
_LAZY = {
    "CsvHandler": "goggles_io.handlers.csv",
    "GracefulShutdown": "goggles_io._shutdown",
    "LocalStorageHandler": "goggles_io.handlers.storage",
    "PrettyConfig": "goggles_io.config",
    "RemoteHandler": "goggles_io.handlers.remote",
    "Subscription": "goggles_io._transport.subscription",
    "subscribe": "goggles_io._subscribe",
    "WandBHandler": "goggles_io.handlers.wandb",
    "config": "goggles_io.config",  # a public submodule: gg.config works without importing it
    "load_configuration": "goggles_io.config",
    "media": "goggles_io.media",
    "save_configuration": "goggles_io.config",
}


_lazy_getattr, __dir__ = _lazy_exports(__name__, _LAZY, globals())


def __getattr__(name: str) -> object:
    """``GOGGLES_ASYNC`` is read from the environment on each access; the rest load lazily.

    robo-goggles exposes ``GOGGLES_ASYNC`` as a module constant: whether log calls return
    before delivery. Reading it live keeps it true to the variable the bus will use.
    """
    if name == "GOGGLES_ASYNC":
        return _async_from_env()
    return _lazy_getattr(name)
