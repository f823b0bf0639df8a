"""The public surface: every __all__ name imports, every public name is in __all__."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import experiment_telemetry
from public_surface import public_modules, ruf022_key, undeclared_public_names

PUBLIC_MODULES = public_modules("experiment_telemetry")


class TestPublicApi:
    @pytest.mark.parametrize("name", experiment_telemetry.__all__)
    def test_name_in_all_imports(self, name: str) -> None:
        """Each public name of the package resolves, lazy ones included."""
        assert getattr(experiment_telemetry, name) is not None

    @pytest.mark.parametrize("module", PUBLIC_MODULES)
    def test_every_all_name_resolves(self, module: str) -> None:
        """Every name in a public module's __all__ is an attribute of that module."""
        mod = importlib.import_module(module)

        assert [] == [name for name in mod.__all__ if not hasattr(mod, name)]

    @pytest.mark.parametrize("module", PUBLIC_MODULES)
    def test_every_public_name_is_in_all(self, module: str) -> None:
        """Public names defined in a module, or re-exported by a package, are in __all__."""

        assert set() == undeclared_public_names(module)

    @pytest.mark.parametrize("module", PUBLIC_MODULES)
    def test_all_is_sorted(self, module: str) -> None:
        """__all__ is sorted the way ruff's RUF022 sorts it: CONSTANTS, Classes, functions."""
        names = importlib.import_module(module).__all__

        assert sorted(names, key=ruf022_key) == list(names)

    def test_py_typed_ships(self) -> None:
        """The package ships a py.typed marker."""

        assert (Path(experiment_telemetry.__file__).parent / "py.typed").is_file()
