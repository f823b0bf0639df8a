"""The public surface: every __all__ name imports, every public name is in __all__."""

from __future__ import annotations

import pytest

import experiment_telemetry
from public_surface import public_surface_tests

TestPublicSurface = public_surface_tests("experiment_telemetry")


class TestPublicApi:
    @pytest.mark.parametrize("name", experiment_telemetry.__all__)
    def test_name_in_all_imports(self, name: str) -> None:
        """Each public name of the package resolves, lazy ones included."""
        assert getattr(experiment_telemetry, name) is not None
