"""The public surface: every __all__ name imports, every public name is in __all__."""

from __future__ import annotations

import importlib
import inspect

import pytest

import runtime_telemetry.exceptions as exceptions_module
from public_surface import public_surface_tests
from strategies import SHIPPED_MODULES

PUBLIC_MODULES = (
    "runtime_telemetry",
    "runtime_telemetry.events",
    *SHIPPED_MODULES,
    "runtime_telemetry.exceptions",
    "runtime_telemetry.testing",
)
TestPublicSurface = public_surface_tests("runtime_telemetry", PUBLIC_MODULES)
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
