"""A robo-goggles-compatible I/O layer: ``import goggles_io as gg`` runs code written for goggles.

Loggers emit :class:`Event` records onto a bus that routes them by scope to handlers, each
with its own bounded queue and worker thread. Heavy pieces (W&B, storage, remote, histories)
are imported on first use.
"""

from __future__ import annotations

import logging as _logging
from logging import CRITICAL, DEBUG, ERROR, INFO, NOTSET, WARNING
from typing import TYPE_CHECKING

import lazy_loader as _lazy

from goggles_io._api.functions import (
    attach,
    call_handler,
    check_broker,
    configure,
    detach,
    finish,
    flush,
    get_bus,
)
from goggles_io._api.get_logger import get_logger
from goggles_io._api.loggers import TextLogger
from goggles_io._api.media import GogglesLogger
from goggles_io._api.protocols import DataLogger
from goggles_io._api.state import freeze
from goggles_io._api.timing import timeit, trace_on_error
from goggles_io._bus.bus import EventBus
from goggles_io._bus.settings import async_from_env as _async_from_env
from goggles_io._bus.transport import FinishReport
from goggles_io._event.records import Event, Kind
from goggles_io.handlers.base import BaseHandler, Handler, register_handler
from goggles_io.handlers.console import ConsoleHandler
from goggles_io.handlers.noop import NoOpHandler

if TYPE_CHECKING:  # what the lazy names below are, for type checkers (imported on first use)
    from goggles_io import config as config
    from goggles_io import filters
    from goggles_io import media as media
    from goggles_io import shutdown as shutdown
    from goggles_io import types as types
    from goggles_io import validation as validation
    from goggles_io._api.shutdown import GracefulShutdown
    from goggles_io._api.subscribe import subscribe
    from goggles_io._transport.client.subscription import Subscription
    from goggles_io.config import PrettyConfig, load_configuration, save_configuration
    from goggles_io.handlers.csv import CsvHandler
    from goggles_io.handlers.remote import RemoteHandler
    from goggles_io.handlers.storage import LocalStorageHandler
    from goggles_io.handlers.wandb import WandBHandler
    from goggles_io.types import Image, Metrics, Trajectories, Vector, VectorField, Video

    GOGGLES_ASYNC: bool

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
    "DataLogger",
    "Event",
    "EventBus",
    "FinishReport",
    "GogglesLogger",
    "GracefulShutdown",
    "Handler",
    "Image",
    "Kind",
    "LocalStorageHandler",
    "Metrics",
    "NoOpHandler",
    "PrettyConfig",
    "RemoteHandler",
    "Subscription",
    "TextLogger",
    "Trajectories",
    "Vector",
    "VectorField",
    "Video",
    "WandBHandler",
    "attach",
    "call_handler",
    "check_broker",
    "configure",
    "detach",
    "filters",
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

# Names imported on first access, by the module that defines them (keeps ``import`` cheap and
# never pulls wandb in). ``config``, ``filters``, ``media``, ``shutdown``, ``types`` and
# ``validation`` are public submodules: ``gg.filters`` works without importing it.
_SUBMODULES = ["config", "filters", "media", "shutdown", "types", "validation"]
_lazy_getattr, _, _ = _lazy.attach(
    __name__,
    submodules=_SUBMODULES,
    submod_attrs={
        "_api.shutdown": ["GracefulShutdown"],
        "_api.subscribe": ["subscribe"],
        "_transport.client.subscription": ["Subscription"],
        "config": ["PrettyConfig", "load_configuration", "save_configuration"],
        "handlers.csv": ["CsvHandler"],
        "handlers.remote": ["RemoteHandler"],
        "handlers.storage": ["LocalStorageHandler"],
        "handlers.wandb": ["WandBHandler"],
        "types": ["Image", "Metrics", "Trajectories", "Vector", "VectorField", "Video"],
    },
)


def __getattr__(name: str) -> object:
    """``GOGGLES_ASYNC`` is read from the environment on each access; the rest load lazily.

    robo-goggles exposes ``GOGGLES_ASYNC`` as a module constant: whether log calls return
    before delivery. Reading it live keeps it true to the variable the bus will use.
    """
    if name == "GOGGLES_ASYNC":
        return _async_from_env()
    return _lazy_getattr(name)


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_SUBMODULES))
