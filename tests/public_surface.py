"""Shared checks for each package's test_public_api: which modules are public, what they export."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from collections.abc import Sequence
from pathlib import Path

import pytest

__all__ = ["public_modules", "public_surface_tests", "ruf022_key", "undeclared_public_names"]


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


def public_surface_tests(package: str, modules: Sequence[str] | None = None) -> type:
    """A test class with the four checks every package shares, over ``modules`` of ``package``.

    Assign it to a ``Test...`` name in a test module so pytest collects it.
    """
    module_list = list(modules) if modules is not None else public_modules(package)

    class _PublicSurface:
        @pytest.mark.parametrize("module", module_list)
        def test_every_name_in_all_resolves(self, module: str) -> None:
            """Every name in a public module's __all__ is an attribute of it, lazy ones included."""
            mod = importlib.import_module(module)

            assert [] == [name for name in mod.__all__ if not hasattr(mod, name)]

        @pytest.mark.parametrize("module", module_list)
        def test_every_public_name_is_in_all(self, module: str) -> None:
            """Public names defined in a module, or re-exported by a package, are in __all__."""

            assert set() == undeclared_public_names(module)

        @pytest.mark.parametrize("module", module_list)
        def test_all_is_sorted(self, module: str) -> None:
            """__all__ is sorted the way ruff's RUF022 sorts it: CONSTANTS, Classes, functions."""
            names = importlib.import_module(module).__all__

            assert sorted(names, key=ruf022_key) == list(names)

        def test_py_typed_ships(self) -> None:
            """The package ships a py.typed marker."""
            root = importlib.import_module(package)

            assert (Path(str(root.__file__)).parent / "py.typed").is_file()

    return _PublicSurface
