"""Shared checks for each package's test_public_api: which modules are public, what they export."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

__all__ = ["public_modules", "ruf022_key", "undeclared_public_names"]


def public_modules(package: str) -> list[str]:
    """The package and every submodule users import by path (no ``_`` in any part)."""
    root = importlib.import_module(package)
    found = pkgutil.walk_packages(root.__path__, package + ".")
    names = sorted(m.name for m in found if not any(p.startswith("_") for p in m.name.split(".")))
    return [package, *names]


def undeclared_public_names(module: str) -> set[str]:
    """Public names defined in ``module`` (or re-exported by it, for a package) missing from __all__."""
    mod = importlib.import_module(module)
    is_package = hasattr(mod, "__path__")
    public = {
        name
        for name, obj in vars(mod).items()
        if not name.startswith("_")
        and not inspect.ismodule(obj)
        and (
            getattr(obj, "__module__", None) == module
            or (is_package and str(getattr(obj, "__module__", "")).startswith(module + "."))
        )
    }
    return public - set(mod.__all__)


def ruf022_key(name: str) -> tuple[int, str]:
    """Sort key of ruff's RUF022: CONSTANTS, then Classes, then functions."""
    return (0 if name.isupper() else 1 if name[0].isupper() else 2), name
