"""Where a remote sink sends: its collector URL and API key, or nothing (inert, silenced).

Resolved once, when the handler is constructed, in the process that constructs it: the
argument first, then the environment, then a ``.env`` file found from the current directory
upwards (``os.environ`` is never modified). Kept apart from :mod:`goggles_io.handlers.remote`,
which batches and queues points, so that module reads as the sink alone.
"""

from __future__ import annotations

import logging
import os
from urllib.parse import SplitResult, urlsplit

import attrs

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

__all__ = ["Endpoint", "resolve_endpoint"]


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
