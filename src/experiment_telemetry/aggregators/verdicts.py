"""``RecognitionAggregator``: Monty's per-module verdicts, computed from runtime events only.

Learning modules report what they know (possible matches, recognitions, time-outs, most-likely
hypotheses, memory updates); the experiment adds the target in ``post_episode``. Graph ids are
the modules' own names for objects: which labels a graph stands for is learned here, from the
contexts of past episodes, and only after an episode is scored (updating first would make
``confused`` impossible).
"""

from __future__ import annotations

import logging
import math
from collections import Counter
from collections.abc import Collection, Iterable, Mapping, Sequence

from experiment_telemetry.aggregators.base import STATS_STREAM, Aggregator
from experiment_telemetry.context import MODES, NO_LABEL, EpisodeContext
from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from experiment_telemetry.stats import (
    VERDICTS,
    EpisodeStats,
    LearningModuleEpisodeStats,
    OverallStats,
    StatEvent,
)
from runtime_telemetry import receives
from runtime_telemetry.events import (
    GraphMemoryUpdated,
    LearningModuleEvent,
    LearningModuleNoMatch,
    LearningModuleObjectRecognized,
    LearningModuleStep,
    LearningModuleTimedOut,
    MostLikelyHypothesis,
    SensorPatchObserved,
)

__all__ = ["RecognitionAggregator", "rotation_error"]

_logger = logging.getLogger(__name__)
_RANK = {verdict: rank for rank, verdict in enumerate(VERDICTS)}
_Terminal = LearningModuleObjectRecognized | LearningModuleNoMatch | LearningModuleTimedOut


def rotation_error(target: Iterable[float], detected: Iterable[Iterable[float]]) -> float:
    """Smallest geodesic angle in degrees between ``target`` and any ``detected`` quaternion.

    ``q`` and ``-q`` are the same rotation, hence the absolute dot product. Rounded to 4 places.

    Raises:
        ExperimentValueError: ``detected`` is empty, or a quaternion has zero length or a
            non-finite component.
    """
    t = _unit(tuple(target))
    best = math.inf
    for q in detected:
        u = _unit(tuple(q))
        dot = min(1.0, abs(sum(a * b for a, b in zip(t, u, strict=True))))
        best = min(best, math.degrees(2.0 * math.acos(dot)))
    if best == math.inf:
        msg = f"detected must hold at least one rotation (got {detected!r})."
        raise ExperimentValueError(msg, detected)
    return round(best, 4)


def _unit(q: tuple[float, ...]) -> tuple[float, ...]:
    norm = math.sqrt(sum(v * v for v in q))
    if len(q) != 4 or not norm or not math.isfinite(norm):  # NaN would score as 0 degrees
        msg = f"a rotation must be a finite, non-zero quaternion (w, x, y, z) (got {q!r})."
        raise ExperimentValueError(msg, q)
    return tuple(v / norm for v in q)


class _Module:
    """What one learning module emitted during the current episode."""

    __slots__ = (
        "first_terminal",
        "graphs",
        "last_terminal",
        "mlh",
        "num_steps",
        "possible",
        "sensed",
    )

    def __init__(self) -> None:
        self.possible: tuple[str, ...] | None = None  # None: never reported
        self.num_steps = 0
        self.sensed = False
        self.first_terminal: _Terminal | None = None
        self.last_terminal: _Terminal | None = None
        self.mlh: MostLikelyHypothesis | None = None
        self.graphs: list[str] = []

    def terminal(self, event: _Terminal) -> None:
        if self.first_terminal is None:
            self.first_terminal = event
        self.last_terminal = event


class _Totals:
    """Running totals of one mode, for ``OverallStats``."""

    def __init__(self) -> None:
        self.episodes = 0
        self.verdicts: Counter[str] = Counter()
        self.rotation_sum = 0.0
        self.rotation_count = 0
        self.lm_steps = 0
        self.lm_count = 0
        self.run_time = 0.0


def _runtime_rotation_error(
    lm_id: str, target: Iterable[float], detected: tuple[Sequence[float], ...]
) -> float | None:
    """``rotation_error`` for rotations the runtime detected; ``None`` when there are none.

    A degenerate detected rotation (zero length, NaN) is the runtime's bad input, not the
    experiment's: it must not fail the whole run, so it is reported and scored as ``None``.
    """
    if not detected:
        return None
    try:
        return rotation_error(target, detected)
    except ExperimentValueError as exc:
        _logger.warning("%s: rotation_error recorded as None (%s)", lm_id, exc)
        return None


class RecognitionAggregator(Aggregator):
    """Score each learning module per episode with Monty's rules, from events only.

    Args:
        sensor_to_lm: maps a sensor id to the learning module it feeds, so that a
            ``SensorPatchObserved`` on the object counts as that module having sensed it.
            Without it, a module has sensed the object when one of its steps was on it.
        learn_labels_in: modes whose contexts teach the graph-to-label map (default: train
            only, as a module that does not learn in evaluation keeps its memory unchanged).
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
        mapping = dict(sensor_to_lm or {})
        if not all(isinstance(k, str) and isinstance(v, str) for k, v in mapping.items()):
            msg = f"sensor_to_lm must map sensor ids (str) to lm ids (str) (got {sensor_to_lm!r})."
            raise ExperimentTypeError(msg, sensor_to_lm)
        modes = tuple(learn_labels_in)
        unknown = [m for m in modes if m not in MODES]
        if isinstance(learn_labels_in, str) or unknown:
            msg = f"learn_labels_in must be a collection of modes from {MODES!r} (got {learn_labels_in!r})."
            raise ExperimentValueError(msg, learn_labels_in)
        self.sensor_to_lm = mapping
        self.learn_labels_in = modes
        self._modules: dict[str, _Module] = {}
        self._labels: dict[tuple[str, str], set[str]] = {}
        self._totals = {mode: _Totals() for mode in MODES}
        self._last_timestamp: float | None = None
        self._warned_empty = False

    def labels(self, lm_id: str, graph_id: str) -> frozenset[str]:
        """The target labels learned so far for ``graph_id`` in module ``lm_id``."""
        return frozenset(self._labels.get((lm_id, graph_id), ()))

    # -- events ------------------------------------------------------------------------------
    def _module(self, event: LearningModuleEvent | GraphMemoryUpdated) -> _Module:
        ts = event.timestamp
        if self._last_timestamp is None or ts > self._last_timestamp:
            self._last_timestamp = ts
        module = self._modules.get(event.lm_id)
        if module is None:
            module = self._modules[event.lm_id] = _Module()
        return module

    @receives(LearningModuleStep)
    def _on_step(self, event: LearningModuleStep) -> None:
        module = self._module(event)
        module.possible = event.possible_matches
        if event.on_object:
            module.num_steps += 1
            module.sensed = True

    @receives(LearningModuleObjectRecognized)
    def _on_recognized(self, event: LearningModuleObjectRecognized) -> None:
        self._module(event).terminal(event)

    @receives(LearningModuleNoMatch)
    def _on_no_match(self, event: LearningModuleNoMatch) -> None:
        module = self._module(event)
        module.possible = ()
        module.terminal(event)

    @receives(LearningModuleTimedOut)
    def _on_timed_out(self, event: LearningModuleTimedOut) -> None:
        module = self._module(event)
        module.possible = event.possible_matches
        module.terminal(event)

    @receives(MostLikelyHypothesis)
    def _on_mlh(self, event: MostLikelyHypothesis) -> None:
        self._module(event).mlh = event

    @receives(GraphMemoryUpdated)
    def _on_memory(self, event: GraphMemoryUpdated) -> None:
        self._module(event).graphs.append(event.graph_id)

    @receives(SensorPatchObserved)
    def _on_patch(self, event: SensorPatchObserved) -> None:
        lm_id = self.sensor_to_lm.get(event.sensor_id)
        if lm_id is not None and event.on_object:
            module = self._modules.get(lm_id)
            if module is None:
                module = self._modules[lm_id] = _Module()
            module.sensed = True

    # -- scoring -----------------------------------------------------------------------------
    def score_episode(self, context: EpisodeContext) -> list[StatEvent]:
        """Score every module, then the episode, then update the totals and the label map."""
        if not isinstance(context, EpisodeContext):
            msg = f"context must be an EpisodeContext (got {context!r})."
            raise ExperimentTypeError(msg, context)
        modules, self._modules = self._modules, {}
        last, self._last_timestamp = self._last_timestamp, None
        stamp = context.timestamp if last is None else max(last, context.timestamp)
        if not modules and not self._warned_empty:
            self._warned_empty = True
            _logger.warning(
                "episode %d had no learning-module events: is the runtime's telemetry enabled "
                "(runtime_telemetry.configure({'telemetry': 'INFO'}))? Scored as patch_off_object.",
                context.episode,
            )
        per_lm = [
            self._score_module(lm_id, modules[lm_id], context, stamp) for lm_id in sorted(modules)
        ]
        verdict = max(
            (s.primary_performance for s in per_lm), key=_RANK.__getitem__, default=VERDICTS[0]
        )
        terminals = [s.terminal_step for s in per_lm if s.terminal_step is not None]
        episode = EpisodeStats(
            timestamp=stamp,
            mode=context.mode,
            epoch=context.epoch,
            episode=context.episode,
            target=context.target,
            performance=verdict,
            num_learning_modules=len(per_lm),
            num_steps=max((s.num_steps for s in per_lm), default=0),
            terminal_step=min(terminals, default=None),
            run_time_s=stamp - context.timestamp,
        )
        overall = self._update_totals(context, episode, per_lm, stamp)
        if context.mode in self.learn_labels_in and context.target != NO_LABEL:
            self._learn_labels(modules, context.target)
        return [*per_lm, episode, overall]

    def _score_module(
        self, lm_id: str, module: _Module, context: EpisodeContext, stamp: float
    ) -> LearningModuleEpisodeStats:
        target = context.target
        last = module.last_terminal
        recognized = last if isinstance(last, LearningModuleObjectRecognized) else None
        mlh = module.mlh
        # The rules, in this order; later rules refine earlier verdicts.
        if module.possible is not None and not module.possible:
            verdict = "no_match"
        elif target == NO_LABEL:
            verdict = "no_label"
        elif recognized is not None:
            verdict = "correct" if target in self.labels(lm_id, recognized.graph_id) else "confused"
        elif module.possible is not None and len(module.possible) == 1:
            verdict = "pose_time_out"
        else:
            verdict = "time_out"
        if verdict in ("time_out", "pose_time_out") and mlh is not None:
            verdict = (
                "correct_mlh" if target in self.labels(lm_id, mlh.graph_id) else "confused_mlh"
            )
        if verdict in ("confused", "confused_mlh") and context.consistent_child_labels:
            likely = mlh.graph_id if mlh is not None else recognized.graph_id  # type: ignore[union-attr]
            if self.labels(lm_id, likely) & set(context.consistent_child_labels):
                verdict = "consistent_child_obj"
        if not module.sensed:
            verdict = "patch_off_object"
        detected: tuple[Sequence[float], ...] = ()
        if verdict == "correct" and recognized is not None:
            detected = (recognized.rotation, *recognized.symmetric_rotations)
        elif verdict == "correct_mlh" and mlh is not None:
            detected = (mlh.rotation,)
        error = _runtime_rotation_error(lm_id, context.target_rotation, detected)
        first = module.first_terminal
        return LearningModuleEpisodeStats(
            timestamp=stamp,
            mode=context.mode,
            epoch=context.epoch,
            episode=context.episode,
            target=target,
            lm_id=lm_id,
            primary_performance=verdict,
            rotation_error=error,
            num_steps=module.num_steps,
            terminal_step=None if first is None else first.step,
            first_terminal_performance=self._first_verdict(lm_id, first, target),
            symmetry_evidence=None if recognized is None else recognized.symmetry_evidence,
            detected_object=None if recognized is None else recognized.graph_id,
            detected_labels=()
            if recognized is None
            else tuple(sorted(self.labels(lm_id, recognized.graph_id))),
            detected_location=None if recognized is None else recognized.location,
            detected_rotation=None if recognized is None else recognized.rotation,
            most_likely_object=None if mlh is None else mlh.graph_id,
            possible_matches=module.possible or (),
        )

    def _first_verdict(self, lm_id: str, first: _Terminal | None, target: str) -> str | None:
        if first is None:
            return None
        if isinstance(first, LearningModuleNoMatch):
            return "no_match"
        if isinstance(first, LearningModuleTimedOut):
            return "pose_time_out" if len(first.possible_matches) == 1 else "time_out"
        if target == NO_LABEL:
            return "no_label"
        return "correct" if target in self.labels(lm_id, first.graph_id) else "confused"

    def _update_totals(
        self,
        context: EpisodeContext,
        episode: EpisodeStats,
        per_lm: list[LearningModuleEpisodeStats],
        stamp: float,
    ) -> OverallStats:
        t = self._totals[context.mode]
        t.episodes += 1
        t.verdicts[episode.performance] += 1
        t.run_time += episode.run_time_s
        for s in per_lm:
            t.lm_steps += s.num_steps
            t.lm_count += 1
            if s.rotation_error is not None:
                t.rotation_sum += s.rotation_error
                t.rotation_count += 1
        v = t.verdicts

        def percent(*names: str) -> float:
            return 100.0 * sum(v[n] for n in names) / t.episodes

        return OverallStats(
            timestamp=stamp,
            mode=context.mode,
            epoch=context.epoch,
            episode=context.episode,
            num_episodes=t.episodes,
            percent_correct=percent("correct", "correct_mlh"),
            percent_confused=percent("confused", "confused_mlh"),
            percent_no_match=percent("no_match"),
            percent_time_out=percent("time_out"),
            percent_pose_time_out=percent("pose_time_out"),
            percent_correct_mlh=percent("correct_mlh"),
            percent_used_mlh_after_timeout=percent("correct_mlh", "confused_mlh"),
            avg_rotation_error=t.rotation_sum / t.rotation_count if t.rotation_count else None,
            avg_num_lm_steps=t.lm_steps / t.lm_count if t.lm_count else 0.0,
            avg_episode_run_time=t.run_time / t.episodes,
        )

    def _learn_labels(self, modules: Mapping[str, _Module], target: str) -> None:
        # A memory update says "what I saw is stored in this graph"; without one, the
        # recognised graph is what the module took the object for.
        for lm_id, module in modules.items():
            graphs = list(module.graphs)
            if not graphs and isinstance(module.last_terminal, LearningModuleObjectRecognized):
                graphs.append(module.last_terminal.graph_id)
            for graph_id in graphs:
                self._labels.setdefault((lm_id, graph_id), set()).add(target)
