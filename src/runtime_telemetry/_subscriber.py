"""``Subscriber``: a ``logging.Handler`` that hands schema objects to typed callbacks."""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, ClassVar, TypeVar

from runtime_telemetry._deliver import register_base
from runtime_telemetry._emitter import EVENTS_ROOT, SNAPSHOTS_ROOT
from runtime_telemetry._schema import TelemetrySchema
from runtime_telemetry.exceptions import TelemetryTypeError, TelemetryValueError

__all__ = ["Subscriber", "receives"]

_logger = logging.getLogger("runtime_telemetry")
_ROOTS = (EVENTS_ROOT, SNAPSHOTS_ROOT)
_S = TypeVar("_S", bound="Subscriber")
_F = TypeVar("_F", bound=Callable[..., Any])


def receives(*schema_types: type[TelemetrySchema]) -> Callable[[_F], _F]:
    """Mark a ``Subscriber`` method as the receiver of these schema classes and their subclasses.

    The most specific match along the schema's MRO wins; schemas nobody receives go to
    ``on_event``.

    Raises:
        TelemetryTypeError: (a ``TypeError``) an argument is not a ``TelemetrySchema`` subclass.
    """
    if not schema_types:
        msg = "receives() needs at least one TelemetrySchema subclass (got none)."
        raise TelemetryTypeError(msg, schema_types)
    for schema_type in schema_types:
        if not (isinstance(schema_type, type) and issubclass(schema_type, TelemetrySchema)):
            msg = f"receives() takes TelemetrySchema subclasses (got {schema_type!r})."
            raise TelemetryTypeError(msg, schema_type)

    def mark(method: _F) -> _F:
        method._telemetry_receives = (  # type: ignore[attr-defined]
            *getattr(method, "_telemetry_receives", ()),
            *schema_types,
        )
        return method

    return mark


def _ignore(schema: TelemetrySchema) -> None:
    """The route of a schema only the default ``on_event`` receives (it does nothing)."""


class Subscriber(logging.Handler):
    """Receives schema objects from ``telemetry.*`` (and optionally ``snapshots.*``) loggers.

    Subclass it and override ``on_event``, or mark methods with ``@receives(SomeEvent)``. It is
    a plain ``logging.Handler``: it runs synchronously in the emitting thread (use
    ``ThreadedSubscriber`` for slow work), and levels and filters work as usual. An exception
    in a callback never reaches the runtime: it is counted in ``errors`` and the first one is
    logged with its traceback on the ``runtime_telemetry`` logger. Records whose ``msg`` is
    not a schema (plain log lines on a telemetry logger) are ignored.
    """

    _receivers: ClassVar[dict[type, str]] = {}
    lock: threading.RLock
    """The handler's lock, never ``None``: ``logging.Handler.__init__`` creates it."""

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        receivers: dict[type, str] = {}
        for klass in reversed(cls.__mro__):
            for name, member in vars(klass).items():
                for schema_type in getattr(member, "_telemetry_receives", ()):
                    receivers[schema_type] = name
        cls._receivers = receivers

    def __init__(self, level: int = logging.NOTSET) -> None:
        super().__init__(level)
        self.errors = 0
        self._loggers: list[logging.Logger] = []
        self._routes: dict[type, Callable[[Any], object]] = {}

    def __repr__(self) -> str:
        return f"<{type(self).__qualname__} errors={self.errors}>"

    def __enter__(self: _S) -> _S:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def on_event(self, schema: TelemetrySchema) -> None:
        """Receive a schema no ``@receives`` method claims; the default ignores it."""

    def subscribe(self: _S, *logger_names: str) -> _S:
        """Attach to these loggers (default: ``"telemetry"``, every event) and return self.

        Name ``"snapshots"`` (or ``"snapshots.<module>"``) to receive snapshots too. Levels are
        not touched: lower them with ``configure()``.

        Raises:
            TelemetryValueError: a name is outside the ``telemetry``/``snapshots`` roots, or
                the subscriber is closed.
        """
        if self._closed_flag():
            msg = f"{self!r} is closed; create a new subscriber instead of subscribe()."
            raise TelemetryValueError(msg, self)
        names = logger_names or (EVENTS_ROOT,)
        for name in names:
            if not isinstance(name, str) or not any(
                name == root or name.startswith(root + ".") for root in _ROOTS
            ):
                msg = (
                    f"logger_names must be 'telemetry', 'snapshots' or names under them "
                    f"(got {name!r})."
                )
                raise TelemetryValueError(msg, name)
        for name in names:
            logger = logging.getLogger(name)
            logger.addHandler(self)
            if logger not in self._loggers:
                self._loggers.append(logger)
        return self

    def emit(self, record: logging.LogRecord) -> None:
        """Pass the record's schema to ``emit_schema`` (``logging.Handler`` override).

        Override ``emit_schema`` instead: a class with its own ``emit`` is handed a
        ``LogRecord`` built for every event, where the others get the schema without one.
        """
        schema = record.msg
        if isinstance(schema, TelemetrySchema):
            self.emit_schema(record.name, record.levelno, schema)

    def emit_schema(self, name: str, level: int, schema: TelemetrySchema) -> None:
        """Take one schema emitted on logger ``name`` at ``level``, under the handler's lock
        (from ``emit``, or from the emitter without a record: ADR 0078); the default
        delivers it to its receiver."""
        self._deliver(schema)

    def _direct(self, name: str, level: int, schema: TelemetrySchema) -> None:
        """What ``Handler.handle`` does with a record of ``schema`` when there are no filters
        (``runtime_telemetry._deliver``): ``emit_schema`` under the lock. A schema only the
        default ``on_event`` would receive is skipped, lock and all (nothing to do)."""
        cls = type(self)
        if cls.emit_schema is Subscriber.emit_schema and cls._deliver is Subscriber._deliver:
            route = self._routes.get(type(schema)) or self._route(type(schema))
            if route is _ignore:
                return
            with self.lock:
                try:
                    route(schema)
                except Exception:
                    self._report_error(schema)
            return
        with self.lock:
            self.emit_schema(name, level, schema)

    def receive(self, schema: TelemetrySchema) -> None:
        """Hand ``schema`` to its receiver under the handler's lock, as ``emit`` would, without
        a ``LogRecord`` (replaying events decoded elsewhere). Levels and filters are the
        caller's to honour; a subclass that overrides ``emit`` or ``emit_schema`` must be given
        records instead."""
        with self.lock:
            self._deliver(schema)

    def accepts(self, schema_type: type) -> bool:
        """Whether schemas of ``schema_type`` reach a callback here (a ``@receives`` method or
        an overridden ``on_event``): a replay may skip this subscriber for the others, which
        the default ``on_event`` ignores."""
        route = self._routes.get(schema_type) or self._route(schema_type)
        return route is not _ignore

    def handleError(self, record: logging.LogRecord) -> None:
        """Count and report once, instead of printing to stderr for every record."""
        self._report_error(record.msg)

    def close(self) -> None:
        """Detach from every logger and report how many callbacks raised; idempotent."""
        self._detach()
        self._report_summary()
        super().close()

    def _closed_flag(self) -> bool:
        return bool(getattr(self, "_closed", False))

    def _detach(self) -> None:
        for logger in self._loggers:
            logger.removeHandler(self)
        self._loggers.clear()

    def _deliver(self, schema: TelemetrySchema) -> None:
        """Dispatch by schema class (cached per class) and contain any exception."""
        route = self._routes.get(type(schema))
        if route is None:
            route = self._route(type(schema))
        try:
            route(schema)
        except Exception:
            self._report_error(schema)

    def _route(self, schema_type: type) -> Callable[[Any], object]:
        receivers = self._receivers
        name = next((receivers[k] for k in schema_type.__mro__ if k in receivers), "on_event")
        route: Callable[[Any], object] = getattr(self, name)
        if getattr(route, "__func__", None) is Subscriber.on_event:
            route = _ignore  # the default on_event: nothing to call
        self._routes[schema_type] = route
        return route

    def _report_error(self, schema: object) -> None:
        self.errors += 1
        if self.errors == 1:
            _logger.warning(
                "%r raised while handling %s; later errors are only counted (see .errors)",
                self,
                schema,
                exc_info=True,
            )

    def _report_summary(self) -> None:
        if self.errors > 1 and not self._closed_flag():
            _logger.warning("%r: %d callbacks raised in total", self, self.errors)


register_base(Subscriber)
