"""The bus's ``GOGGLES_*`` knobs (names in :mod:`goggles_io._util.env`): argument > env > default.

Kept apart from :mod:`goggles_io._api.state` (which holds the process state and builds the
transport) so that the transport can read settings without importing what builds it.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

import attrs

from goggles_io._delivery.policy import DeliveryPolicy, read_delivery_policy
from goggles_io._util.env import (
    ENV_ASYNC,
    ENV_CALLER_INFO,
    ENV_QUEUE_BYTES,
    ENV_QUEUE_SIZE,
    ENV_SHUTDOWN_TIMEOUT,
    ENV_VERBOSE,
    read_bool,
    read_number,
)
from goggles_io.exceptions import ConfigurationError

__all__ = ["Settings", "async_from_env", "read_settings"]

_DEFAULT_QUEUE_SIZE = 65_536
_DEFAULT_QUEUE_BYTES = 16 * 1024 * 1024
_DEFAULT_SHUTDOWN_TIMEOUT_S = 10.0


@attrs.frozen(kw_only=True)
class Settings:
    """Parsed environment knobs (argument > env variable > default)."""

    async_mode: bool = True
    queue_size: int = _DEFAULT_QUEUE_SIZE
    queue_bytes: int = _DEFAULT_QUEUE_BYTES
    caller_info: bool = True
    verbose: bool = False
    shutdown_timeout_s: float = _DEFAULT_SHUTDOWN_TIMEOUT_S
    delivery: DeliveryPolicy = attrs.field(factory=DeliveryPolicy)


def async_from_env() -> bool:
    """``GOGGLES_ASYNC`` as a bool for the module constant; a malformed value reads as the default.

    Never raises, so a typo cannot break ``import goggles_io``; :func:`get_settings` still
    reports it when the bus starts.
    """
    try:
        return read_bool(os.environ, ENV_ASYNC, True)
    except ConfigurationError:
        return True


def read_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Parse the ``GOGGLES_*`` variables; a malformed value raises naming the variable."""
    env = os.environ if env is None else env
    return Settings(
        async_mode=read_bool(env, ENV_ASYNC, True),
        queue_size=read_number(env, ENV_QUEUE_SIZE, _DEFAULT_QUEUE_SIZE),
        queue_bytes=read_number(env, ENV_QUEUE_BYTES, _DEFAULT_QUEUE_BYTES),
        caller_info=read_bool(env, ENV_CALLER_INFO, True),
        verbose=read_bool(env, ENV_VERBOSE, False),
        shutdown_timeout_s=read_number(env, ENV_SHUTDOWN_TIMEOUT, _DEFAULT_SHUTDOWN_TIMEOUT_S),
        delivery=read_delivery_policy(env),
    )
