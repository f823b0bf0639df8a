"""What the host builds from a client's words: a handler from its spec, a bound from a number.

The host trusts only peers of its own uid (``SO_PEERCRED``), so importing the module a spec
names is no escalation: it is what that user's own process would import.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["build_handler", "positive_bound"]


def build_handler(spec: Any) -> Any:
    """The handler ``spec`` describes; imports its class's module when it is not registered."""
    from goggles_io.exceptions import HandlerNotRegisteredError
    from goggles_io.handlers.base import handler_from_dict

    try:
        return handler_from_dict(spec)
    except HandlerNotRegisteredError:
        # Same-uid peers only: importing the module that defines the class is no escalation.
        module = str(spec.get("cls", "")).partition(":")[0]
        if not module or module == "__main__":
            raise
        importlib.import_module(module)
        return handler_from_dict(spec)


def positive_bound(value: Any) -> int | None:
    """A client-given bound: a positive int, else ``None`` (the host's own default)."""
    return value if type(value) is int and value > 0 else None
