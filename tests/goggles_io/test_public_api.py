"""The public surface: __all__ is complete and importable, import is cheap and lean."""

from __future__ import annotations

import subprocess
import sys

import pytest

import goggles_io
import goggles_io.handlers
from public_surface import public_surface_tests

TestPublicSurface = public_surface_tests("goggles_io")


class TestPublicApi:
    def test_unknown_attribute_raises_attribute_error(self) -> None:
        """A name that is neither defined nor lazily exported raises AttributeError naming it."""
        with pytest.raises(AttributeError, match="nope"):
            goggles_io.handlers.nope  # noqa: B018

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


class TestOldPublicPaths:
    def test_collector_and_ui_old_paths_import(self) -> None:
        """goggles_io.collector and goggles_io.ui (before the server wing) still give the same names."""
        from goggles_io.collector import Collector, is_loopback
        from goggles_io.server import Collector as NewCollector
        from goggles_io.server import is_loopback as new_is_loopback
        from goggles_io.server.ui import make_ui_app as new_make_ui_app
        from goggles_io.ui import make_ui_app

        assert (NewCollector, new_is_loopback, new_make_ui_app) == (
            Collector,
            is_loopback,
            make_ui_app,
        )
