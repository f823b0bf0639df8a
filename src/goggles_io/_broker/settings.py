"""``GOGGLES_BROKER*`` knobs: where the broker is, which stream, and the bounds we keep."""

from __future__ import annotations

import os
import re
import urllib.parse
from collections.abc import Mapping

import attrs

from goggles_io._util.env import (
    ENV_BROKER,
    ENV_BROKER_BYTES,
    ENV_BROKER_CLAIM_IDLE_MS,
    ENV_BROKER_FORWARD,
    ENV_BROKER_GROUP,
    ENV_BROKER_MAXLEN,
    ENV_BROKER_RUN,
    read_bool,
    read_number,
    read_text,
)
from goggles_io.exceptions import ConfigurationError

__all__ = ["BrokerSettings", "check_url", "read_broker_settings", "seen_key", "stream_name"]

_SCHEMES = ("redis://", "rediss://", "unix://")
_RUN = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


@attrs.frozen(kw_only=True)
class BrokerSettings:
    """Parsed broker knobs; ``url`` is ``None`` when no broker is configured."""

    url: str | None = None
    run: str = "default"
    maxlen: int = 1_000_000
    buffer_bytes: int = 64 * 1024 * 1024
    group: str = "goggles_io"
    claim_idle_ms: int = 30_000
    forward: bool = True  # this machine's events go to the stream (off: it only reads)


def check_url(url: object) -> str:
    """Return ``url`` if it is a Redis URL (``redis://``, ``rediss://`` for TLS, ``unix://``)."""
    if not isinstance(url, str) or not url.startswith(_SCHEMES):
        scheme = url.split("://", 1)[0] if isinstance(url, str) else type(url).__name__
        msg = (
            f"broker URL must start with one of {_SCHEMES} (got one starting {scheme!r}; the "
            "rest is not shown, it may hold a password), e.g. redis://:password@host:6379/0 "
            "or rediss://host:6380/0 for TLS."
        )
        raise ConfigurationError(msg, key=ENV_BROKER, value="<redacted>")
    try:
        urllib.parse.urlsplit(url).port  # noqa: B018 (raises for a port out of range)
    except ValueError as exc:
        msg = (
            f"broker URL {url.split('://', 1)[0]}://... is not a valid URL ({exc}; the rest is "
            "not shown, it may hold a password): a port is 1-65535, e.g. redis://host:6379/0."
        )
        raise ConfigurationError(msg, key=ENV_BROKER, value="<redacted>") from None
    return url


def stream_name(run: str) -> str:
    """The stream one run's events go to."""
    return f"goggles_io:{run}"


def seen_key(stream: str, group: str) -> str:
    """The hash of each producer's high-water mark of entries ``group`` has handled."""
    return f"{stream}:{group}:seen"


def read_broker_settings(env: Mapping[str, str] | None = None) -> BrokerSettings:
    """Parse ``GOGGLES_BROKER``, ``_RUN``, ``_MAXLEN``, ``_BYTES``, ``_GROUP``, ``_CLAIM_IDLE_MS``,
    ``_FORWARD``."""
    env = os.environ if env is None else env
    raw_url = read_text(env, ENV_BROKER)
    run = read_text(env, ENV_BROKER_RUN) or "default"
    if not _RUN.fullmatch(run):
        msg = f"{ENV_BROKER_RUN} must be 1-128 of A-Z a-z 0-9 _ . : - (got {run!r})."
        raise ConfigurationError(msg, key=ENV_BROKER_RUN, value=run)
    return BrokerSettings(
        url=check_url(raw_url) if raw_url else None,
        run=run,
        maxlen=read_number(env, ENV_BROKER_MAXLEN, 1_000_000, minimum=1000),
        buffer_bytes=read_number(env, ENV_BROKER_BYTES, 64 * 1024 * 1024, minimum=1 << 16),
        group=read_text(env, ENV_BROKER_GROUP) or "goggles_io",
        claim_idle_ms=read_number(env, ENV_BROKER_CLAIM_IDLE_MS, 30_000, minimum=1),
        forward=read_bool(env, ENV_BROKER_FORWARD, True),
    )
