"""Events a learning module knows about itself: steps, matches, recognition, memory.

Only runtime knowledge: graph ids, poses, evidence, its own step count. Targets, episodes and
verdicts (correct, confused, ...) belong to the experiment side, which computes them from
these events plus what it knows.
"""

from __future__ import annotations

import attrs
import numpy as np

from runtime_telemetry._schema import TelemetryEvent, TelemetrySnapshot, array_eq_key
from runtime_telemetry.events._fields import Quaternion, Vector3, floats, quaternions, strings

__all__ = [
    "GraphMemoryUpdated",
    "LearningModuleEvent",
    "LearningModuleEvidenceSnapshot",
    "LearningModuleNoMatch",
    "LearningModuleObjectRecognized",
    "LearningModuleStep",
    "LearningModuleTimedOut",
    "MostLikelyHypothesis",
]


@attrs.frozen(kw_only=True)
class LearningModuleEvent(TelemetryEvent, abstract=True):
    """Fields every learning-module event carries."""

    lm_id: str
    """Which learning module emitted the event."""
    step: int
    """The module's own step counter when it emitted the event."""


@attrs.frozen(kw_only=True)
class LearningModuleStep(LearningModuleEvent):
    """One matching step: which objects are still possible, and whether input was on an object."""

    possible_matches: tuple[str, ...] = attrs.field(converter=strings)
    """Graph ids still consistent with the observations (empty: nothing matches)."""
    on_object: bool = True
    """Whether this step's observation was on an object (off-object steps do not match)."""


@attrs.frozen(kw_only=True)
class LearningModuleObjectRecognized(LearningModuleEvent):
    """The module settled on one object and pose."""

    graph_id: str
    """The recognised object's graph id in this module's memory."""
    location: Vector3 = attrs.field(converter=floats(3))
    """Detected location of the object ``(x, y, z)``."""
    rotation: Quaternion = attrs.field(converter=floats(4))
    """Detected rotation ``(w, x, y, z)``."""
    scale: float = 1.0
    """Detected scale relative to the stored graph."""
    symmetric_rotations: tuple[Quaternion, ...] = attrs.field(default=(), converter=quaternions)
    """Other rotations equally consistent with the observations (a symmetric object)."""
    symmetry_evidence: int = 0
    """Steps for which the symmetric rotations stayed equally likely."""


@attrs.frozen(kw_only=True)
class LearningModuleNoMatch(LearningModuleEvent):
    """No stored object is consistent with the observations any more."""


@attrs.frozen(kw_only=True)
class LearningModuleTimedOut(LearningModuleEvent):
    """The module reached its step limit without recognising an object (terminal)."""

    possible_matches: tuple[str, ...] = attrs.field(converter=strings)
    """Graph ids still possible at the time-out."""
    pose_resolved: bool
    """False when the pose had not converged, e.g. one object left but several poses."""


@attrs.frozen(kw_only=True)
class MostLikelyHypothesis(LearningModuleEvent):
    """The module's current best guess, whether or not it is certain yet."""

    graph_id: str
    """Graph id of the most likely object."""
    location: Vector3 = attrs.field(converter=floats(3))
    """Most likely location ``(x, y, z)``."""
    rotation: Quaternion = attrs.field(converter=floats(4))
    """Most likely rotation ``(w, x, y, z)``."""
    evidence: float
    """Evidence for this hypothesis, in the module's own units."""


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
