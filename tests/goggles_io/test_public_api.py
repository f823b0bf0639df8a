"""The public surface: __all__ is complete and importable, import is cheap and lean."""

from __future__ import annotations

import importlib
import subprocess
import sys

import pytest

import goggles_io

_PUBLIC_MODULES = [
    "goggles_io",
    "goggles_io.exceptions",
    "goggles_io.testing",
    "goggles_io.handlers",
    "goggles_io.handlers.base",
]
_EAGER = ["goggles_io", "goggles_io.exceptions", "goggles_io.testing", "goggles_io.handlers.base"]


class TestPublicApi:
    @pytest.mark.parametrize("module", _EAGER)
    def test_every_public_name_is_in_all(self, module: str) -> None:
        """Every public class/function defined by the module is in __all__, which is sorted."""
        mod = importlib.import_module(module)
        public = {
            n
            for n, v in vars(mod).items()
            if not n.startswith("_") and getattr(v, "__module__", None) == module
        }

        assert public <= set(mod.__all__)
        assert sorted(mod.__all__) == list(mod.__all__) or module == "goggles_io"

    @pytest.mark.parametrize("module", ["goggles_io", "goggles_io.handlers"])
    def test_every_name_in_all_resolves(self, module: str) -> None:
        """Every name in __all__, lazy ones included, can be fetched."""
        mod = importlib.import_module(module)

        assert [] == [name for name in mod.__all__ if getattr(mod, name, None) is None]

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

    def test_import_is_fast(self) -> None:
        """import goggles_io takes < 150 ms (min of 3 fresh interpreters, -X importtime)."""
        times = []
        for _ in range(3):
            err = subprocess.run(
                [sys.executable, "-X", "importtime", "-c", "import goggles_io"],
                capture_output=True,
                text=True,
                check=True,
            ).stderr
            line = next(x for x in err.splitlines() if x.rstrip().endswith("| goggles_io"))
            times.append(int(line.split("|")[1]) / 1e6)

        assert min(times) < 0.150

    def test_freeze_wraps_gc_freeze(self) -> None:
        """freeze() moves objects to the permanent generation."""
        import gc

        goggles_io.freeze()
        try:
            assert gc.get_freeze_count() > 0
        finally:
            gc.unfreeze()
