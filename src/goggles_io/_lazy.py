"""Lazy re-exports for package ``__init__`` modules, so heavy sinks load on first access."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping, MutableMapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(
    package: str, lazy: Mapping[str, str], namespace: MutableMapping[str, Any]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """Return a module ``__getattr__`` and ``__dir__`` that import ``lazy`` names on first use.

    ``lazy`` maps each public name to the module that defines it; the value found is cached in
    ``namespace`` (the package's ``globals()``) so later lookups are plain attribute reads.
    """

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg)
        value = getattr(importlib.import_module(module), name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
