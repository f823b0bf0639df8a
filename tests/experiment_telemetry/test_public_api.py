"""Every name in experiment_telemetry.__all__ imports."""

from __future__ import annotations

import pytest

import experiment_telemetry


class TestPublicApi:
    @pytest.mark.parametrize("name", experiment_telemetry.__all__)
    def test_name_in_all_imports(self, name: str) -> None:
        """Each public name resolves."""
        assert getattr(experiment_telemetry, name) is not None
