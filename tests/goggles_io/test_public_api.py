"""The public surface: __all__ is complete and importable, import is cheap and lean."""

from __future__ import annotations

import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import goggles_io
import goggles_io.handlers
from public_surface import public_modules, ruf022_key, undeclared_public_names

_PUBLIC_MODULES = public_modules("goggles_io")


class TestPublicApi:
    @pytest.mark.parametrize("module", _PUBLIC_MODULES)
    def test_every_public_name_is_in_all(self, module: str) -> None:
        """Public names defined in a module, or re-exported by a package, are in __all__."""

        assert set() == undeclared_public_names(module)

    @pytest.mark.parametrize("module", _PUBLIC_MODULES)
    def test_all_is_sorted(self, module: str) -> None:
        """__all__ is sorted the way ruff's RUF022 sorts it: CONSTANTS, Classes, functions."""
        names = importlib.import_module(module).__all__

        assert sorted(names, key=ruf022_key) == list(names)

    @pytest.mark.parametrize("module", _PUBLIC_MODULES)
    def test_every_name_in_all_resolves(self, module: str) -> None:
        """Every name in __all__, lazy ones included, can be fetched."""
        mod = importlib.import_module(module)

        assert [] == [name for name in mod.__all__ if not hasattr(mod, name)]

    def test_unknown_attribute_raises_attribute_error(self) -> None:
        """A name that is neither defined nor lazily exported raises AttributeError naming it."""
        with pytest.raises(AttributeError, match="'nope'"):
            goggles_io.handlers.nope  # noqa: B018

    def test_py_typed_ships(self) -> None:
        """The package ships a py.typed marker."""

        assert (Path(goggles_io.__file__).parent / "py.typed").is_file()

    def test_robo_goggles_names_exist(self) -> None:
        """The names the robo-goggles README uses are importable from goggles_io."""
        for name in [
            "DEBUG",
            "INFO",
            "WARNING",
            "ERROR",
            "CRITICAL",
            "get_logger",
            "attach",
            "detach",
            "configure",
            "finish",
            "flush",
            "freeze",
            "timeit",
            "trace_on_error",
            "register_handler",
            "Event",
            "Kind",
            "ConsoleHandler",
            "GogglesLogger",
            "TextLogger",
            "Handler",
        ]:
            assert hasattr(goggles_io, name), name

    def test_import_does_not_pull_heavy_dependencies(self) -> None:
        """import goggles_io loads neither jax, matplotlib, wandb nor imageio."""
        code = (
            "import sys, goggles_io; "
            "print(sorted(m for m in ('jax', 'matplotlib', 'wandb', 'imageio') "
            "if m in sys.modules))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout

        assert "[]" == out.strip()

    def test_freeze_wraps_gc_freeze(self) -> None:
        """freeze() moves objects to the permanent generation."""
        import gc

        goggles_io.freeze()
        try:
            assert gc.get_freeze_count() > 0
        finally:
            gc.unfreeze()
