"""Events a learning module knows about itself: inputs, matches, conclusions, memory.

Only runtime knowledge: graph ids, poses, evidence, its own input count. Targets, episodes and
verdicts (correct, confused, ...) belong to the experiment side, which computes them from
these events plus what it knows.

Version 2 of these events (ADR 0026): ``step`` counts the inputs the module processed since
its last ``LearningModuleReset``, rotations are the object's rotation for every kind of
module, and ``symmetric_rotations`` holds every equally likely rotation, the detected one
included.

Later additions keep version 2 and decode every line written before them: new events
(``LearningModuleVotesReceived``) and new optional fields whose default means "not said"
(``symmetry_evidence`` on recognitions and time-outs).
"""

from __future__ import annotations

import attrs
import numpy as np

from runtime_telemetry._schema import TelemetryEvent, TelemetrySnapshot, array_eq_key
from runtime_telemetry.events._fields import (
    Quaternion,
    Vector3,
    optional_vector3,
    quaternion,
    quaternions,
    strings,
    vector3,
    vectors,
)

__all__ = [
    "GraphMemoryUpdated",
    "LearningModuleConclusionWithdrawn",
    "LearningModuleEvent",
    "LearningModuleEvidenceSnapshot",
    "LearningModuleGoalStateAttempted",
    "LearningModuleNoMatch",
    "LearningModuleObjectRecognized",
    "LearningModuleReset",
    "LearningModuleStep",
    "LearningModuleTimedOut",
    "LearningModuleVotesReceived",
    "MostLikelyHypothesis",
]


@attrs.frozen(kw_only=True)
class LearningModuleEvent(TelemetryEvent, abstract=True):
    """Fields every learning-module event carries."""

    lm_id: str
    """Which learning module emitted the event."""
    step: int
    """Inputs the module has processed since its last reset, when it emitted the event."""


@attrs.frozen(kw_only=True)
class LearningModuleReset(LearningModuleEvent):
    """The module cleared its short-term state (inputs, hypotheses, conclusion) to start afresh."""

    step: int = 0
    evidence_based: bool = False
    """Whether the module keeps evidence for hypotheses (and so reports
    ``MostLikelyHypothesis``), rather than only narrowing graph and pose matches."""


@attrs.frozen(kw_only=True)
class LearningModuleStep(LearningModuleEvent):
    """One input the module processed: which objects are still possible, and where it was.

    Emit it after the step's votes, so ``possible_matches`` is what the module holds then.
    """

    version = 2
    possible_matches: tuple[str, ...] = attrs.field(converter=strings)
    """Graph ids still consistent with the observations (empty: nothing matches)."""
    on_object: bool = True
    """Whether this input was on an object (not background)."""
    exploring: bool = False
    """True for an input taken while exploring (learning a known object), not matching."""
    location: Vector3 | None = attrs.field(default=None, converter=optional_vector3)
    """Where the input came from ``(x, y, z)``, in the body's frame."""
    symmetry_evidence: int = 0
    """The module's count of steps for which symmetric poses stayed equally likely."""


@attrs.frozen(kw_only=True)
class LearningModuleObjectRecognized(LearningModuleEvent):
    """The module settled on one object and pose."""

    version = 2
    graph_id: str
    """The recognised object's graph id in this module's memory."""
    location: Vector3 = attrs.field(converter=vector3)
    """The sensed location on the recognised object's own model ``(x, y, z)``."""
    rotation: Quaternion = attrs.field(converter=quaternion)
    """The object's detected rotation ``(w, x, y, z)``."""
    scale: float = 1.0
    """Detected scale relative to the stored graph."""
    symmetric_rotations: tuple[Quaternion, ...] = attrs.field(default=(), converter=quaternions)
    """Every object rotation still equally likely, the detected one included (empty: the
    object showed no symmetry)."""
    symmetry_evidence: int | None = None
    """The module's count of steps for which symmetric poses stayed equally likely, as its
    check that settled the pose left it (that check may raise it after the step's
    ``LearningModuleStep``); None: not said, the last step's count stands."""
    path: tuple[Vector3, ...] = attrs.field(default=(), converter=vectors)
    """Locations on the model that resolved the pose: the most likely location for an
    evidence-based module, the followed path for one that narrows matches."""
    possible_poses: tuple[Quaternion, ...] = attrs.field(default=(), converter=quaternions)
    """Distinct object rotations still possible for the recognised graph (modules that
    narrow pose matches; empty for evidence-based ones)."""
    possible_locations: tuple[Vector3, ...] = attrs.field(default=(), converter=vectors)
    """The last location of each path still possible for that graph, like ``possible_poses``."""


@attrs.frozen(kw_only=True)
class LearningModuleNoMatch(LearningModuleEvent):
    """No stored object is consistent with the observations any more."""

    version = 2
    new_graph_id: str | None = None
    """The graph id the module will store this unknown object under, if it names one now."""


@attrs.frozen(kw_only=True)
class LearningModuleConclusionWithdrawn(LearningModuleEvent):
    """The module's conclusion (a recognition, a no-match) no longer holds: it is undecided.

    Votes from other modules can restore matches it had ruled out, or reopen a pose it had
    settled; until its next conclusion it is as if it had reached none.
    """

    possible_matches: tuple[str, ...] = attrs.field(converter=strings)
    """Graph ids possible again after the withdrawal."""


@attrs.frozen(kw_only=True)
class LearningModuleTimedOut(LearningModuleEvent):
    """The system stopped the module while it was still undecided (its step limit, or enough
    other modules had concluded)."""

    version = 2
    possible_matches: tuple[str, ...] = attrs.field(converter=strings)
    """Graph ids still possible at the time-out."""
    pose_resolved: bool
    """False when the pose had not converged, e.g. one object left but several poses."""
    possible_poses: tuple[Quaternion, ...] = attrs.field(default=(), converter=quaternions)
    """Distinct object rotations still possible for the first possible match."""
    possible_locations: tuple[Vector3, ...] = attrs.field(default=(), converter=vectors)
    """The last location of each path still possible for the first possible match."""
    symmetry_evidence: int | None = None
    """The module's symmetry count when it was stopped, like the recognition's (None: not
    said, the last step's count stands)."""


@attrs.frozen(kw_only=True)
class LearningModuleVotesReceived(LearningModuleEvent):
    """The module took part in a vote round: it heard the other modules' votes and updated its
    hypotheses with them, whether or not it processed an input in this step.

    Emit it once per module and vote round, after the votes and after the
    ``MostLikelyHypothesis`` of the step's input, if it had one. Votes can narrow the module's
    matches in a step without input of its own, which no ``LearningModuleStep`` then reports;
    when they empty them or bring them back, also emit ``LearningModuleNoMatch`` or
    ``LearningModuleConclusionWithdrawn``. A round changes no prediction error: the error of
    the module's last input (its last ``MostLikelyHypothesis``) still stands after it.
    """

    possible_matches: tuple[str, ...] = attrs.field(converter=strings)
    """Graph ids still possible after the votes."""


@attrs.frozen(kw_only=True)
class MostLikelyHypothesis(LearningModuleEvent):
    """The module's current best guess, whether or not it is certain yet."""

    version = 2
    graph_id: str
    """Graph id of the most likely object."""
    location: Vector3 = attrs.field(converter=vector3)
    """Most likely location on that object's model ``(x, y, z)``."""
    rotation: Quaternion = attrs.field(converter=quaternion)
    """Most likely rotation of the object ``(w, x, y, z)``."""
    evidence: float
    """Evidence for this hypothesis, in the module's own units."""
    prediction_error: float | None = None
    """How far this step's input was from what the hypothesis predicted, in [0, 1] (None:
    no prediction to compare with yet). Emit one hypothesis per input processed, carrying
    that input's error."""


@attrs.frozen(kw_only=True)
class LearningModuleGoalStateAttempted(LearningModuleEvent):
    """The module proposed a goal state for the motor system, and whether it was reached."""

    achieved: bool
    """True when the system reached the goal state."""


@attrs.frozen(kw_only=True)
class GraphMemoryUpdated(TelemetryEvent):
    """The module stored a new graph or extended an existing one."""

    lm_id: str
    """Which learning module's memory changed."""
    graph_id: str
    """The graph that was created or extended."""
    num_nodes: int
    """Nodes in the graph after the update."""
    created: bool
    """True for a new graph, False for an extended one."""


@attrs.frozen(kw_only=True)
class LearningModuleEvidenceSnapshot(TelemetrySnapshot):
    """All hypotheses for one object at one step, for live plots; emit with ``snapshot()``."""

    lm_id: str
    """Which learning module holds the hypotheses."""
    step: int
    """The module's step counter."""
    graph_id: str
    """The object the hypotheses are about."""
    evidence: np.ndarray = attrs.field(eq=array_eq_key)
    """Evidence per hypothesis, shape ``(n,)``."""
    locations: np.ndarray = attrs.field(eq=array_eq_key)
    """Hypothesised locations, shape ``(n, 3)``."""
    rotations: np.ndarray = attrs.field(eq=array_eq_key)
    """Hypothesised rotations as quaternions ``(w, x, y, z)``, shape ``(n, 4)``."""
