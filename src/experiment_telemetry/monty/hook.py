"""``StepHook``: Monty's learning modules, read after every step, said as runtime events.

Monty calls its experiment's ``step_hook`` after each step of the model (after the modules
stepped, voted and checked their terminal conditions, before the environment moves). This hook
reads each learning module's state there, compares it with what it read the step before, and
emits what changed in this project's runtime vocabulary (``runtime_telemetry.events``):

- ``LearningModuleReset`` at an episode's first step (``evidence_based``: Monty's evidence LMs);
- ``LearningModuleStep`` for each input a module processed (Monty's ``lm_processed_steps``):
  its possible matches, whether the input was on the object, the location, the symmetry count;
- ``MostLikelyHypothesis`` for each matching input of an evidence module, with the prediction
  error Monty appended for it (``mlh_prediction_error``);
- ``LearningModuleVotesReceived`` once per module and step when the model votes;
- ``LearningModuleObjectRecognized`` / ``NoMatch`` / ``ConclusionWithdrawn`` / ``TimedOut``
  when the module's terminal state changes (read again when Monty reports the episode, so a
  time-out set after the last step is said too);
- ``LearningModuleGoalStateAttempted`` per goal state the module recorded;
- ``ObjectUnderSensor`` (experiment-side ground truth, from Monty's semantic sensor) when the
  object under a module's input changes; ``SensorimotorStep`` once per step.

Nothing in Monty changes: the hook returns Monty's actions untouched, and an error inside it
is counted and logged once, never raised into Monty's loop. ``RecognitionAggregator`` scores
these events exactly as it scores any runtime's.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from experiment_telemetry.monty import _session
from experiment_telemetry.monty._hydra import hydra_settings
from experiment_telemetry.monty._lm_state import ModuleReader
from experiment_telemetry.monty._loggers import share_telemetry_namespace
from experiment_telemetry.monty._version import require_monty
from runtime_telemetry import get_telemetry
from runtime_telemetry.events import SensorimotorStep

__all__ = ["HOOK_STREAM", "StepHook"]

_logger = logging.getLogger(__name__)
HOOK_STREAM = "experiment_telemetry.monty.step_hook"
"""Emitter of the hook's runtime events (logger ``telemetry.experiment_telemetry.monty.step_hook``)."""


class StepHook:
    """Monty's ``StepHook`` protocol (``__call__`` and ``close``); see the module docstring.

    Args (from the experiment config's ``step_hook``, beside ``_target_``): ``root``,
    ``project``, ``slug``, ``wandb``, ``console``: the run's, as for the stats handler.

    Raises:
        MontyUnavailableError: Monty is missing or a version the adapter does not know.
    """

    def __init__(
        self,
        *,
        root: str | None = None,
        project: str | None = None,
        slug: str | None = None,
        wandb: bool | None = None,
        console: bool | None = None,
    ) -> None:
        require_monty()
        share_telemetry_namespace()
        self._settings = {"root": root, "project": project, "slug": slug, "wandb": wandb,
                          "console": console}  # fmt: skip
        _session.configure(**self._settings, step_hook=True)
        hydra_settings()  # read now, while Hydra builds the experiment: not in Monty's run
        self._events = get_telemetry(HOOK_STREAM)
        self._events.events_logger.propagate = True
        self._held: _session.Session | None = None
        self._model: Any = None
        self._readers: list[ModuleReader] = []
        self._matching_steps = 0
        self._motor_only = False
        self.errors = 0
        self.steps = 0

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self._settings,))

    def __call__(
        self,
        ctx: Any,
        monty: Any,
        supervised_lm_ids: Sequence[str],
        step: int,
        observations: Any,
        actions: list[Any],
    ) -> list[Any]:
        """Read the model after step ``step`` and emit what changed; return ``actions`` as they are."""
        try:
            self._observe(monty, step)
        except Exception:
            self._failed("step")
        return actions

    def finish_episode(self) -> None:
        """Say how each module ended (Monty may time them out after the last step); the run
        calls it when Monty reports the episode, before scoring it."""
        try:
            if self._model is not None:
                for reader in self._readers:
                    for event in reader.conclusions(final=True):
                        self._events.emit(event)
        except Exception:
            self._failed("episode end")
        self._readers = []

    def close(self) -> None:
        """Let go of the run (the last piece to let go closes it)."""
        held, self._held = self._held, None
        if held is not None and not held.closed:
            _session.release(held)

    # -- reading the model ------------------------------------------------------------------
    def _observe(self, monty: Any, step: int) -> None:
        if step == 0 or not self._readers or monty is not self._model:
            self._start_episode(monty)
        emit = self._events.emit
        stamp = time.time()
        matching, votes = self._step_kind(monty)
        processed: list[str] = []
        for reader in self._readers:
            for event in reader.step(stamp, exploring=not matching, votes=votes):
                emit(event)
            if reader.processed_now:
                processed.append(reader.lm_id)
        self._motor_only = bool(getattr(monty, "is_motor_only_step", False))  # the next step's
        self.steps += 1
        emit(
            SensorimotorStep(
                timestamp=stamp,
                step=int(getattr(monty, "episode_steps", step + 1) or step + 1),
                exploring=not matching,
                modules_processed=tuple(processed),
            )
        )

    def _step_kind(self, monty: Any) -> tuple[bool, bool]:
        """Whether the step just taken was a matching step, and whether the modules voted in it.

        Monty counts a matching step when it was in matching mode and a module processed
        input (``update_step_counters``), and votes in every matching-mode step but a
        motor-only one (``_matching_step``; an exploratory step has no vote round). A step in
        which no module processed input cannot change the mode, so the mode after it is the
        mode it ran in.
        """
        count = int(getattr(monty, "matching_steps", 0) or 0)
        counted = count > self._matching_steps
        self._matching_steps = count
        if self._motor_only:
            return False, False
        if any(r.took_input() for r in self._readers):
            mode_matching = counted
        else:
            mode_matching = getattr(monty, "step_type", "matching_step") == "matching_step"
        voting = mode_matching and getattr(monty, "lm_to_lm_vote_matrix", None) is not None
        return counted, voting

    def _start_episode(self, monty: Any) -> None:
        self._model = monty
        modules = list(monty.learning_modules)
        sensors = _first_sensors(monty, len(modules))
        held = self._held
        if held is None or held.closed:
            mapping = {sensor: f"LM_{i}" for i, sensor in enumerate(sensors) if sensor}
            self._held = held = _session.acquire(mapping, monty)
            held.hook = self
        held.model = monty
        held.episode_start = time.time()
        self._matching_steps = 0  # Monty resets its episode counters before the first step
        self._motor_only = False
        self._readers = [
            ModuleReader(f"LM_{i}", lm, sensors[i] if i < len(sensors) else None)
            for i, lm in enumerate(modules)
        ]
        for reader in self._readers:
            self._events.emit(reader.reset_event())

    def _failed(self, where: str) -> None:
        self.errors += 1
        if self.errors == 1:
            _logger.warning(
                "Monty step hook: reading the model at the %s failed; its events are incomplete "
                "(later failures are only counted)",
                where,
                exc_info=True,
            )


def _first_sensors(monty: Any, count: int) -> list[str | None]:
    """The sensor module feeding each learning module first (Monty's stepwise target is read
    from that input's semantic id)."""
    matrix = getattr(monty, "sm_to_lm_matrix", None) or []
    sensor_modules = list(getattr(monty, "sensor_modules", []) or [])
    found: list[str | None] = []
    for i in range(count):
        row = matrix[i] if i < len(matrix) else []
        index = row[0] if len(row) else None
        sensor = (
            sensor_modules[index]
            if isinstance(index, int) and index < len(sensor_modules)
            else None
        )
        found.append(None if sensor is None else str(getattr(sensor, "sensor_module_id", index)))
    return found


def _rebuild(settings: dict[str, Any]) -> StepHook:
    return StepHook(**settings)
