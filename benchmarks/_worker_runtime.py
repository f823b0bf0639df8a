"""Runtime side of the worker benchmark: replays a recorded-style event stream per episode.

It imports only runtime_telemetry (as a runtime would); the events are built once, so an
episode times delivery alone: emit -> EventForwarder -> goggles bus.
"""

from __future__ import annotations

from runtime_telemetry import TelemetryEvent, get_telemetry
from runtime_telemetry.events import (
    LearningModuleObjectRecognized,
    LearningModuleStep,
    LearningModuleTimedOut,
    MostLikelyHypothesis,
    SensorPatchObserved,
)

_telemetry = get_telemetry("bench.worker_runtime")


def episode_events(steps: int, *, monty: bool = True) -> list[TelemetryEvent]:
    """4 modules x ``steps`` steps (patch, step, hypothesis), then one terminal event each.

    ``monty`` adds what Monty's statistics read (issue 21): a reset per module, one
    ``SensorimotorStep`` per step, locations, symmetry counts and prediction errors. Without
    it the stream is the one earlier versions of the vocabulary could express (the
    "before" rows of the aggregator benchmark run it on the older code).
    """
    extra_step: dict[str, object] = {}
    extra_mlh: dict[str, object] = {}
    events: list[TelemetryEvent] = []
    if monty:
        from runtime_telemetry.events import LearningModuleReset, SensorimotorStep

        events.extend(
            LearningModuleReset(lm_id=f"lm_{lm}", evidence_based=lm < 2) for lm in range(4)
        )
    for lm in range(4):
        lm_id = f"lm_{lm}"
        for step in range(1, steps + 1):
            if monty:
                extra_step = {"location": (0.0, 0.0, 0.01 * step), "symmetry_evidence": step % 3}
                extra_mlh = {"prediction_error": 0.1}
            events.append(SensorPatchObserved(sensor_id=f"patch_{lm}", step=step, on_object=True))
            events.append(
                LearningModuleStep(
                    lm_id=lm_id, step=step, possible_matches=("g0", "g1"), **extra_step
                )
            )
            events.append(
                MostLikelyHypothesis(lm_id=lm_id, step=step, graph_id="g0", location=(0, 0, 0),
                                     rotation=(1, 0, 0, 0), evidence=float(step), **extra_mlh)
            )  # fmt: skip
        if lm % 2:
            events.append(
                LearningModuleTimedOut(
                    lm_id=lm_id, step=steps, possible_matches=("g0", "g1"), pose_resolved=False
                )
            )
        else:
            events.append(
                LearningModuleObjectRecognized(
                    lm_id=lm_id, step=steps, graph_id="g0", location=(0, 0, 0),
                    rotation=(1, 0, 0, 0),
                )
            )  # fmt: skip
    if monty:
        modules = tuple(f"lm_{lm}" for lm in range(4))
        events.extend(
            SensorimotorStep(step=s, modules_processed=modules) for s in range(1, steps + 1)
        )
    return events


class ReplayRuntime:
    """Emit the same prebuilt episode each time (no memory to share)."""

    def __init__(self, steps: int = 120) -> None:
        self.events = episode_events(steps)

    def run_episode(self) -> None:
        emit = _telemetry.emit
        for event in self.events:
            emit(event)

    def dump_memory(self) -> dict[str, int]:
        return {}

    def load_memory(self, memory: dict[str, int]) -> None:
        pass
