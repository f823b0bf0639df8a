"""Runtime event streams for the recognition tests: one helper per event, emitted for real.

The helpers emit through a runtime emitter (``tests.runtime.lm``), so an aggregator subscribed
to ``telemetry`` receives them exactly as it would from a runtime.
"""

from __future__ import annotations

from collections.abc import Sequence

from experiment_telemetry.aggregators import RecognitionAggregator
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.stats import EpisodeStats, LearningModuleEpisodeStats, OverallStats
from runtime_telemetry import get_telemetry
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

runtime = get_telemetry("tests.runtime.lm")
IDENTITY = (1.0, 0.0, 0.0, 0.0)
Q = Sequence[float]


def ctx(target: str = "mug", mode: str = "train", episode: int = 0, **kw: object) -> EpisodeContext:
    return EpisodeContext(mode=mode, epoch=0, episode=episode, target=target, **kw)  # type: ignore[arg-type]


def reset(lm: str = "lm_0", evidence: bool = True, ts: float | None = None) -> None:
    extra = {} if ts is None else {"timestamp": ts}
    runtime.emit(LearningModuleReset(lm_id=lm, evidence_based=evidence, **extra))


def step(
    lm: str = "lm_0",
    n: int = 1,
    matches: Sequence[str] = ("g0", "g1"),
    on: bool = True,
    *,
    exploring: bool = False,
    location: Sequence[float] | None = None,
    symmetry: int = 0,
    ts: float | None = None,
) -> None:
    extra = {} if ts is None else {"timestamp": ts}
    runtime.emit(
        LearningModuleStep(
            lm_id=lm, step=n, possible_matches=matches, on_object=on, exploring=exploring,
            location=location, symmetry_evidence=symmetry, **extra,
        )
    )  # fmt: skip


def recognize(
    lm: str = "lm_0",
    graph: str = "g0",
    n: int = 2,
    rotation: Q = IDENTITY,
    sym: Sequence[Q] = (),
    symmetry: int | None = None,
    **kw: object,
) -> None:
    runtime.emit(
        LearningModuleObjectRecognized(
            lm_id=lm, step=n, graph_id=graph, location=(0, 0, 0), rotation=rotation,
            symmetric_rotations=sym, symmetry_evidence=symmetry, **kw,  # type: ignore[arg-type]
        )
    )  # fmt: skip


def no_match(lm: str = "lm_0", n: int = 2, new_graph: str | None = None) -> None:
    runtime.emit(LearningModuleNoMatch(lm_id=lm, step=n, new_graph_id=new_graph))


def withdraw(lm: str = "lm_0", matches: Sequence[str] = ("g0", "g1"), n: int = 3) -> None:
    runtime.emit(LearningModuleConclusionWithdrawn(lm_id=lm, step=n, possible_matches=matches))


def timeout(
    lm: str = "lm_0", matches: Sequence[str] = ("g0", "g1"), n: int = 5, **kw: object
) -> None:
    runtime.emit(
        LearningModuleTimedOut(
            lm_id=lm, step=n, possible_matches=matches, pose_resolved=False, **kw  # type: ignore[arg-type]
        )
    )  # fmt: skip


def votes(lm: str = "lm_0", matches: Sequence[str] = ("g0", "g1"), n: int = 1) -> None:
    runtime.emit(LearningModuleVotesReceived(lm_id=lm, step=n, possible_matches=matches))


def mlh(
    lm: str = "lm_0",
    graph: str = "g0",
    rotation: Q = IDENTITY,
    evidence: float = 1.0,
    error: float | None = None,
    n: int = 3,
) -> None:
    runtime.emit(
        MostLikelyHypothesis(
            lm_id=lm, step=n, graph_id=graph, location=(0, 0, 0), rotation=rotation,
            evidence=evidence, prediction_error=error,
        )
    )  # fmt: skip


def goal(lm: str = "lm_0", achieved: bool = True) -> None:
    runtime.emit(LearningModuleGoalStateAttempted(lm_id=lm, step=1, achieved=achieved))


def system_step(n: int = 1, processed: Sequence[str] = ("lm_0",), exploring: bool = False) -> None:
    runtime.emit(SensorimotorStep(step=n, exploring=exploring, modules_processed=processed))


def stored(lm: str = "lm_0", graph: str = "g0") -> None:
    runtime.emit(GraphMemoryUpdated(lm_id=lm, graph_id=graph, num_nodes=3, created=True))


def teach(agg: RecognitionAggregator, graph: str, label: str, lm: str = "lm_0") -> None:
    """A train episode in which ``lm`` stores ``graph`` while the target is ``label``."""
    step(lm, matches=())
    no_match(lm, 1, new_graph=graph)
    agg.post_episode(ctx(label, episode=99))


def lm_stats(stats: Sequence[object], lm: str = "lm_0") -> LearningModuleEpisodeStats:
    return next(s for s in stats if isinstance(s, LearningModuleEpisodeStats) and s.lm_id == lm)


def verdict(stats: Sequence[object], lm: str = "lm_0") -> str | None:
    return lm_stats(stats, lm).primary_performance


def episode_of(stats: Sequence[object]) -> EpisodeStats:
    return next(s for s in stats if isinstance(s, EpisodeStats))


def overall_of(stats: Sequence[object]) -> OverallStats:
    return next(s for s in stats if isinstance(s, OverallStats))
