"""Starting and running the collector server, shared by ``telemetry collector`` and ``telemetry ui``.

Every way it can fail to start is one line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import os
import socket
import sqlite3
import sys
from collections.abc import Callable, Sequence
from typing import Any

from goggles_io.exceptions import ConfigurationError

__all__ = [
    "ENV_COLLECTOR_API_KEY",
    "api_key_from_env",
    "serve_until_interrupted",
    "start_collector",
]

# The key is read from the environment, never from argv (argv is visible to every user in ps).
ENV_COLLECTOR_API_KEY = "TELEMETRY_COLLECTOR_API_KEY"


def api_key_from_env() -> str | None:
    """The collector's API key, or ``None`` (no key: loopback only)."""
    return os.environ.get(ENV_COLLECTOR_API_KEY) or None


def start_collector(
    prog: str,
    db_path: str,
    host: str,
    port: int,
    api_key: str | None,
    run_dirs: Sequence[str] = (),
    index_dir: str | None = None,
) -> Any | None:
    """A started ``Collector``, or ``None`` after printing why it could not start.

    A host name that does not resolve is said as such (before the API-key rule for hosts
    beyond loopback could answer instead); a collector reachable from other machines is
    announced on stderr: its traffic is plain HTTP.
    """
    from goggles_io.server import Collector

    try:
        socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        print(f"{prog}: cannot bind {host!r}: the name does not resolve ({exc})", file=sys.stderr)
        return None
    try:
        kwargs: dict[str, Any] = {"run_dirs": list(run_dirs)} if run_dirs else {}
        if index_dir:
            kwargs["index_dir"] = index_dir
        collector = Collector(db_path=db_path, host=host, port=port, api_key=api_key, **kwargs)
    except ConfigurationError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return None
    except sqlite3.Error as exc:
        print(f"{prog}: cannot open the collector database {db_path!r}: {exc}", file=sys.stderr)
        return None
    try:
        collector.start()
    except (OSError, ImportError) as exc:
        collector.close()
        print(f"{prog}: cannot serve on {host}:{port}: {exc}", file=sys.stderr)
        return None
    if collector.exposed:
        print(
            f"{prog}: warning: {host} is reachable from other machines; requests need the API "
            "key, and the traffic is plain HTTP (put TLS in front on untrusted networks)",
            file=sys.stderr,
            flush=True,
        )
    return collector


def serve_until_interrupted(collector: Any, announce: Callable[[], None] = lambda: None) -> int:
    """Say where it serves (``announce``), serve until Ctrl-C, then close; exit code 0.

    Ctrl-C is the normal way to stop, from the moment the server started: one arriving while
    the announcement prints is a clean stop too.
    """
    try:
        announce()
        collector.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        collector.close()
    return 0
