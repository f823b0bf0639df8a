"""Global state and environment knobs of goggles_io, in one place.

Everything process-global lives here: the parsed settings, the active transport (the in-process
:class:`~goggles_io._bus.EventBus` unless issue 4's socket transport installs a factory), the
per-metric step counters and x-axis declarations. ``reset_defaults()`` tears it all down for tests.
"""

from __future__ import annotations

import atexit
import gc
import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

import attrs

from goggles_io.exceptions import ConfigurationError

if TYPE_CHECKING:
    from goggles_io._bus import FinishReport, Transport

__all__ = [
    "ENV_ASYNC",
    "ENV_CALLER_INFO",
    "ENV_QUEUE_BYTES",
    "ENV_QUEUE_SIZE",
    "ENV_SHUTDOWN_TIMEOUT",
    "ENV_VERBOSE",
    "Settings",
    "async_from_env",
    "freeze",
    "get_settings",
    "get_transport",
    "read_settings",
    "reset_defaults",
    "set_transport_factory",
]

ENV_ASYNC = "GOGGLES_ASYNC"
ENV_QUEUE_SIZE = "GOGGLES_QUEUE_SIZE"
ENV_QUEUE_BYTES = "GOGGLES_QUEUE_BYTES"
ENV_VERBOSE = "GOGGLES_VERBOSE"
ENV_CALLER_INFO = "GOGGLES_CALLER_INFO"
ENV_SHUTDOWN_TIMEOUT = "GOGGLES_SHUTDOWN_TIMEOUT"

_DEFAULT_QUEUE_SIZE = 65_536
_DEFAULT_QUEUE_BYTES = 16 * 1024 * 1024
_DEFAULT_SHUTDOWN_TIMEOUT_S = 10.0
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@attrs.frozen(kw_only=True)
class Settings:
    """Parsed environment knobs (argument > env variable > default)."""

    async_mode: bool = True
    queue_size: int = _DEFAULT_QUEUE_SIZE
    queue_bytes: int = _DEFAULT_QUEUE_BYTES
    caller_info: bool = True
    verbose: bool = False
    shutdown_timeout_s: float = _DEFAULT_SHUTDOWN_TIMEOUT_S


def _parse_bool(env: Mapping[str, str], key: str, default: bool) -> bool:
    raw = env.get(key)
    if raw is None or raw.strip() == "":
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    msg = f"{key} must be one of 1/0/true/false/yes/no/on/off (got {raw!r})."
    raise ConfigurationError(msg, key=key, value=raw)


def _parse_number(env: Mapping[str, str], key: str, default: float, kind: type) -> Any:
    raw = env.get(key)
    if raw is None or raw.strip() == "":
        return default
    try:
        value = kind(raw.strip())
    except ValueError:
        value = None
    if value is None or value <= 0:
        msg = f"{key} must be a positive {kind.__name__} (got {raw!r}); unset it for {default!r}."
        raise ConfigurationError(msg, key=key, value=raw)
    return value


def async_from_env() -> bool:
    """``GOGGLES_ASYNC`` as a bool for the module constant; a malformed value reads as the default.

    Never raises, so a typo cannot break ``import goggles_io``; :func:`get_settings` still
    reports it when the bus starts.
    """
    try:
        return _parse_bool(os.environ, ENV_ASYNC, True)
    except ConfigurationError:
        return True


def read_settings(env: Mapping[str, str] | None = None) -> Settings:
    """Parse the ``GOGGLES_*`` variables; a malformed value raises naming the variable."""
    env = os.environ if env is None else env
    return Settings(
        async_mode=_parse_bool(env, ENV_ASYNC, True),
        queue_size=_parse_number(env, ENV_QUEUE_SIZE, _DEFAULT_QUEUE_SIZE, int),
        queue_bytes=_parse_number(env, ENV_QUEUE_BYTES, _DEFAULT_QUEUE_BYTES, int),
        caller_info=_parse_bool(env, ENV_CALLER_INFO, True),
        verbose=_parse_bool(env, ENV_VERBOSE, False),
        shutdown_timeout_s=_parse_number(
            env, ENV_SHUTDOWN_TIMEOUT, _DEFAULT_SHUTDOWN_TIMEOUT_S, float
        ),
    )


class _State:
    """Mutable process-global state; one instance, reached as ``_config.STATE``."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self.settings: Settings | None = None
        self.transport: Transport | None = None
        self.factory: Callable[[Settings], Transport] | None = None
        self.pid = os.getpid()
        # (scope, metric) -> last step logged; per metric, not per scope-wide counter.
        self.steps: dict[tuple[str, str], int] = {}
        # metric name -> x-axis name declared with GogglesLogger.set_x_axis.
        self.x_axes: dict[str, str] = {}
        self.atexit_registered = False


STATE = _State()


def get_settings() -> Settings:
    """Return the settings, parsing the environment on first use."""
    settings = STATE.settings
    if settings is None:
        with STATE.lock:
            if STATE.settings is None:
                STATE.settings = read_settings()
            settings = STATE.settings
    return settings


def set_transport_factory(factory: Callable[[Settings], Transport] | None) -> None:
    """Install the function that builds the transport on first use (``None``: in-process bus).

    Issue 4's socket client plugs in here; the current transport, if any, is finished first.
    """
    with STATE.lock:
        _finish_transport(timeout_s=1.0)
        STATE.factory = factory


def _default_factory(settings: Settings) -> Transport:
    """The socket transport (one host per ``GOGGLES_SOCKET``) unless ``GOGGLES_TRANSPORT=inprocess``.

    See ADR 0010: the dedicated host is the default, as in robo-goggles; the in-process bus stays
    one env variable away for unit tests and single-process scripts.
    """
    from goggles_io._transport.settings import read_transport_settings

    transport = read_transport_settings()
    if transport.transport == "inprocess":
        from goggles_io._bus import EventBus

        return EventBus(
            async_mode=settings.async_mode,
            queue_size=settings.queue_size,
            queue_bytes=settings.queue_bytes,
        )
    from goggles_io._transport.client import SocketClient

    return SocketClient(settings, transport)


def get_transport() -> Transport:
    """Return the active transport, building it on first use."""
    transport = STATE.transport
    if transport is None:
        with STATE.lock:
            if STATE.transport is None:
                settings = get_settings()
                STATE.transport = (STATE.factory or _default_factory)(settings)
                if not STATE.atexit_registered:
                    atexit.register(_finish_at_exit)
                    STATE.atexit_registered = True
            transport = STATE.transport
    return transport


def _finish_transport(timeout_s: float | None) -> FinishReport | None:
    transport = STATE.transport
    if transport is None:
        return None
    return transport.finish(timeout_s)


def _finish_at_exit() -> None:
    if STATE.transport is not None:
        STATE.transport.finish(get_settings().shutdown_timeout_s)


def reset_defaults() -> None:
    """Finish and forget the transport, counters and declarations; re-read env on next use.

    For tests: each test starts from a process that has never logged.
    """
    with STATE.lock:
        try:
            _finish_transport(timeout_s=5.0)
        finally:
            STATE.transport = None
            STATE.settings = None
            STATE.factory = None
            STATE.steps.clear()
            STATE.x_axes.clear()


def freeze() -> None:
    """Move every object tracked so far out of the GC's scan set (wraps :func:`gc.freeze`).

    Call once after setup and before a hot logging loop: gen-2 collections then stop rescanning
    long-lived startup state, which removes millisecond latency spikes at >= 1 kHz. Process-wide,
    hence opt-in.
    """
    gc.freeze()


def _after_fork_in_child() -> None:
    STATE.pid = os.getpid()
    STATE.lock = threading.RLock()
    transport = STATE.transport
    if transport is not None:
        transport.after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)
