"""A runtime for the worker tests: runtime side only (imports runtime_telemetry, nothing else).

Each episode emits ``steps`` step events of one module and a time-out that lists the graphs in
its memory; learning adds ``graph_<seed>``. ``hang_seed`` makes an episode write the process id
to ``pid_file`` halfway and wait to be killed; ``fail_seed`` makes it raise.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

from runtime_telemetry import get_telemetry
from runtime_telemetry.events import LearningModuleStep, LearningModuleTimedOut

_telemetry = get_telemetry(__name__)


class ToyRuntime:
    def __init__(
        self,
        *,
        steps: int = 5,
        hang_seed: int | None = None,
        pid_file: str | None = None,
        fail_seed: int | None = None,
    ) -> None:
        self.steps = steps
        self.hang_seed = hang_seed
        self.pid_file = pid_file
        self.fail_seed = fail_seed
        self.memory: list[str] = []

    def run_episode(self, *, seed: int, learn: bool) -> None:
        graphs = sorted(self.memory)
        for step in range(1, self.steps + 1):
            _telemetry.emit(LearningModuleStep(lm_id="lm_0", step=step, possible_matches=graphs))
            if seed == self.fail_seed:
                msg = f"toy runtime fails on seed {seed}"
                raise RuntimeError(msg)
            if seed == self.hang_seed and step == self.steps // 2 and self.pid_file:
                Path(self.pid_file).write_text(str(os.getpid()))
                threading.Event().wait(120)  # until the test SIGKILLs this process
        _telemetry.emit(
            LearningModuleTimedOut(
                lm_id="lm_0", step=self.steps, possible_matches=graphs, pose_resolved=False
            )
        )
        if learn:
            self.memory.append(f"graph_{seed}")

    def dump_memory(self) -> dict[str, Any]:
        return {"graphs": list(self.memory), "pid": os.getpid()}

    def load_memory(self, memory: dict[str, Any]) -> None:
        self.memory = list(memory["graphs"])


class NoMemoryRuntime:
    """A runtime without ``dump_memory``/``load_memory``: it cannot run parallel episodes."""

    def run_episode(self, *, seed: int, learn: bool) -> None:
        _telemetry.emit(LearningModuleStep(lm_id="lm_0", step=1, possible_matches=()))
