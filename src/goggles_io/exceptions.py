"""Exceptions raised by goggles_io.

Every exception subclasses :class:`GogglesIOError` and the builtin it refines, so callers can
catch either. Caller bugs (bad names, bad payloads, bad levels) raise at the call site;
environment failures (full queues, failing handlers) never raise into application code: they
are counted and reported once on stderr.
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "ConfigConflictError",
    "ConfigurationError",
    "ConfigurationFileError",
    "ConfigurationNotFoundError",
    "ConfigurationTypeError",
    "FrameError",
    "GogglesIOError",
    "HandlerNotRegisteredError",
    "InvalidLevelError",
    "InvalidNameError",
    "InvalidPayloadError",
    "InvalidPayloadTypeError",
    "MethodNotAllowedError",
    "NoRunError",
    "RunFileError",
    "ShutdownError",
    "SocketOwnershipError",
    "UnknownFieldError",
    "UnknownHandlerError",
    "UnknownScopeError",
]


class GogglesIOError(Exception):
    """Base class of every error goggles_io raises."""


class ConfigurationError(GogglesIOError, ValueError):
    """A configuration value (argument, env variable, config file key) is malformed."""

    def __init__(self, msg: str, *, key: str | None = None, value: Any = None) -> None:
        super().__init__(msg)
        self.key = key
        self.value = value


class ConfigConflictError(ConfigurationError):
    """A run's config key is recorded a second time with a different value; ``previous`` holds the first."""

    def __init__(self, msg: str, *, key: str, value: Any, previous: Any) -> None:
        super().__init__(msg, key=key, value=value)
        self.previous = previous


class ConfigurationTypeError(ConfigurationError, TypeError):
    """A configuration value has the wrong type (a string where a number belongs, say)."""


class InvalidPayloadError(GogglesIOError, ValueError):
    """A logged value has the wrong type, shape or dtype for its kind."""

    def __init__(self, msg: str, *, value: Any = None) -> None:
        super().__init__(msg)
        self.value = value


class InvalidNameError(GogglesIOError, ValueError):
    """A metric, handler or scope name is empty or not a string."""

    def __init__(self, msg: str, *, name: Any = None) -> None:
        super().__init__(msg)
        self.name = name


class InvalidLevelError(GogglesIOError, ValueError):
    """A severity level is neither a known level name nor a non-negative int."""

    def __init__(self, msg: str, *, level: Any = None) -> None:
        super().__init__(msg)
        self.level = level


class HandlerNotRegisteredError(GogglesIOError, KeyError):
    """A handler spec names a class that was never passed to ``register_handler``."""

    def __init__(self, msg: str, *, key: str | None = None) -> None:
        super().__init__(msg)
        self.key = key

    def __str__(self) -> str:
        # KeyError would repr() the message; show it as written.
        return str(self.args[0])


class ConfigurationFileError(ConfigurationError):
    """A configuration file, or a mapping about to be saved, is malformed; ``path`` says which."""

    def __init__(self, msg: str, *, path: str, key: str | None = None, value: Any = None) -> None:
        super().__init__(msg, key=key, value=value)
        self.path = path


class ConfigurationNotFoundError(GogglesIOError, FileNotFoundError):
    """The configuration file does not exist."""

    def __init__(self, msg: str, *, path: str) -> None:
        super().__init__(msg)
        self.path = path


class ShutdownError(GogglesIOError, RuntimeError):
    """``GracefulShutdown`` was used where signal handlers cannot be installed."""


class FrameError(GogglesIOError, ValueError):
    """Bytes on the transport are not a well-formed frame or message; that connection is closed."""

    def __init__(self, msg: str, *, value: Any = None) -> None:
        super().__init__(msg)
        self.value = value


class SocketOwnershipError(GogglesIOError, PermissionError):
    """The socket path (or its directory) belongs to another user; we never connect or chmod."""

    def __init__(self, msg: str, *, path: str) -> None:
        super().__init__(msg)
        self.path = path


class UnknownHandlerError(GogglesIOError, KeyError):
    """``call_handler`` names a handler that is not attached to the bus."""

    def __init__(self, msg: str, *, name: Any = None) -> None:
        super().__init__(msg)
        self.name = name

    def __str__(self) -> str:
        return str(self.args[0])


class UnknownScopeError(GogglesIOError, ValueError):
    """``detach`` names a scope the handler is not attached on."""

    def __init__(self, msg: str, *, name: Any = None, scope: Any = None) -> None:
        super().__init__(msg)
        self.name = name
        self.scope = scope


class MethodNotAllowedError(GogglesIOError, AttributeError):
    """``call_handler`` names a method outside the handler class's ``remote_methods``."""

    def __init__(self, msg: str, *, method: Any = None) -> None:
        super().__init__(msg)
        self.method = method


class InvalidPayloadTypeError(InvalidPayloadError, TypeError):
    """A value passed for reading or writing is not the kind of container the call needs."""


class UnknownFieldError(InvalidNameError, KeyError):
    """A history field name is not in the history; catchable as ``ValueError`` or ``KeyError``."""

    def __str__(self) -> str:
        return str(self.args[0])


class RunFileError(GogglesIOError, ValueError):
    """A run file cannot be read; the message names the file and line (``path``, ``line``)."""

    def __init__(self, msg: str, path: str, line: int | None = None) -> None:
        super().__init__(msg)
        self.path = path
        self.line = line


class NoRunError(GogglesIOError, RuntimeError):
    """A ``goggles_io.compat.wandb`` call needs a run: ``wandb.init()`` first, not after ``finish()``."""
