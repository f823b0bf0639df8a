"""The public surface: every __all__ name imports, every public name is in __all__."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys

import pytest

import experiment_telemetry
from public_surface import public_surface_tests

TestPublicSurface = public_surface_tests("experiment_telemetry")


class TestPublicApi:
    @pytest.mark.parametrize("name", experiment_telemetry.__all__)
    def test_name_in_all_imports(self, name: str) -> None:
        """Each public name of the package resolves, lazy ones included."""
        assert getattr(experiment_telemetry, name) is not None


class TestOldNames:
    @pytest.mark.parametrize(
        ("module", "old", "new"),
        [
            ("experiment_telemetry", "WandbTransform", "GogglesTransform"),
            ("experiment_telemetry.transforms", "WandbTransform", "GogglesTransform"),
            ("experiment_telemetry.workers", "EventCollector", "EpisodeInbox"),
        ],
    )
    def test_old_name_is_an_alias_of_the_new(self, module: str, old: str, new: str) -> None:
        """A renamed public class is still importable under its old name, as the same object."""
        mod = importlib.import_module(module)

        assert getattr(mod, new) is getattr(mod, old)


class TestImportCost:
    def test_importing_the_package_loads_none_of_its_names(self) -> None:
        """A fresh interpreter importing experiment_telemetry loads no submodule, goggles_io or
        cattrs: every name waits for its first use."""
        code = (
            "import json, sys, experiment_telemetry; "
            "print(json.dumps(sorted(m for m in sys.modules if m.startswith(("
            "'experiment_telemetry.', 'goggles_io', 'cattrs')))))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )

        assert [] == json.loads(out.stdout)
