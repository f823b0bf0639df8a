"""``configure()``: set telemetry and snapshot levels per module through ``logging.config``."""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from runtime_telemetry._emitter import EVENTS_ROOT, SNAPSHOTS_ROOT
from runtime_telemetry.exceptions import ConfigurationError, TelemetryTypeError

__all__ = ["configure"]

_ROOTS = (EVENTS_ROOT, SNAPSHOTS_ROOT)
_KNOWN_LEVELS = ("OFF", "CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG", "TRACE", "NOTSET")
LevelConfig = Mapping[str, str | int]


def configure(config: LevelConfig | str | os.PathLike[str]) -> dict[str, int]:
    """Set levels of ``telemetry.*`` / ``snapshots.*`` loggers from a mapping or a YAML file.

    Keys are logger names (``"telemetry"``, ``"telemetry.robot.arm"``, ``"snapshots"``);
    values are level names (any case, including ``"TRACE"`` and ``"OFF"``) or ints. A level
    set on a package applies to its whole subtree, as in stdlib logging. The levels go through
    ``logging.config.dictConfig`` in incremental mode, so handlers and other loggers are left
    alone. Everything is validated before anything changes.

    Returns:
        The levels applied, by logger name.

    Raises:
        ConfigurationError: (a ``ValueError``) unknown level name, or a logger outside the two
            telemetry roots; nothing is changed.
        TelemetryTypeError: ``config`` is neither a mapping nor a path.
    """
    if isinstance(config, (str, os.PathLike)):
        config = _load_yaml(Path(config))
    if not isinstance(config, Mapping):
        msg = f"config must be a mapping of logger name to level, or a YAML path (got {config!r})."
        raise TelemetryTypeError(msg, config)
    levels = {_check_name(name, level): _check_level(name, level) for name, level in config.items()}
    import logging.config  # lazily: it pulls in sockets and handlers, ~10 ms of import time

    logging.config.dictConfig(
        {
            "version": 1,
            "incremental": True,
            "loggers": {name: {"level": level} for name, level in levels.items()},
        }
    )
    return levels


def _load_yaml(path: Path) -> Any:
    import yaml  # lazily: only configure-from-file needs it

    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"cannot read telemetry config {str(path)!r}: {exc.strerror}."
        raise ConfigurationError(msg, str(path), None) from None
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        msg = f"telemetry config {str(path)!r} is not valid YAML: {exc}"
        raise ConfigurationError(msg, str(path), None) from None
    if not isinstance(data, Mapping):
        msg = (
            f"telemetry config {str(path)!r} must hold a mapping of logger name to level "
            f"(got {data!r})."
        )
        raise ConfigurationError(msg, str(path), data)
    # YAML 1.1 reads an unquoted OFF as false; in this file it can only mean the OFF level.
    return {name: "OFF" if level is False else level for name, level in data.items()}


def _check_name(name: object, level: object) -> str:
    if not isinstance(name, str) or not any(
        name == root or name.startswith(root + ".") for root in _ROOTS
    ):
        msg = (
            f"logger name must be 'telemetry', 'snapshots' or start with one of them and a dot "
            f"(got {name!r} -> {level!r}); e.g. 'telemetry.{name}'."
        )
        raise ConfigurationError(msg, name, level)
    return name


def _check_level(name: str, level: object) -> int:
    if isinstance(level, int) and not isinstance(level, bool):
        if level < 0:
            msg = f"level for {name!r} must be >= 0 (got {level!r})."
            raise ConfigurationError(msg, name, level)
        return level
    if isinstance(level, str):
        number = logging.getLevelName(level.strip().upper())
        if isinstance(number, int):
            return number
    msg = f"unknown level {level!r} for {name!r}; use an int or one of {_KNOWN_LEVELS!r}."
    raise ConfigurationError(msg, name, level)
