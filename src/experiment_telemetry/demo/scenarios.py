"""The failures the demo's simulated trainer can be driven into, named in one place.

A module without imports: the trainer (runtime side) takes its ``FAILURES`` from here, and
``telemetry demo --scenario`` its choices, so ``telemetry --help`` lists them without loading
the runtime.
"""

from __future__ import annotations

__all__ = ["FAILURES", "SCENARIOS"]

FAILURES = (
    "none",
    "value-explosion",
    "return-collapse",
    "loss-without-return",
    "train-steps-stall",
    "silence",
    "non-finite",
)
"""What ``SimulatedTrainer`` can break: ``none`` is a healthy run."""
SCENARIOS = FAILURES[1:]
"""Every failure the demo can show (``none``, the healthy run, is the trainer's default)."""
