"""Errors raised by ``runtime_telemetry``: each refines a builtin, so callers may catch either."""

from __future__ import annotations

__all__ = [
    "ConfigurationError",
    "DuplicateKindError",
    "SchemaDecodeError",
    "SchemaDefinitionError",
    "SchemaEncodeError",
    "SchemaTypeError",
    "TelemetryError",
    "TelemetryTypeError",
    "TelemetryValueError",
    "UnknownKindError",
]


class TelemetryError(Exception):
    """Base class of every error ``runtime_telemetry`` raises."""


class SchemaDefinitionError(TelemetryError, TypeError):
    """A schema class is declared wrongly (e.g. ``kind`` annotated as a field)."""

    def __init__(self, msg: str, cls: type) -> None:
        super().__init__(msg)
        self.cls = cls


class DuplicateKindError(TelemetryError, ValueError):
    """A second schema class claimed a ``kind`` that another class already owns."""

    def __init__(self, msg: str, kind: str, existing: type, new: type) -> None:
        super().__init__(msg)
        self.kind = kind
        self.existing = existing
        self.new = new


class UnknownKindError(TelemetryError, KeyError):
    """No schema class is registered under this ``kind``."""

    def __init__(self, msg: str, kind: object) -> None:
        super().__init__(msg)
        self.kind = kind

    def __str__(self) -> str:
        # KeyError would repr-quote the message.
        return str(self.args[0])


class TelemetryTypeError(TelemetryError, TypeError):
    """An argument has the wrong type; ``value`` holds it."""

    def __init__(self, msg: str, value: object) -> None:
        super().__init__(msg)
        self.value = value


class TelemetryValueError(TelemetryError, ValueError):
    """An argument has the right type but a value out of range; ``value`` holds it."""

    def __init__(self, msg: str, value: object) -> None:
        super().__init__(msg)
        self.value = value


class SchemaTypeError(TelemetryTypeError):
    """An object of the wrong type was passed where a schema was expected."""


class SchemaEncodeError(TelemetryError, ValueError):
    """A schema holds a value the codec cannot encode losslessly (e.g. an object array)."""

    def __init__(self, msg: str, kind: str, field: str) -> None:
        super().__init__(msg)
        self.kind = kind
        self.field = field


class SchemaDecodeError(TelemetryError, ValueError):
    """A mapping or JSON line does not decode into its schema: missing or ill-typed field."""

    def __init__(self, msg: str, kind: object, field: str | None) -> None:
        super().__init__(msg)
        self.kind = kind
        self.field = field


class ConfigurationError(TelemetryError, ValueError):
    """``configure()`` got an unknown level name or a logger outside the telemetry roots."""

    def __init__(self, msg: str, name: object, value: object) -> None:
        super().__init__(msg)
        self.name = name
        self.value = value
