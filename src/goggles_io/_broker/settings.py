"""``GOGGLES_BROKER*`` knobs: where the broker is, which stream, and the bounds we keep."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping

import attrs

from goggles_io.exceptions import ConfigurationError

__all__ = ["BrokerSettings", "check_url", "read_broker_settings", "stream_name"]

ENV_BROKER = "GOGGLES_BROKER"
ENV_RUN = "GOGGLES_BROKER_RUN"
ENV_MAXLEN = "GOGGLES_BROKER_MAXLEN"
ENV_BYTES = "GOGGLES_BROKER_BYTES"
ENV_GROUP = "GOGGLES_BROKER_GROUP"
ENV_CLAIM_IDLE = "GOGGLES_BROKER_CLAIM_IDLE_MS"

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
    return url


def stream_name(run: str) -> str:
    """The stream one run's events go to."""
    return f"goggles_io:{run}"


def _int(env: Mapping[str, str], key: str, default: int, minimum: int) -> int:
    raw = env.get(key, "").strip()
    if not raw:
        return default
    try:
        value = int(raw)
    except ValueError:
        value = minimum - 1
    if value < minimum:
        msg = f"{key} must be an int >= {minimum} (got {raw!r}); unset it for {default}."
        raise ConfigurationError(msg, key=key, value=raw)
    return value


def read_broker_settings(env: Mapping[str, str] | None = None) -> BrokerSettings:
    """Parse ``GOGGLES_BROKER``, ``_RUN``, ``_MAXLEN``, ``_BYTES``, ``_GROUP``, ``_CLAIM_IDLE_MS``."""
    env = os.environ if env is None else env
    raw_url = env.get(ENV_BROKER, "").strip()
    run = env.get(ENV_RUN, "").strip() or "default"
    if not _RUN.fullmatch(run):
        msg = f"{ENV_RUN} must be 1-128 of A-Z a-z 0-9 _ . : - (got {run!r})."
        raise ConfigurationError(msg, key=ENV_RUN, value=run)
    group = env.get(ENV_GROUP, "").strip() or "goggles_io"
    return BrokerSettings(
        url=check_url(raw_url) if raw_url else None,
        run=run,
        maxlen=_int(env, ENV_MAXLEN, 1_000_000, 1000),
        buffer_bytes=_int(env, ENV_BYTES, 64 * 1024 * 1024, 1 << 16),
        group=group,
        claim_idle_ms=_int(env, ENV_CLAIM_IDLE, 30_000, 1),
    )
