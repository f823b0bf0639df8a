"""Process-global state of goggles_io, in one place.

Everything process-global lives here: the parsed settings (parsed by :mod:`goggles_io._bus.settings`),
the active transport (the socket client, or the in-process :class:`~goggles_io._bus.bus.EventBus`),
the per-metric step counters and x-axis declarations. ``reset_defaults()`` tears it all down for
tests. This module builds the transport; the transport never imports it.
"""

from __future__ import annotations

import atexit
import gc
import os
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from goggles_io._bus.settings import Settings, read_settings

if TYPE_CHECKING:
    from goggles_io._broker.consumer import BrokerConsumer
    from goggles_io._bus.transport import FinishReport, Transport

__all__ = [
    "STATE",
    "announce_finish",
    "freeze",
    "get_settings",
    "get_transport",
    "reset_defaults",
    "set_transport_factory",
]


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
        self.broker_url: str | None = None  # configure(broker=...)
        self.consumer: BrokerConsumer | None = None  # reads the broker for from_broker handlers
        # Told every FinishReport (a run's ``lost=N`` in run.kv: goggles_io.runs.RunContext).
        self.finish_listeners: list[Callable[[FinishReport], None]] = []


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
        from goggles_io._bus.bus import EventBus

        return EventBus(
            async_mode=settings.async_mode,
            queue_size=settings.queue_size,
            queue_bytes=settings.queue_bytes,
            policy=settings.delivery,
        )
    from goggles_io._transport.client.socket_client import SocketClient

    return SocketClient(settings, transport)


def _forward_to_broker(transport: Transport) -> None:
    """With ``GOGGLES_BROKER`` set, every event of this machine also goes to that Redis
    (unless ``GOGGLES_BROKER_FORWARD=0``: a process that only reads the broker)."""
    from goggles_io._broker.settings import read_broker_settings

    settings = read_broker_settings()  # a malformed GOGGLES_BROKER* raises here, naming it
    if settings.url is None or not settings.forward:
        return
    from goggles_io._broker.forwarder import BrokerForwarder

    transport.attach(BrokerForwarder(url=settings.url), ["*"])


def get_transport() -> Transport:
    """Return the active transport, building it on first use."""
    transport = STATE.transport
    if transport is None:
        with STATE.lock:
            if STATE.transport is None:
                settings = get_settings()
                STATE.transport = (STATE.factory or _default_factory)(settings)
                _forward_to_broker(STATE.transport)
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
        # Waits while delivery progresses (GOGGLES_FINISH_STALL), then tells the runs.
        announce_finish(STATE.transport.finish(None))


def announce_finish(report: FinishReport) -> FinishReport:
    """Hand ``report`` to every finish listener (one that raises is dropped); return it."""
    for listener in list(STATE.finish_listeners):
        try:
            listener(report)
        except Exception:  # a listener must never break finish()
            if listener in STATE.finish_listeners:
                STATE.finish_listeners.remove(listener)
    return report


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
            STATE.broker_url = None
            STATE.finish_listeners.clear()
            consumer, STATE.consumer = STATE.consumer, None
            if consumer is not None:
                consumer.finish(2.0, idle_s=0.0)


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
