"""The public surface: every __all__ name imports, every public name is in __all__."""

from __future__ import annotations

import importlib
import inspect
from pathlib import Path

import pytest

import runtime_telemetry
import runtime_telemetry.exceptions as exceptions_module
from public_surface import ruf022_key, undeclared_public_names
from strategies import SHIPPED_MODULES

PUBLIC_MODULES = (
    "runtime_telemetry",
    "runtime_telemetry.events",
    *SHIPPED_MODULES,
    "runtime_telemetry.exceptions",
    "runtime_telemetry.testing",
)
ALL_NAMES = [
    (module, name) for module in PUBLIC_MODULES for name in importlib.import_module(module).__all__
]
EXCEPTIONS = [
    obj
    for obj in vars(exceptions_module).values()
    if inspect.isclass(obj) and issubclass(obj, BaseException)
]


class TestAll:
    @pytest.mark.parametrize(("module", "name"), ALL_NAMES)
    def test_every_all_name_imports(self, module: str, name: str) -> None:
        """Each name in __all__ resolves to an attribute of its module."""

        assert hasattr(importlib.import_module(module), name)

    @pytest.mark.parametrize("module", PUBLIC_MODULES)
    def test_every_public_name_is_in_all(self, module: str) -> None:
        """Public names defined in a module, or re-exported by a package, are in __all__."""

        assert set() == undeclared_public_names(module)

    @pytest.mark.parametrize("module", PUBLIC_MODULES)
    def test_all_is_sorted(self, module: str) -> None:
        """__all__ is kept sorted the way ruff's RUF022 sorts it: CONSTANTS, Classes, functions."""
        names = importlib.import_module(module).__all__

        assert sorted(names, key=ruf022_key) == list(names)

    def test_py_typed_ships(self) -> None:
        """The package ships a py.typed marker."""

        assert (Path(runtime_telemetry.__file__).parent / "py.typed").is_file()


class TestExceptions:
    @pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda e: e.__name__)
    def test_every_exception_derives_from_the_base(self, exc: type[BaseException]) -> None:
        """Every exception in exceptions.py is a TelemetryError."""

        assert issubclass(exc, exceptions_module.TelemetryError)

    @pytest.mark.parametrize(
        "exc",
        [e for e in EXCEPTIONS if e is not exceptions_module.TelemetryError],
        ids=lambda e: e.__name__,
    )
    def test_every_exception_refines_a_builtin(self, exc: type[BaseException]) -> None:
        """Each concrete error also subclasses the builtin it refines."""

        assert issubclass(exc, (TypeError, ValueError, KeyError))
