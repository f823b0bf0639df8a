"""The public surface: every __all__ name imports, every public name is in __all__."""

from __future__ import annotations

import importlib

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
