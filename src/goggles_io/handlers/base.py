"""The handler plug point: the :class:`Handler` protocol, :class:`BaseHandler` and the registry.

Contract for handler authors:

* A handler has a bus-wide ``name`` (first registration wins), a ``level`` (``LOG`` events below
  it are not routed to it; other kinds carry no level and always are) and ``capabilities``, the
  frozenset of :class:`~goggles_io.Kind` it accepts (the bus routes nothing else to it).
* Lifecycle: ``open()`` before the first event (and again if the bus re-opens after
  ``finish()``), ``handle(event)`` for each event, ``flush()`` to push buffered output out,
  ``close()`` on ``detach`` / ``finish``. In async mode all four run on the handler's own worker
  thread, never concurrently; in sync mode they run in the caller under a per-handler lock.
  ``handle`` must not block for long and must not log through goggles_io. An exception it raises
  is counted and reported once on stderr; it never reaches the application.
* ``to_dict()`` returns ``{"cls": "<module>:<qualname>", "data": {...}}`` where ``data`` holds
  msgpack-safe builtins only (str, int, float, bool, None, lists, str-keyed dicts) and
  ``cls.from_dict(spec)`` rebuilds an equivalent handler: this is how a handler attached in one
  process is rebuilt in the host process (no pickle). Two handlers with equal ``to_dict()`` are
  the same configuration. :class:`BaseHandler` implements both from :meth:`BaseHandler.config`,
  which by default returns ``name`` and ``level``; a subclass adds its constructor arguments.
  The spec is built in the attaching process and must capture its context: absolute paths, and
  settings read from the environment or a ``.env`` file already resolved, because the host may
  run in another directory with another environment.
* Secrets (an API key) go under ``spec["secrets"]`` (from :meth:`BaseHandler.secrets`), never
  under ``data``: each value is a :class:`~goggles_io._util.secret.Secret` that prints as
  ``<redacted>``, and the bus compares secrets by hash only. ``from_dict`` passes them back as
  keyword arguments.
* ``remote_methods`` (a class attribute) is the allow-list of methods that
  :func:`goggles_io.call_handler` may invoke by handler name, with one msgpack-safe payload
  argument, on the instance the bus runs (possibly in the host process). They may be replayed
  after a host restart, so they must be idempotent (``record_config``, ``register_run``).
* Exactly once (ADR 0057): a host killed while handling a batch may have handed part of it over
  already, and the producer sends every batch the dead host had not acknowledged again. Each
  event carries ``producer`` and ``seq`` (the same on every send, increasing per producer); a
  sink skips an event whose ``seq`` is not above the last it kept from that producer and stores
  those marks with its data (:class:`~goggles_io.handlers.sequences.Sequences`,
  :class:`~goggles_io.handlers.sequences.SequenceLog`; ``LocalStorageHandler`` and
  ``CsvHandler`` do). It must have written what it took when ``flush()`` returns: the host
  acknowledges a batch after that.
* Arrays: a big array (``GOGGLES_SHM_THRESHOLD``) that came through the socket host's shared
  memory is a **read-only view** of the producer's slot (ADR 0077): copy it before changing it
  (``np.array(event.payload)``). Keeping it is safe: its bytes never change, and its slot stays
  the producer's until the last view of it is gone.
* ``handle_redelivered(events)`` (optional) takes such a resent list, marked redelivered
  (issue 29); without it, the lane calls ``handle_batch`` or ``handle`` as usual. There is no
  default here on purpose: a handler without the hook keeps its own ``handle_batch`` path and
  the lane's per-event error counting.
* ``producer_lost()`` (optional) is called by the socket host before it closes the handler
  because its last client left without ``finish()`` (the process died): the close that follows
  ends a crashed run (``RemoteHandler`` then finishes the run as ``crashed``). Cheap and
  thread-safe; absent, the handler just closes.
* ``losses()`` (optional) returns what the handler itself refused or could not write, as
  ``{reason: count}`` (``{"refused": 86600}``); the bus adds it to its ``FinishReport`` so a
  loss inside a sink is counted where the user looks. It must be cheap and thread-safe: it is
  read after ``close()`` and also when ``close()`` did not finish in time.
* Classes are found by :func:`register_handler` key ``"<module>:<qualname>"``; built-in handlers
  register themselves. A spec whose class is not registered raises
  :class:`~goggles_io.exceptions.HandlerNotRegisteredError`.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, ClassVar, Protocol, TypeVar, runtime_checkable

from goggles_io._event.records import Event, Kind
from goggles_io._util.secret import wrap_secrets
from goggles_io.exceptions import (
    HandlerNotRegisteredError,
    InvalidLevelError,
    InvalidNameError,
    MethodNotAllowedError,
)

__all__ = [
    "ALL_KINDS",
    "BaseHandler",
    "Handler",
    "check_remote_method",
    "get_handler_class",
    "handler_from_dict",
    "handler_key",
    "register_handler",
]

ALL_KINDS: frozenset[Kind] = frozenset(Kind)

_REGISTRY: dict[str, type[Any]] = {}

_H = TypeVar("_H", bound=type)


@runtime_checkable
class Handler(Protocol):
    """A sink, as robo-goggles' protocol describes it (the bus itself needs only ``name`` and
    ``handle``, and routes by ``capabilities`` when present, else by ``can_handle``)."""

    name: str
    level: int

    @property
    def capabilities(self) -> frozenset[Kind]:
        """The kinds routed here (read-only: a class attribute satisfies it)."""
        ...

    def can_handle(self, kind: Kind) -> bool: ...

    def open(self) -> None: ...

    def handle(self, event: Event) -> None: ...

    def flush(self) -> None: ...

    def close(self) -> None: ...

    def to_dict(self) -> dict[str, Any]: ...

    @classmethod
    def from_dict(cls, serialized: Mapping[str, Any]) -> Handler: ...


class BaseHandler:
    """Convenient base: stores name/level, no-op lifecycle, spec from :meth:`config`.

    Subclasses set ``capabilities`` (class attribute) and implement :meth:`handle`; those with
    constructor arguments beyond ``name`` and ``level`` extend :meth:`config`.
    """

    capabilities: ClassVar[frozenset[Kind]] = ALL_KINDS
    default_name: ClassVar[str] = "handler"
    remote_methods: ClassVar[frozenset[str]] = frozenset()
    # What this handler's lane does when full, if stricter than GOGGLES_WHEN_FULL: "block" or
    # "drop" (ADR 0025). Set it on the class, or on the instance and return it from config().
    when_full: str | None = None

    def __init__(self, name: str | None = None, level: int = logging.NOTSET) -> None:
        name = self.default_name if name is None else name
        if not isinstance(name, str) or not name:
            msg = f"name must be a non-empty str (got {name!r}); pass e.g. name='myapp.console'."
            raise InvalidNameError(msg, name=name)
        if isinstance(level, bool) or not isinstance(level, int) or level < 0:
            msg = f"level must be an int >= 0 such as goggles_io.INFO (got {level!r})."
            raise InvalidLevelError(msg, level=level)
        self.name = name
        self.level = level

    def can_handle(self, kind: Kind) -> bool:
        """Return whether events of ``kind`` are routed here (robo-goggles compatibility)."""
        return kind in self.capabilities

    def open(self) -> None:
        """Acquire resources; called before the first event and on re-open after finish."""

    def handle(self, event: Event) -> None:
        """Write one event; subclasses must override."""
        raise NotImplementedError

    def flush(self) -> None:
        """Push buffered output to its destination."""

    def close(self) -> None:
        """Release resources; the handler may be opened again later."""

    def losses(self) -> dict[str, int]:
        """What this handler refused or could not write so far, by reason (empty: nothing).

        Counted in the handler's own units (points for ``RemoteHandler``, lines for files);
        ``finish()`` reports it per handler beside the bus's own drops.
        """
        return {}

    def config(self) -> dict[str, Any]:
        """Constructor keyword arguments that rebuild this handler (msgpack-safe values)."""
        return {"name": self.name, "level": self.level}

    def secrets(self) -> dict[str, str]:
        """Constructor keyword arguments that are secrets; travel under ``spec["secrets"]``."""
        return {}

    def to_dict(self) -> dict[str, Any]:
        """Return the spec ``{"cls": key, "data": config}`` (plus ``"secrets"`` when any)."""
        spec: dict[str, Any] = {"cls": handler_key(type(self)), "data": self.config()}
        secrets = {k: v for k, v in self.secrets().items() if v is not None}
        if secrets:
            spec["secrets"] = wrap_secrets(secrets)
        return spec

    @classmethod
    def from_dict(cls, serialized: Mapping[str, Any]) -> BaseHandler:
        """Rebuild a handler from :meth:`to_dict` output (``data`` and ``secrets`` as kwargs)."""
        data, secrets = serialized.get("data") or {}, serialized.get("secrets") or {}
        return cls(**dict(data), **dict(secrets))

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r}, level={self.level!r})"


def check_remote_method(cls: type, method: object) -> str:
    """Return ``method`` if ``cls.remote_methods`` allows :func:`goggles_io.call_handler` to call it.

    Raises:
        MethodNotAllowedError: ``method`` is not in the class's ``remote_methods``.
    """
    allowed = frozenset(getattr(cls, "remote_methods", frozenset()))
    if (
        not isinstance(method, str)
        or method not in allowed
        or not callable(getattr(cls, method, None))
    ):
        msg = (
            f"method {method!r} of {cls.__qualname__} may not be called through call_handler; "
            f"allowed: {sorted(allowed)!r} (declare it in {cls.__qualname__}.remote_methods)."
        )
        raise MethodNotAllowedError(msg, method=method)
    return method


def handler_key(cls: type) -> str:
    """Return the registry key of a handler class: ``"<module>:<qualname>"``."""
    return f"{cls.__module__}:{cls.__qualname__}"


def register_handler(handler_class: _H) -> _H:
    """Make a handler class rebuildable from its spec; usable as a class decorator.

    Keyed by module and qualified name, so two ``MyHandler`` classes in different modules do not
    collide. Registering the same class twice is harmless.
    """
    cls = handler_class
    if not isinstance(cls, type):
        msg = f"register_handler expects a class (got {cls!r}); pass the class, not an instance."
        raise TypeError(msg)
    _REGISTRY[handler_key(cls)] = cls
    return cls


def get_handler_class(key: str) -> type[Any]:
    """Look up a registered class by ``"<module>:<qualname>"`` (or an unambiguous bare name)."""
    found = _REGISTRY.get(key)
    if found is not None:
        return found
    if ":" not in key:
        matches = [c for k, c in _REGISTRY.items() if k.rsplit(":", 1)[1].split(".")[-1] == key]
        if len(matches) == 1:
            return matches[0]
    msg = (
        f"handler class {key!r} is not registered; call goggles_io.register_handler(YourHandler)"
        f" in every process that attaches or hosts it (known: {sorted(_REGISTRY)!r})."
    )
    raise HandlerNotRegisteredError(msg, key=key)


def handler_from_dict(spec: Mapping[str, Any]) -> Handler:
    """Rebuild a handler from its spec via the registry.

    Our handlers (:class:`BaseHandler`) read the whole spec (``data`` and ``secrets``); any
    other class follows robo-goggles 0.3.6's protocol and gets ``spec["data"]``.
    """
    cls = get_handler_class(str(spec.get("cls")))
    if isinstance(cls, type) and issubclass(cls, BaseHandler):
        handler: Handler = cls.from_dict(spec)
    else:
        handler = cls.from_dict(spec.get("data") or {})
    return handler


def _registered_keys() -> Iterable[str]:
    """Return the registered keys (for diagnostics)."""
    return tuple(_REGISTRY)
