"""Transport knobs (``GOGGLES_*`` env variables), the socket path and its ownership checks.

Precedence is argument, then env variable, then default; a malformed value raises
:class:`~goggles_io.exceptions.ConfigurationError` naming the variable. The table with every
knob and its default is in ``docs/transport.md``.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Mapping

import attrs

from goggles_io._util.env import (
    ENV_DEDICATED_HOST,
    ENV_HOST_IDLE_TIMEOUT,
    ENV_HOST_IMPORTS,
    ENV_HOST_LOG,
    ENV_SHM_BYTES,
    ENV_SHM_THRESHOLD,
    ENV_SOCKET,
    ENV_TRANSPORT,
    read_bool,
    read_number,
    read_text,
)
from goggles_io.exceptions import ConfigurationError, SocketOwnershipError

__all__ = [
    "SocketOwnershipError",
    "TransportSettings",
    "default_socket_path",
    "prepare_socket_dir",
    "read_transport_settings",
]

_DEFAULT_SHM_THRESHOLD = 64 * 1024
_DEFAULT_SHM_BYTES = 48 * 1024 * 1024  # 3 segments: a 1 MiB image burst stays in memory longer
_DEFAULT_IDLE_TIMEOUT_S = 1.0
_TRANSPORTS = ("socket", "inprocess")


@attrs.frozen(kw_only=True)
class TransportSettings:
    """Parsed transport knobs."""

    transport: str = "socket"
    socket_path: str | None = None
    shm_threshold: int = _DEFAULT_SHM_THRESHOLD
    shm_bytes: int = _DEFAULT_SHM_BYTES
    dedicated_host: bool = True
    host_imports: tuple[str, ...] = ()
    host_idle_timeout_s: float = _DEFAULT_IDLE_TIMEOUT_S
    host_log: str | None = None


def read_transport_settings(env: Mapping[str, str] | None = None) -> TransportSettings:
    """Parse the transport's ``GOGGLES_*`` variables."""
    env = os.environ if env is None else env
    transport = (read_text(env, ENV_TRANSPORT) or "socket").lower()
    if transport not in _TRANSPORTS:
        msg = f"{ENV_TRANSPORT} must be one of {_TRANSPORTS!r} (got {env[ENV_TRANSPORT]!r})."
        raise ConfigurationError(msg, key=ENV_TRANSPORT, value=env[ENV_TRANSPORT])
    imports = tuple(m.strip() for m in env.get(ENV_HOST_IMPORTS, "").split(",") if m.strip())
    return TransportSettings(
        transport=transport,
        socket_path=read_text(env, ENV_SOCKET),
        shm_threshold=read_number(env, ENV_SHM_THRESHOLD, _DEFAULT_SHM_THRESHOLD, minimum=0),
        shm_bytes=read_number(env, ENV_SHM_BYTES, _DEFAULT_SHM_BYTES, minimum=1 << 20),
        dedicated_host=read_bool(env, ENV_DEDICATED_HOST, True),
        host_imports=imports,
        host_idle_timeout_s=read_number(
            env, ENV_HOST_IDLE_TIMEOUT, _DEFAULT_IDLE_TIMEOUT_S, minimum=0.0
        ),
        host_log=read_text(env, ENV_HOST_LOG),
    )


def _private_dir(path: str) -> str:
    """Create ``path`` 0700 if missing; refuse it unless it is a real directory we own."""
    with contextlib.suppress(FileExistsError):
        os.mkdir(path, 0o700)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid():
        msg = (
            f"socket directory {path!r} is not a directory owned by uid {os.getuid()} "
            f"(owner uid {st.st_uid}); set GOGGLES_SOCKET to a path in a directory you own."
        )
        raise SocketOwnershipError(msg, path=path)
    if st.st_mode & 0o077:
        msg = (
            f"socket directory {path!r} is accessible by other users (mode {oct(st.st_mode & 0o777)}); "
            f"remove it or set GOGGLES_SOCKET to a path in a private directory."
        )
        raise SocketOwnershipError(msg, path=path)
    return path


def default_socket_path() -> str:
    """``$XDG_RUNTIME_DIR/goggles_io.sock`` when usable, else ``<tmp>/goggles_io-<uid>/bus.sock``."""
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        st = os.stat(xdg)
        if st.st_uid == os.getuid():
            return os.path.join(xdg, "goggles_io.sock")
    base = _private_dir(os.path.join(tempfile.gettempdir(), f"goggles_io-{os.getuid()}"))
    return os.path.join(base, "bus.sock")


def prepare_socket_dir(socket_path: str) -> None:
    """Check that ``socket_path`` is usable by us: its directory exists, it is not someone else's.

    We never change the mode of an existing directory (``/tmp`` is shared); the socket itself
    is created 0600 by the host.
    """
    parent = os.path.dirname(os.path.abspath(socket_path))
    if not os.path.isdir(parent):
        msg = f"GOGGLES_SOCKET directory {parent!r} does not exist; create it (mode 0700) first."
        raise ConfigurationError(msg, key=ENV_SOCKET, value=socket_path)
    try:
        st = os.lstat(socket_path)
    except FileNotFoundError:
        return
    if st.st_uid != os.getuid():
        msg = (
            f"socket path {socket_path!r} is owned by uid {st.st_uid}, not by you (uid "
            f"{os.getuid()}); refusing to use it. Set GOGGLES_SOCKET to a path you own."
        )
        raise SocketOwnershipError(msg, path=socket_path)
    if not stat.S_ISSOCK(st.st_mode):
        msg = f"socket path {socket_path!r} exists and is not a socket; remove it or pick another."
        raise SocketOwnershipError(msg, path=socket_path)
