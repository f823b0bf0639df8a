"""The built-in handlers under robo-goggles' private import path (see the package docstring)."""

from __future__ import annotations

from goggles_io.handlers.console import ConsoleHandler
from goggles_io.handlers.csv import CsvHandler
from goggles_io.handlers.remote import RemoteHandler
from goggles_io.handlers.storage import LocalStorageHandler
from goggles_io.handlers.wandb import WandBHandler

__all__ = ["ConsoleHandler", "CsvHandler", "LocalStorageHandler", "RemoteHandler", "WandBHandler"]
