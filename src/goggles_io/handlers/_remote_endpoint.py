"""Where a remote sink sends (its collector URL and API key, or nothing), and its checked sizes.

Resolved once, when the handler is constructed, in the process that constructs it: the
argument first, then the environment, then a ``.env`` file found from the current directory
upwards (``os.environ`` is never modified). Kept apart from :mod:`goggles_io.handlers.remote`,
which batches and queues points, so that module reads as the sink alone.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from typing import Any
from urllib.parse import SplitResult, urlsplit

import attrs

from goggles_io._event.remote_protocol import MAX_BODY_BYTES
from goggles_io._util.env import (
    ENV_REMOTE_API_KEY,
    ENV_REMOTE_OFF,
    ENV_REMOTE_URL,
    read_dotenv,
    read_setting,
    read_switch,
)
from goggles_io._util.secret import Secret
from goggles_io.exceptions import ConfigurationError

__all__ = ["Endpoint", "check_settings", "resolve_endpoint"]


@attrs.frozen
class Endpoint:
    """A resolved destination; ``url`` is ``None`` when the sink sends nothing."""

    url: str | None
    parts: SplitResult | None
    """``url`` split, checked to be http(s) with a host."""
    api_key: Secret | None


def resolve_endpoint(
    name: str,
    server_url: str | None,
    api_key: str | None,
    *,
    enabled: bool | None,
    read_env: bool,
    logger: logging.Logger,
) -> Endpoint:
    """The destination of the remote handler ``name``; says once on ``logger`` when inert.

    ``enabled=False`` silences it; ``None`` honours ``TELEMETRY_NO_REMOTE``. ``read_env=False``
    takes the arguments only (a spec rebuilt elsewhere with the values resolved here).

    Raises:
        ConfigurationError: the URL is not http(s) with a host.
    """
    env = {} if enabled is False or not read_env else read_dotenv()
    silenced = enabled is False or (
        enabled is None and read_env and read_switch(os.environ, ENV_REMOTE_OFF)
    )
    if read_env:
        url = None if silenced else read_setting(server_url, ENV_REMOTE_URL, env)
        key = read_setting(api_key, ENV_REMOTE_API_KEY, env)
    else:
        url = None if silenced else server_url or None
        key = api_key or None
    secret = None if key is None else Secret(key)
    if silenced:
        logger.info("remote handler %r silenced for this run; sending nothing", name)
    elif url is None:
        logger.warning(
            "remote handler %r is inert: no server_url and no %s in the environment or .env",
            name,
            ENV_REMOTE_URL,
        )
    if url is None:
        return Endpoint(None, None, secret)
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        msg = f"server_url must be an http(s) URL such as 'http://127.0.0.1:8765' (got {url!r})."
        raise ConfigurationError(msg, key="server_url", value=url)
    return Endpoint(url, parts, secret)


def _positive(name: str, value: Any, kind: type = int) -> None:
    ok = isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0
    if not ok or (kind is int and not isinstance(value, int)):
        msg = f"{name} must be a positive {kind.__name__} (got {value!r})."
        raise ConfigurationError(msg, key=name, value=value)


def check_settings(
    *,
    buffer_size: Any,
    max_body_bytes: Any,
    queue_batches: Any,
    queue_bytes: Any,
    heartbeat_s: Any,
    timeout_s: Any,
    close_timeout_s: Any,
    config: Any,
    run_info: Any,
) -> None:
    """Check a ``RemoteHandler``'s sizes and durations (positive) and mappings.

    Raises:
        ConfigurationError: naming the first argument that is wrong.
    """
    _positive("buffer_size", buffer_size)
    _positive("max_body_bytes", max_body_bytes)
    if max_body_bytes > MAX_BODY_BYTES:
        msg = f"max_body_bytes must be at most {MAX_BODY_BYTES} (got {max_body_bytes!r})."
        raise ConfigurationError(msg, key="max_body_bytes", value=max_body_bytes)
    if queue_batches is not None:
        _positive("queue_batches", queue_batches)
    _positive("queue_bytes", queue_bytes)
    for pname, pvalue in (("heartbeat_s", heartbeat_s), ("timeout_s", timeout_s)):
        _positive(pname, pvalue, float)
    _positive("close_timeout_s", close_timeout_s, float)
    for pname, mapping in (("config", config), ("run_info", run_info)):
        if mapping is not None and not isinstance(mapping, Mapping):
            msg = f"{pname} must be a mapping (got {mapping!r})."
            raise ConfigurationError(msg, key=pname, value=mapping)
