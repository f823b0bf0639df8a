"""The core ``GOGGLES_*`` environment knobs, parsed in one place (argument > env > default).

Kept apart from :mod:`goggles_io._config` (which holds the process state and builds the
transport) so that the transport can read settings without importing what builds it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import attrs

from goggles_io.exceptions import ConfigurationError

__all__ = [
    "ENV_ASYNC",
    "ENV_CALLER_INFO",
    "ENV_QUEUE_BYTES",
    "ENV_QUEUE_SIZE",
    "ENV_SHUTDOWN_TIMEOUT",
    "ENV_VERBOSE",
    "Settings",
    "async_from_env",
    "parse_bool",
    "read_settings",
]

ENV_ASYNC = "GOGGLES_ASYNC"
ENV_QUEUE_SIZE = "GOGGLES_QUEUE_SIZE"
ENV_QUEUE_BYTES = "GOGGLES_QUEUE_BYTES"
ENV_VERBOSE = "GOGGLES_VERBOSE"
ENV_CALLER_INFO = "GOGGLES_CALLER_INFO"
ENV_SHUTDOWN_TIMEOUT = "GOGGLES_SHUTDOWN_TIMEOUT"

_DEFAULT_QUEUE_SIZE = 65_536
_DEFAULT_QUEUE_BYTES = 16 * 1024 * 1024
_DEFAULT_SHUTDOWN_TIMEOUT_S = 10.0
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@attrs.frozen(kw_only=True)
class Settings:
    """Parsed environment knobs (argument > env variable > default)."""

    async_mode: bool = True
    queue_size: int = _DEFAULT_QUEUE_SIZE
    queue_bytes: int = _DEFAULT_QUEUE_BYTES
    caller_info: bool = True
    verbose: bool = False
    shutdown_timeout_s: float = _DEFAULT_SHUTDOWN_TIMEOUT_S


def parse_bool(env: Mapping[str, str], key: str, default: bool) -> bool:
    raw = env.get(key)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    msg = f"{key} must be one of 1/0/true/false/yes/no/on/off (got {raw!r})."
    raise ConfigurationError(msg, key=key, value=raw)


def _parse_number(env: Mapping[str, str], key: str, default: float, kind: type) -> Any:
    raw = env.get(key)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = kind(raw.strip())
    except ValueError:
        value = None
    if value is None or value <= 0:
        msg = f"{key} must be a positive {kind.__name__} (got {raw!r}); unset it for {default!r}."
        raise ConfigurationError(msg, key=key, value=raw)
    return value


def async_from_env() -> bool:
    """``GOGGLES_ASYNC`` as a bool for the module constant; a malformed value reads as the default.

    Never raises, so a typo cannot break ``import goggles_io``; :func:`get_settings` still
    reports it when the bus starts.
    """
    try:
        return parse_bool(os.environ, ENV_ASYNC, True)
    except ConfigurationError:
        return True


def read_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Parse the ``GOGGLES_*`` variables; a malformed value raises naming the variable."""
    env = os.environ if env is None else env
    return Settings(
        async_mode=parse_bool(env, ENV_ASYNC, True),
        queue_size=_parse_number(env, ENV_QUEUE_SIZE, _DEFAULT_QUEUE_SIZE, int),
        queue_bytes=_parse_number(env, ENV_QUEUE_BYTES, _DEFAULT_QUEUE_BYTES, int),
        caller_info=parse_bool(env, ENV_CALLER_INFO, True),
        verbose=parse_bool(env, ENV_VERBOSE, False),
        shutdown_timeout_s=_parse_number(
            env, ENV_SHUTDOWN_TIMEOUT, _DEFAULT_SHUTDOWN_TIMEOUT_S, float
        ),
    )
