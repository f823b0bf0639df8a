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
    A name mapped to the package's own submodule of that name (``"config": "pkg.config"``)
    resolves to the module itself, so ``pkg.config`` works without ``import pkg.config``.
    """

    def __getattr__(name: str) -> Any:
        module = lazy.get(name)
        if module is None:
            msg = f"module {package!r} has no attribute {name!r}"
            raise AttributeError(msg)
        imported = importlib.import_module(module)
        value = imported if module == f"{package}.{name}" else getattr(imported, name)
        namespace[name] = value
        return value

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(namespace.get("__all__", ())))

    return __getattr__, __dir__
