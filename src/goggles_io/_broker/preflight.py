"""Before the first event: can this process use the broker at all? One line if not.

``redis_missing()`` says whether the ``redis`` client package is importable (it is the
``broker`` extra, not a core dependency); ``unreachable(url)`` whether Redis answers a
``PING`` within a short timeout; ``check(url)`` asks both. Each returns one line for the
user, or ``None``. The URL may hold a password: a line names only scheme, host, port and
database (:func:`where`).
"""

from __future__ import annotations

import urllib.parse

from goggles_io._broker.settings import check_url

__all__ = ["INSTALL", "check", "redis_missing", "unreachable", "where"]

INSTALL = "python3 -m pip install 'split-telemetry[broker]'"
"""The command that installs the ``redis`` client package (the ``broker`` extra)."""
_PING_TIMEOUT_S = 2.0


def redis_missing() -> str | None:
    """One line naming the pip command when ``import redis`` fails, else ``None``."""
    try:
        import redis  # noqa: F401
    except ImportError:
        return (
            f"the broker needs the 'redis' package, which is not installed: {INSTALL} "
            "(in a checkout: python3 -m pip install -e '.[broker]')"
        )
    return None


def where(url: str) -> str:
    """``url`` without its user name and password: ``redis://***@host:6379/0``."""
    try:
        parts = urllib.parse.urlsplit(url)
        host = parts.hostname or ""
        port = f":{parts.port}" if parts.port is not None else ""
        auth = "***@" if parts.username or parts.password else ""
    except ValueError:
        return f"{url.split('://', 1)[0]}://<not shown>"
    if parts.scheme == "unix":
        return f"unix://{auth}{parts.path}"
    return f"{parts.scheme}://{auth}{host}{port}{parts.path}"


def unreachable(url: str, timeout_s: float = _PING_TIMEOUT_S) -> str | None:
    """One line when Redis at ``url`` does not answer ``PING`` within ``timeout_s``, else ``None``.

    Needs the ``redis`` package (call :func:`redis_missing` first). A server that answers but
    refuses us (a wrong password, say) is reported too: nothing would reach it either.
    """
    import redis

    url = check_url(url)
    client = redis.Redis.from_url(url, socket_connect_timeout=timeout_s, socket_timeout=timeout_s)
    try:
        client.ping()
    except redis.AuthenticationError as exc:  # a ConnectionError in redis-py: say it apart
        problem = f"refused us ({_reason(exc, url)})"
    except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
        problem = f"is unreachable ({_reason(exc, url)})"
    except redis.RedisError as exc:
        problem = f"refused us ({_reason(exc, url)})"
    else:
        return None
    finally:
        client.close()
    return (
        f"Redis at {where(url)} {problem}: producers would keep their events in memory "
        "(GOGGLES_BROKER_BYTES), then in the spool on disk, and drop and count what is beyond; "
        "consumers would retry until it answers"
    )


def check(url: str, timeout_s: float = _PING_TIMEOUT_S) -> str | None:
    """:func:`redis_missing`, then :func:`unreachable`: the first line that applies, or ``None``."""
    return redis_missing() or unreachable(url, timeout_s)


def _reason(exc: BaseException, url: str) -> str:
    """``Type: message`` on one line, with the URL's password (if any) blanked out."""
    text = " ".join(str(exc).split())
    try:
        password = urllib.parse.urlsplit(url).password
    except ValueError:
        password = None
    if password:
        text = text.replace(password, "***")
        text = text.replace(urllib.parse.unquote(password), "***")
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__
