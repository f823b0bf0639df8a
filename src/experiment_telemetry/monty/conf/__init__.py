"""Hydra config groups of the Monty adapter (``telemetry``, ``logging``, ``step_hook``), found
through ``pkg://experiment_telemetry.monty.conf`` (``hydra_plugins/split_telemetry_searchpath``)."""

__all__: list[str] = []
