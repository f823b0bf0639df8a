"""The module-level functions of the goggles surface: attach, detach, configure, flush, finish."""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from goggles_io._api.state import STATE, announce_finish, get_settings, get_transport
from goggles_io._bus.transport import FinishReport, Transport
from goggles_io._event import validate as v
from goggles_io._util.report import ReportOnce
from goggles_io.exceptions import ConfigurationError, InvalidNameError
from goggles_io.handlers.base import Handler

if TYPE_CHECKING:
    from goggles_io._broker.consumer import BrokerConsumer

__all__ = [
    "DEFAULT_CONSOLE_NAME",
    "attach",
    "call_handler",
    "check_broker",
    "configure",
    "detach",
    "finish",
    "flush",
    "get_bus",
    "is_attached",
]

DEFAULT_CONSOLE_NAME = "goggles.console"  # robo-goggles' name: detach("goggles.console") works
_REPORT_ONCE = ReportOnce()


def _scopes(scopes: Sequence[str] | str | None) -> list[str]:
    if scopes is None:
        return ["global"]
    if isinstance(scopes, str):
        msg = f"scopes must be a list of str, not a bare str (got {scopes!r}); pass [{scopes!r}]."
        raise InvalidNameError(msg, name=scopes)
    return list(scopes)


def attach(
    handler: Handler, scopes: Sequence[str] | None = None, *, from_broker: bool = False
) -> None:
    """Route events of ``scopes`` (default ``["global"]``; ``"*"`` is every scope) to ``handler``.

    Handler names are bus-wide: if ``handler.name`` is already attached, the first handler is
    kept, this one is ignored (one warning on stderr when its options differ) and ``scopes``
    are merged onto the kept one. Takes effect before returning.

    With ``from_broker=True`` the handler runs in this process on the events every machine
    forwarded to the broker (``GOGGLES_BROKER``; see ``docs/cross-machine.md``), read through
    a consumer group: at-least-once, de-duplicated, so each is handled once. Without the
    ``redis`` package (the ``broker`` extra) one line on stderr names the pip command and the
    handler gets nothing; no reading thread starts.
    """
    for attr in ("name", "handle"):
        if not hasattr(handler, attr):
            msg = f"handler must implement the goggles_io Handler protocol; {handler!r} lacks {attr!r}."
            raise TypeError(msg)
    if from_broker:
        consumer = broker_consumer()
        from goggles_io._broker.preflight import redis_missing

        problem = redis_missing()
        if problem is not None:
            _REPORT_ONCE(
                "redis", f"attach(from_broker=True): {problem}; {handler.name!r} gets nothing"
            )
            return
        consumer.attach(handler, _scopes(scopes))
        return
    get_transport().attach(handler, _scopes(scopes))


def broker_consumer() -> BrokerConsumer:
    """This process's consumer of the broker stream, made on first use.

    Raises:
        ConfigurationError: no broker is configured (``GOGGLES_BROKER`` / ``configure(broker=)``).
    """
    with STATE.lock:
        if STATE.consumer is None:
            from goggles_io._broker.consumer import BrokerConsumer
            from goggles_io._broker.settings import read_broker_settings

            settings = read_broker_settings()
            url = STATE.broker_url or settings.url
            if url is None:
                msg = (
                    "from_broker=True needs a broker: set GOGGLES_BROKER=redis://host:port/db "
                    "or call goggles_io.configure(broker=...) first."
                )
                raise ConfigurationError(msg, key="GOGGLES_BROKER", value=None)
            STATE.consumer = BrokerConsumer(url, settings)
        return STATE.consumer


def check_broker(url: str | None = None, timeout_s: float = 2.0) -> str | None:
    """One line saying why this process cannot use the broker, or ``None`` when it can.

    ``url`` defaults to ``configure(broker=...)``, then ``GOGGLES_BROKER``. The line names the
    pip command when the ``redis`` package is missing, or says that Redis at the URL (shown
    without its password) did not answer a ``PING`` within ``timeout_s`` and what happens to
    the events then. Call it before a run whose results depend on the broker.

    Raises:
        ConfigurationError: no broker is configured, or the URL is not a Redis URL.
    """
    from goggles_io._broker import preflight
    from goggles_io._broker.settings import check_url, read_broker_settings

    url = url if url is not None else STATE.broker_url or read_broker_settings().url
    if url is None:
        msg = "no broker to check: set GOGGLES_BROKER=redis://host:port/db or pass url=."
        raise ConfigurationError(msg, key="GOGGLES_BROKER", value=None)
    return preflight.check(check_url(url), timeout_s)


def detach(handler_name: str, scope: str = "global") -> None:
    """Stop routing ``scope`` to ``handler_name``; with no scope left it is flushed and closed.
    A name not attached at all is a no-op here (``EventBus().detach`` raises, as in robo-goggles)."""
    get_transport().detach(handler_name, scope, missing_ok=True)


def call_handler(name: str, method: str, payload: Any) -> None:
    """Call ``method(payload)`` on the handler the bus runs under ``name``, wherever it runs.

    Settings such as a run's config must reach the instance that handles the events: with the
    socket transport that is a copy rebuilt in the host process, and with first-registration-wins
    it may not be the object you hold. The call travels like an event (it runs on that
    handler's worker, after every event logged before it) and does not wait for the result.
    Only methods listed in the handler class's ``remote_methods`` may be called; ``payload``
    must be msgpack-safe builtins (it is copied here).

    Raises:
        InvalidNameError: ``name`` is not a non-empty str.
        InvalidPayloadError: ``payload`` holds something other than plain builtins.
        UnknownHandlerError: in-process, no handler ``name`` is attached (with the socket
            transport, a name or method the host does not know is counted and reported once).
        MethodNotAllowedError: ``method`` is not in the class's ``remote_methods`` (checked
            here whenever this process knows the class).
    """
    v.check_name(name, "name")
    payload = v.check_message_payload(payload)
    get_transport().call(name, method, payload)


def get_bus() -> Transport:
    """Return the bus this process logs to (robo-goggles' name): the socket client or the
    in-process :class:`~goggles_io.EventBus`. ``get_bus().is_host`` says whether the handlers
    run in this process."""
    return get_transport()


def is_attached(name: str) -> bool:
    """Return whether this process attached a handler named ``name`` (never starts a transport)."""
    transport = STATE.transport
    return transport is not None and transport.has_handler(name)


def configure(
    *,
    enable_console: bool | None = None,
    console_level: int | str | None = None,
    console_path_style: str | None = None,
    project_root: str | os.PathLike[str] | None = None,
    scopes: Sequence[str] | None = None,
    name: str | None = None,
    broker: str | None = None,
) -> None:
    """Set up the console handler; the last call wins (unlike :func:`attach`).

    Without arguments this is a no-op, so it is safe to call unconditionally. Passing only
    ``console_level`` / ``console_path_style`` / ``project_root`` / ``name`` / ``scopes``
    implies ``enable_console=True``; the path options are the console's ``path_style`` and
    ``project_root`` (see :class:`~goggles_io.ConsoleHandler`). ``broker=URL``
    (the ``GOGGLES_BROKER`` form) forwards every event of this machine to that Redis and lets
    ``attach(..., from_broker=True)`` read from it.
    """
    if broker is not None:
        from goggles_io._broker.forwarder import BrokerForwarder
        from goggles_io._broker.settings import check_url

        STATE.broker_url = check_url(broker)
        get_transport().attach(BrokerForwarder(url=broker), ["*"])
    options = (enable_console, console_level, console_path_style, project_root, name, scopes)
    if all(option is None for option in options):
        return
    get_settings()
    from goggles_io.handlers.console import ConsoleHandler

    level = (
        logging.NOTSET if console_level is None else v.check_level(console_level, "console_level")
    )
    handler = ConsoleHandler(
        name=name or DEFAULT_CONSOLE_NAME,
        level=level,
        path_style=console_path_style,
        project_root=project_root,
    )
    enable = True if enable_console is None else bool(enable_console)
    get_transport().replace(handler, _scopes(scopes), enable=enable)


def flush(timeout_s: float | None = None) -> bool:
    """Wait until everything logged so far reached its handlers; does not close them."""
    transport = STATE.transport
    return True if transport is None else transport.flush(timeout_s)


def finish(timeout: float | None = None, *, wait_for_host: bool = True) -> FinishReport:
    """Deliver what is queued, flush and close every handler, and report drops per handler.

    Waits as long as delivery makes progress: a handler that takes nothing for
    ``GOGGLES_FINISH_STALL`` seconds (default 30; ``GOGGLES_SHUTDOWN_TIMEOUT`` where only that is
    set) is given up, what it did not take counted as lost; a long wait prints its progress,
    Ctrl-C abandons it with the counts. ``timeout`` (seconds), when given, bounds the whole
    call as well. Logging afterwards re-opens the handlers (or counts and reports what a handler could not take).
    With ``wait_for_host=False`` and a dedicated host, the call returns once the host has every
    event, without waiting for its handlers to write and close (the host does that on its own
    when its last client left); the report then holds only this process's side. In-process,
    the handlers live here, so it finishes them as usual.
    """
    consumer, STATE.consumer = STATE.consumer, None
    from_broker = FinishReport()
    if consumer is not None:
        bound = get_settings().shutdown_timeout_s if timeout is None else timeout
        from_broker = consumer.finish(bound)
    transport = STATE.transport
    if transport is None:
        return announce_finish(from_broker)
    report = transport.finish(timeout) if wait_for_host else transport.release(timeout)
    if consumer is None:
        return announce_finish(report)
    return announce_finish(
        FinishReport(
            handlers={**report.handlers, **from_broker.handlers},
            timed_out=report.timed_out or from_broker.timed_out,
            transport=report.transport,
            elapsed_s=report.elapsed_s,
            abandoned=report.abandoned,
        )
    )
