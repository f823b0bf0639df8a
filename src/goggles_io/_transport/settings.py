"""Transport knobs (``GOGGLES_*`` env variables), the socket path and its ownership checks.

Precedence is argument, then env variable, then default; a malformed value raises
:class:`~goggles_io.exceptions.ConfigurationError` naming the variable. The table with every
knob and its default is in ``docs/transport.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import sys
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
    "SUBSCRIBER_PREFIX",
    "SocketOwnershipError",
    "TransportSettings",
    "bindable_socket_path",
    "default_socket_path",
    "prepare_socket_dir",
    "read_transport_settings",
]

SUBSCRIBER_PREFIX = "goggles_io.subscriber."  # the name of a subscriber's sink in the host
_DEFAULT_SHM_THRESHOLD = 64 * 1024
_DEFAULT_SHM_BYTES = 96 * 1024 * 1024  # 6 segments: a settled 1 MiB image burst fits (ADR 0083)
_DEFAULT_IDLE_TIMEOUT_S = 1.0
_TRANSPORTS = ("socket", "inprocess")
# The longest path AF_UNIX binds: sun_path is 108 bytes on Linux (104 elsewhere), NUL included.
_SUN_PATH_MAX = 107 if sys.platform.startswith("linux") else 103
# Where a too-long socket path is mapped: fixed (never $TMPDIR, which may be what made it long),
# so every process of this user derives the same stand-in whatever its environment.
_SHORT_ROOT = "/tmp"


def bindable_socket_path(path: str) -> str:
    """``path`` itself when AF_UNIX can bind it, else its short private stand-in.

    A path longer than ``sun_path`` cannot be bound or connected to. Every process that shares
    the long path maps it alike, to ``/tmp/goggles_io-<uid>/<hash of the absolute path>.sock``,
    so they still meet on one host; the election lock (``<socket>.lock``) follows it.
    """
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        return path
    digest = hashlib.sha256(os.fsencode(os.path.abspath(path))).hexdigest()[:24]
    return os.path.join(_short_dir(), f"{digest}.sock")


def _bindable_or_none(path: str | None) -> str | None:
    return None if path is None else bindable_socket_path(path)


def _short_dir() -> str:
    return os.path.join(_SHORT_ROOT, f"goggles_io-{os.getuid()}")


@attrs.frozen(kw_only=True)
class TransportSettings:
    """Parsed transport knobs."""

    transport: str = "socket"
    socket_path: str | None = attrs.field(default=None, converter=_bindable_or_none)
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
    """``$XDG_RUNTIME_DIR/goggles_io.sock`` when usable, else ``<tmp>/goggles_io-<uid>/bus.sock``.

    Either one, when too long to bind, is mapped by :func:`bindable_socket_path`.
    """
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isdir(xdg):
        st = os.stat(xdg)
        if st.st_uid == os.getuid():
            return bindable_socket_path(os.path.join(xdg, "goggles_io.sock"))
    base = os.path.join(tempfile.gettempdir(), f"goggles_io-{os.getuid()}")
    path = os.path.join(base, "bus.sock")
    if len(os.fsencode(path)) <= _SUN_PATH_MAX:
        _private_dir(base)
    return bindable_socket_path(path)


def prepare_socket_dir(socket_path: str) -> None:
    """Check that ``socket_path`` is usable by us: its directory exists, it is not someone else's.

    We never change the mode of an existing directory (``/tmp`` is shared); the socket itself
    is created 0600 by the host. The private directory of mapped (too long) paths is created here.
    """
    parent = os.path.dirname(os.path.abspath(socket_path))
    if parent == _short_dir():
        try:
            _private_dir(parent)
        except OSError as exc:
            msg = (
                f"cannot use socket {socket_path!r} (the folder of the short stand-ins for "
                f"socket paths over {_SUN_PATH_MAX} bytes, too long for a Unix socket): {exc}. "
                f"Set GOGGLES_SOCKET to a path of at most {_SUN_PATH_MAX} bytes in a directory "
                f"you own."
            )
            raise SocketOwnershipError(msg, path=socket_path) from exc
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
