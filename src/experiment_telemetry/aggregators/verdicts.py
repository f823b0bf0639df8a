"""``RecognitionAggregator``: Monty's per-module statistics, computed from runtime events only.

Learning modules report what they know (inputs, vote rounds, possible matches, recognitions,
no-matches, withdrawals, time-outs, most-likely hypotheses, goal states, memory updates); the system
reports its steps; the experiment adds the target in ``post_episode``. Graph ids are the
modules' own names for objects: which labels a graph stands for is learned here, from the
contexts of past episodes, and only after an episode is scored (updating first would make
``confused`` impossible). Monty's rules are the default; where Monty raises or contradicts
itself we do the sensible thing and say so (``docs/experiment_telemetry.md``, ADR 0026).
"""

from __future__ import annotations

import logging
from collections.abc import Collection, Mapping

from experiment_telemetry.aggregators._labels import LabelMap
from experiment_telemetry.aggregators._module_state import ModuleState
from experiment_telemetry.aggregators._module_stats import SystemSteps, score_module
from experiment_telemetry.aggregators._totals import Totals, episode_stats
from experiment_telemetry.aggregators.base import STATS_STREAM, Aggregator
from experiment_telemetry.context import MODES, EpisodeContext, ObjectUnderSensor
from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from experiment_telemetry.geometry import rotation_error
from experiment_telemetry.stats import StatEvent
from runtime_telemetry import receives
from runtime_telemetry.events import (
    GraphMemoryUpdated,
    LearningModuleConclusionWithdrawn,
    LearningModuleGoalStateAttempted,
    LearningModuleNoMatch,
    LearningModuleObjectRecognized,
    LearningModuleReset,
    LearningModuleStep,
    LearningModuleTimedOut,
    LearningModuleVotesReceived,
    MostLikelyHypothesis,
    SensorimotorStep,
)

__all__ = ["RecognitionAggregator", "rotation_error"]

_logger = logging.getLogger(__name__)


class RecognitionAggregator(Aggregator):
    """Score each learning module per episode with Monty's rules, from events only.

    Every module seen so far in the run is scored in every episode, in the order modules first
    appeared (Monty scores every module of its model): one that processed no input this
    episode is ``patch_off_object``.

    Args:
        sensor_to_lm: maps a sensor id to the learning module it feeds, so that the
            experiment's ``ObjectUnderSensor`` ground truth gives each module its stepwise
            target (the first sensor of a module is its input channel).
        learn_labels_in: modes whose contexts teach the graph-to-label map (default: train
            only, as Monty updates its modules' maps after training episodes only).
        stream: the stats stream's emitter name.

    Raises:
        ExperimentValueError: ``learn_labels_in`` names an unknown mode.
        ExperimentTypeError: ``sensor_to_lm`` is not a mapping of str to str.
    """

    def __init__(
        self,
        *,
        sensor_to_lm: Mapping[str, str] | None = None,
        learn_labels_in: Collection[str] = ("train",),
        stream: str = STATS_STREAM,
    ) -> None:
        super().__init__(stream=stream)
        mapping = dict(sensor_to_lm or {}) if isinstance(sensor_to_lm, Mapping | None) else None
        if mapping is None or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()
        ):
            msg = f"sensor_to_lm must map sensor ids (str) to lm ids (str) (got {sensor_to_lm!r})."
            raise ExperimentTypeError(msg, sensor_to_lm)
        modes = tuple(learn_labels_in)
        unknown = [m for m in modes if m not in MODES]
        if isinstance(learn_labels_in, str) or unknown:
            msg = f"learn_labels_in must be a collection of modes from {MODES!r} (got {learn_labels_in!r})."
            raise ExperimentValueError(msg, learn_labels_in)
        self.sensor_to_lm = mapping
        self.learn_labels_in = modes
        self._lm_sensor: dict[str, str] = {}
        for sensor_id, lm_id in mapping.items():
            self._lm_sensor.setdefault(lm_id, sensor_id)
        self._roster: dict[str, LabelMap] = {}
        """Every module seen in the run, in order of appearance, with its label map."""
        self._evidence: dict[str, bool] = {}
        self._modules: dict[str, ModuleState] = {}
        self._sensor_labels: dict[str, str] = {}
        self._system = SystemSteps()
        self._totals = {mode: Totals() for mode in MODES}
        self._last_timestamp: float | None = None
        self._warned_empty = False

    def labels(self, lm_id: str, graph_id: str) -> frozenset[str]:
        """The target labels learned so far for ``graph_id`` in module ``lm_id``."""
        label_map = self._roster.get(lm_id)
        return frozenset(label_map.labels(graph_id)) if label_map is not None else frozenset()

    # -- events ------------------------------------------------------------------------------
    def _module(self, lm_id: str, timestamp: float) -> ModuleState:
        if self._last_timestamp is None or timestamp > self._last_timestamp:
            self._last_timestamp = timestamp
        module = self._modules.get(lm_id)
        if module is None:
            module = self._modules[lm_id] = ModuleState()
            if lm_id not in self._roster:
                self._roster[lm_id] = LabelMap()
        return module

    @receives(LearningModuleReset)
    def _on_reset(self, event: LearningModuleReset) -> None:
        self._module(event.lm_id, event.timestamp)
        self._modules[event.lm_id] = ModuleState(event.timestamp)
        self._evidence[event.lm_id] = event.evidence_based

    @receives(LearningModuleStep)
    def _on_step(self, event: LearningModuleStep) -> None:
        sensor = self._lm_sensor.get(event.lm_id)
        label = self._sensor_labels.get(sensor) if sensor is not None else None
        self._module(event.lm_id, event.timestamp).step(event, label)

    @receives(LearningModuleObjectRecognized)
    def _on_recognized(self, event: LearningModuleObjectRecognized) -> None:
        self._module(event.lm_id, event.timestamp).recognized(event)

    @receives(LearningModuleNoMatch)
    def _on_no_match(self, event: LearningModuleNoMatch) -> None:
        self._module(event.lm_id, event.timestamp).no_match(event)

    @receives(LearningModuleConclusionWithdrawn)
    def _on_withdrawn(self, event: LearningModuleConclusionWithdrawn) -> None:
        self._module(event.lm_id, event.timestamp).withdrawn(event.possible_matches)

    @receives(LearningModuleTimedOut)
    def _on_timed_out(self, event: LearningModuleTimedOut) -> None:
        self._module(event.lm_id, event.timestamp).timed_out(event)

    @receives(LearningModuleVotesReceived)
    def _on_votes(self, event: LearningModuleVotesReceived) -> None:
        self._module(event.lm_id, event.timestamp).voted(event.possible_matches)

    @receives(MostLikelyHypothesis)
    def _on_mlh(self, event: MostLikelyHypothesis) -> None:
        self._module(event.lm_id, event.timestamp).hypothesis(event)
        self._evidence.setdefault(event.lm_id, True)  # no reset said otherwise

    @receives(LearningModuleGoalStateAttempted)
    def _on_goal(self, event: LearningModuleGoalStateAttempted) -> None:
        self._module(event.lm_id, event.timestamp).goal(event.achieved)

    @receives(GraphMemoryUpdated)
    def _on_memory(self, event: GraphMemoryUpdated) -> None:
        self._module(event.lm_id, event.timestamp).graphs.append(event.graph_id)

    @receives(SensorimotorStep)
    def _on_system_step(self, event: SensorimotorStep) -> None:
        if self._last_timestamp is None or event.timestamp > self._last_timestamp:
            self._last_timestamp = event.timestamp
        self._system.total += 1
        if not event.exploring and event.modules_processed:
            self._system.matching += 1

    @receives(ObjectUnderSensor)
    def _on_ground_truth(self, event: ObjectUnderSensor) -> None:
        self._sensor_labels[event.sensor_id] = event.label

    # -- scoring -----------------------------------------------------------------------------
    def score_episode(self, context: EpisodeContext) -> list[StatEvent]:
        """Score every module, then the episode, then update the totals and the label maps."""
        if not isinstance(context, EpisodeContext):
            msg = f"context must be an EpisodeContext (got {context!r})."
            raise ExperimentTypeError(msg, context)
        modules, self._modules = self._modules, {}
        system, self._system = self._system, SystemSteps()
        self._sensor_labels = {}
        last, self._last_timestamp = self._last_timestamp, None
        stamp = context.timestamp if last is None else max(last, context.timestamp)
        if not modules and not self._warned_empty:
            self._warned_empty = True
            _logger.warning(
                "episode %d had no learning-module events: is the runtime's telemetry enabled "
                "(runtime_telemetry.configure({'telemetry': 'INFO'}))? Modules seen before are "
                "scored patch_off_object; without any, the episode has no verdict.",
                context.episode,
            )
        empty = ModuleState()
        target_euler = context.euler()
        per_lm = [
            score_module(
                lm_id,
                modules.get(lm_id, empty),
                context,
                label_map,
                evidence_based=self._evidence.get(lm_id, False),
                system=system,
                stamp=stamp,
                target_euler=target_euler,
            )
            for lm_id, label_map in self._roster.items()
        ]
        episode = episode_stats(
            context,
            per_lm,
            monty_steps=system.total,
            monty_matching_steps=system.matching,
            stamp=stamp,
        )
        totals = self._totals[context.mode]
        totals.add(episode, per_lm)
        overall = totals.overall(context, stamp)
        if context.mode in self.learn_labels_in:
            self._learn_labels(modules, context.target)
        return [*per_lm, episode, overall]

    def _learn_labels(self, modules: Mapping[str, ModuleState], target: str) -> None:
        # Monty maps each module's detected object to the target after a training episode,
        # when the module processed input. A memory update names the graph the module stored
        # what it saw into: the runtime's own word for it, so it comes first.
        for lm_id, module in modules.items():
            if not module.processed:
                continue
            graphs = module.graphs or (
                [module.detected_object] if module.detected_object is not None else []
            )
            label_map = self._roster[lm_id]
            for graph_id in graphs:
                label_map.add(graph_id, target)
