"""Hydra finds split-telemetry's Monty configs: ``+telemetry=split_telemetry`` and its kin.

Hydra discovers search-path plugins by importing every module of the ``hydra_plugins``
namespace package, which is why this lives in ``src/hydra_plugins/`` beside the project's
packages (as Monty's wheel ships ``hydra_plugins/monty_searchpath_plugin``). It only appends
``pkg://experiment_telemetry.monty.conf`` to the search path; importing it imports nothing of
the project or of Monty (ADR 0055).
"""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath
from hydra.plugins.search_path_plugin import SearchPathPlugin

__all__ = ["SplitTelemetrySearchPathPlugin"]


class SplitTelemetrySearchPathPlugin(SearchPathPlugin):
    """Appends this project's Monty config folder to every Hydra app's search path."""

    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        search_path.append(provider="split-telemetry", path="pkg://experiment_telemetry.monty.conf")
