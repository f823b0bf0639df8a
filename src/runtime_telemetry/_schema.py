"""Schema base classes and the ``kind`` registry that the codec decodes through."""

from __future__ import annotations

import inspect
import re
import threading
import time
from typing import Any, ClassVar

import attrs

from runtime_telemetry.exceptions import DuplicateKindError, SchemaDefinitionError

__all__ = ["TelemetryEvent", "TelemetrySchema", "TelemetrySnapshot", "array_eq_key"]

_RESERVED_NAMES = frozenset({"kind", "version"})
_registry: dict[str, type[TelemetrySchema]] = {}
_registry_lock = threading.Lock()
_CAMEL_BOUNDARY = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


def _snake_case(name: str) -> str:
    """``LearningModuleStep`` -> ``learning_module_step``; ``HTTPError`` -> ``http_error``."""
    return _CAMEL_BOUNDARY.sub("_", name).lower()


def array_eq_key(value: Any) -> Any:
    """Key for ``attrs.field(eq=array_eq_key)``: arrays equal when dtype, shape and bytes are.

    Plain attrs equality would call ``bool(a == b)`` on arrays, which raises; with this key
    snapshots holding numpy arrays compare and hash by value, and NaNs equal themselves.
    """
    try:
        return (value.dtype.str, value.shape, value.tobytes())
    except AttributeError:
        return value


@attrs.frozen(kw_only=True)
class TelemetrySchema:
    """Base of everything that travels on the telemetry bus: frozen, keyword-only attrs classes.

    Every concrete subclass owns a unique ``kind`` (default: the class name in snake_case;
    set ``kind = "..."`` in the class body to override) and a ``version`` (default 1; bump it
    when fields change). Pass ``abstract=True`` in the class statement for an intermediate base
    that is never emitted and so needs no kind (its ``kind`` is ``""``). Decorate subclasses with
    ``@attrs.frozen(kw_only=True)``.

    Raises:
        DuplicateKindError: another class already owns the kind.
        SchemaDefinitionError: ``kind`` or ``version`` is annotated, which would make it a field.
    """

    kind: ClassVar[str] = ""
    version: ClassVar[int] = 1
    _telemetry_abstract: ClassVar[bool]
    """Set (in the class dict) on classes that are never emitted nor decoded."""
    timestamp: float = attrs.field(factory=time.time)
    """Wall-clock time of creation, float seconds since the epoch."""

    def __init_subclass__(cls, abstract: bool = False, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if abstract:
            # Kept in the class dict so attrs' slotted copy of the class stays abstract too.
            cls._telemetry_abstract = True
        if cls.__dict__.get("_telemetry_abstract", False):
            cls.kind = ""  # an empty kind marks a class that is never emitted nor decoded
            return
        _register(cls)

    def __str__(self) -> str:
        return self.kind


def _register(cls: type[TelemetrySchema]) -> None:
    annotated = _RESERVED_NAMES & set(inspect.get_annotations(cls))
    if annotated:
        name = sorted(annotated)[0]
        msg = (
            f"{cls.__qualname__} annotates {name!r}, which would make it a field; "
            f"write `{name} = ...` without an annotation (it is a class-level constant)."
        )
        raise SchemaDefinitionError(msg, cls)
    kind = cls.__dict__.get("kind") or _snake_case(cls.__name__)
    version = cls.version
    if not isinstance(kind, str):
        msg = f"{cls.__qualname__}.kind must be a non-empty str (got {kind!r})."
        raise SchemaDefinitionError(msg, cls)
    if isinstance(version, bool) or not isinstance(version, int) or version < 1:
        msg = f"{cls.__qualname__}.version must be an int >= 1 (got {version!r})."
        raise SchemaDefinitionError(msg, cls)
    cls.kind = kind
    with _registry_lock:
        existing = _registry.get(kind)
        # attrs rebuilds slotted classes, and modules get reloaded: the same class (by module
        # and qualified name) may register again and then replaces itself.
        if existing is not None and not _same_place(existing, cls):
            msg = (
                f"kind {kind!r} of {_where(cls)} is already used by {_where(existing)}; "
                f"set a different `kind = ...` in one of the two classes."
            )
            raise DuplicateKindError(msg, kind, existing, cls)
        _registry[kind] = cls


def _same_place(a: type, b: type) -> bool:
    return (a.__module__, a.__qualname__) == (b.__module__, b.__qualname__)


def _where(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def _lookup(kind: str) -> type[TelemetrySchema] | None:
    """The class registered under ``kind``, or None."""
    return _registry.get(kind)


@attrs.frozen(kw_only=True)
class TelemetryEvent(TelemetrySchema, abstract=True):
    """Something that happened in the runtime; emitted with ``emit()`` on ``telemetry.<module>``."""


@attrs.frozen(kw_only=True)
class TelemetrySnapshot(TelemetrySchema, abstract=True):
    """A (possibly large) view of runtime state; emitted with ``snapshot()`` on ``snapshots.*``.

    Snapshots have their own loggers so they can be switched on per module (e.g. for a live
    plotter) while events stay on.
    """


TelemetrySchema._telemetry_abstract = True
