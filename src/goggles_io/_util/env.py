"""Every environment variable goggles_io reads, named once, and the one way each kind is parsed.

The settings readers (``_bus/settings.py``, ``_transport/settings.py``, ``_broker/settings.py``,
``_util/delivery.py``, the remote sink) import their names from here, so ``grep ENV_`` in this file lists them all;
``docs/transport.md`` documents each with its default. Precedence everywhere is argument, then
variable, then default; a malformed value raises :class:`ConfigurationError` naming the variable.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TypeVar

from goggles_io.exceptions import ConfigurationError

__all__ = [
    "ENV_ASYNC",
    "ENV_BLOCK_TIMEOUT",
    "ENV_BROKER",
    "ENV_BROKER_BYTES",
    "ENV_BROKER_CLAIM_IDLE_MS",
    "ENV_BROKER_FORWARD",
    "ENV_BROKER_GROUP",
    "ENV_BROKER_MAXLEN",
    "ENV_BROKER_RUN",
    "ENV_CACHE_HOME",
    "ENV_CALLER_INFO",
    "ENV_DEDICATED_HOST",
    "ENV_FINISH_STALL",
    "ENV_HOST_IDLE_TIMEOUT",
    "ENV_HOST_IMPORTS",
    "ENV_HOST_LOG",
    "ENV_QUEUE_BYTES",
    "ENV_QUEUE_SIZE",
    "ENV_REMOTE_API_KEY",
    "ENV_REMOTE_OFF",
    "ENV_REMOTE_URL",
    "ENV_SHM_BYTES",
    "ENV_SHM_THRESHOLD",
    "ENV_SHUTDOWN_TIMEOUT",
    "ENV_SOCKET",
    "ENV_SPOOL_BYTES",
    "ENV_SPOOL_DIR",
    "ENV_SYSTEM_METRICS",
    "ENV_TRANSPORT",
    "ENV_VERBOSE",
    "ENV_WHEN_FULL",
    "read_bool",
    "read_dotenv",
    "read_number",
    "read_setting",
    "read_switch",
    "read_text",
]

# -- the bus (``_bus/settings.py``) -----------------------------------------------------------
ENV_ASYNC = "GOGGLES_ASYNC"
ENV_QUEUE_SIZE = "GOGGLES_QUEUE_SIZE"
ENV_QUEUE_BYTES = "GOGGLES_QUEUE_BYTES"
ENV_VERBOSE = "GOGGLES_VERBOSE"
ENV_CALLER_INFO = "GOGGLES_CALLER_INFO"
ENV_SHUTDOWN_TIMEOUT = "GOGGLES_SHUTDOWN_TIMEOUT"
ENV_FINISH_STALL = "GOGGLES_FINISH_STALL"  # ``_delivery/drain.py``

# -- what every full buffer does (``_util/delivery.py``, ADR 0025) ----------------------------
ENV_WHEN_FULL = "GOGGLES_WHEN_FULL"
ENV_SPOOL_BYTES = "GOGGLES_SPOOL_BYTES"
ENV_SPOOL_DIR = "GOGGLES_SPOOL_DIR"
ENV_BLOCK_TIMEOUT = "GOGGLES_BLOCK_TIMEOUT"

# -- the socket transport (``_transport/settings.py``) ----------------------------------------
ENV_TRANSPORT = "GOGGLES_TRANSPORT"
ENV_SOCKET = "GOGGLES_SOCKET"
ENV_SHM_THRESHOLD = "GOGGLES_SHM_THRESHOLD"
ENV_SHM_BYTES = "GOGGLES_SHM_BYTES"
ENV_DEDICATED_HOST = "GOGGLES_DEDICATED_HOST"
ENV_HOST_IMPORTS = "GOGGLES_HOST_IMPORTS"
ENV_HOST_IDLE_TIMEOUT = "GOGGLES_HOST_IDLE_TIMEOUT"
ENV_HOST_LOG = "GOGGLES_HOST_LOG"

# -- across machines (``_broker/settings.py``) -------------------------------------------------
ENV_BROKER = "GOGGLES_BROKER"
ENV_BROKER_RUN = "GOGGLES_BROKER_RUN"
ENV_BROKER_MAXLEN = "GOGGLES_BROKER_MAXLEN"
ENV_BROKER_BYTES = "GOGGLES_BROKER_BYTES"
ENV_BROKER_GROUP = "GOGGLES_BROKER_GROUP"
ENV_BROKER_CLAIM_IDLE_MS = "GOGGLES_BROKER_CLAIM_IDLE_MS"
ENV_BROKER_FORWARD = "GOGGLES_BROKER_FORWARD"

# -- the remote sink (``handlers/remote.py``; also read from ``.env``) ------------------------
ENV_REMOTE_URL = "TELEMETRY_REMOTE_URL"
ENV_REMOTE_API_KEY = "TELEMETRY_REMOTE_API_KEY"
ENV_REMOTE_OFF = "TELEMETRY_NO_REMOTE"

# -- a run's system sampler (``runs/writer.py``, ``runs/system.py``) ----------------------------
ENV_SYSTEM_METRICS = "TELEMETRY_SYSTEM_METRICS"  # 0/off: RunContext samples nothing by default

# -- the dashboard (``server/ui/_sources.py``) --------------------------------------------------
ENV_CACHE_HOME = "XDG_CACHE_HOME"  # the index lives in $XDG_CACHE_HOME/split-telemetry/ui-index

_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})
_N = TypeVar("_N", int, float)


def read_text(env: Mapping[str, str], key: str) -> str | None:
    """The variable stripped, or ``None`` when unset or blank."""
    return env.get(key, "").strip() or None


def read_bool(env: Mapping[str, str], key: str, default: bool) -> bool:
    """``1/0/true/false/yes/no/on/off`` (any case); unset or blank gives ``default``."""
    raw = read_text(env, key)
    if raw is None:
        return default
    value = raw.lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    msg = f"{key} must be one of 1/0/true/false/yes/no/on/off (got {env[key]!r})."
    raise ConfigurationError(msg, key=key, value=env[key])


def read_number(env: Mapping[str, str], key: str, default: _N, *, minimum: _N | None = None) -> _N:
    """An ``int`` or ``float`` (the type of ``default``) of at least ``minimum``.

    Without ``minimum`` the value must be positive. Unset or blank gives ``default``.
    """
    raw = read_text(env, key)
    if raw is None:
        return default
    kind = type(default)
    try:
        value = kind(raw)
    except ValueError:
        value = None
    ok = value is not None and (value > 0 if minimum is None else value >= minimum)
    if not ok:
        bound = "positive" if minimum is None else f">= {minimum}"
        msg = (
            f"{key} must be a {bound} {kind.__name__} (got {env[key]!r}); unset it for {default!r}."
        )
        raise ConfigurationError(msg, key=key, value=env[key])
    return value  # type: ignore[return-value]


def read_switch(env: Mapping[str, str], key: str) -> bool:
    """A loose on-switch (``TELEMETRY_NO_REMOTE=1``): true for 1/true/yes/on, false otherwise."""
    return (read_text(env, key) or "").lower() in _TRUE


def read_dotenv() -> dict[str, str | None]:
    """The ``.env`` file found from the current directory upwards, as a dict (``{}`` if none).

    ``os.environ`` is never modified: a shared ``.env`` is read, not applied.
    """
    import dotenv

    path = dotenv.find_dotenv(usecwd=True)
    return dict(dotenv.dotenv_values(path)) if path else {}


def read_setting(explicit: str | None, key: str, dotenv: Mapping[str, str | None]) -> str | None:
    """The argument, else the variable, else its ``.env`` entry, else ``None``."""
    if explicit:
        return explicit
    return os.environ.get(key) or dotenv.get(key) or None
