"""One learning module's state in the current episode, rebuilt from its events.

Monty scores a module by reading its buffer and terminal state after the episode; this is the
same state, kept from events as they arrive (ADR 0026). The terminal state follows the last of
``Recognized`` (match), ``NoMatch`` (no_match), ``TimedOut`` (time_out) and
``ConclusionWithdrawn`` (back to none), and only a reset clears it: a step with matches again
does not undo a no-match.

Two things Monty's buffer gets between inputs are kept too: a vote round
(``LearningModuleVotesReceived``) can narrow the possible matches without an input, and it
appends the last input's prediction error to the errors Monty averages, once per round; the
symmetry count is the last one reported, by a step or by the check that settled or stopped
the module (``Recognized``/``TimedOut`` carrying it).
"""

from __future__ import annotations

from runtime_telemetry.events import (
    LearningModuleNoMatch,
    LearningModuleObjectRecognized,
    LearningModuleStep,
    LearningModuleTimedOut,
    MostLikelyHypothesis,
)

__all__ = ["MATCH", "NO_MATCH", "TIME_OUT", "ModuleState"]

MATCH = "match"
NO_MATCH = "no_match"
TIME_OUT = "time_out"

Vector3 = tuple[float, float, float]
Quaternion = tuple[float, float, float, float]
Conclusion = LearningModuleObjectRecognized | LearningModuleNoMatch


class ModuleState:
    """What one module did since its reset (or since the last episode was scored)."""

    __slots__ = (
        "detected_object",
        "first_conclusion",
        "gated",
        "goals_achieved",
        "goals_attempted",
        "graphs",
        "last_matching_ts",
        "last_prediction_error",
        "last_recognition",
        "location",
        "mlh",
        "pose_locations",
        "poses",
        "possible",
        "prediction_errors",
        "processed",
        "reset_ts",
        "state",
        "stepwise_label",
        "symmetry_evidence",
    )

    def __init__(self, reset_ts: float | None = None) -> None:
        self.reset_ts = reset_ts
        self.processed = 0
        self.gated = False
        """Monty's gate: the module's first input was on an object."""
        self.location: Vector3 | None = None
        self.symmetry_evidence = 0
        self.last_matching_ts: float | None = None
        self.state: str | None = None
        self.detected_object: str | None = None
        self.possible: tuple[str, ...] = ()
        self.first_conclusion: Conclusion | None = None
        self.last_recognition: LearningModuleObjectRecognized | None = None
        self.poses: tuple[Quaternion, ...] = ()
        self.pose_locations: tuple[Vector3, ...] = ()
        self.mlh: MostLikelyHypothesis | None = None
        self.prediction_errors: list[float] = []
        """Monty's ``mlh_prediction_error`` list, whose ``np.mean`` (pairwise summation: the
        same float to the last digit) is the episode's average."""
        self.last_prediction_error: float | None = None
        """The error of the module's last input, which every vote round appends again."""
        self.goals_attempted = 0
        self.goals_achieved = 0
        self.graphs: list[str] = []
        self.stepwise_label: str | None = None

    def step(self, event: LearningModuleStep, label: str | None) -> None:
        if not self.processed:
            self.gated = event.on_object
        self.processed += 1
        self.possible = event.possible_matches
        self.location = event.location
        self.symmetry_evidence = event.symmetry_evidence
        if not event.exploring:
            self.last_matching_ts = event.timestamp
        if label is not None:
            self.stepwise_label = label

    def recognized(self, event: LearningModuleObjectRecognized) -> None:
        self.state = MATCH
        self.detected_object = event.graph_id
        self.last_recognition = event
        if event.symmetry_evidence is not None:
            self.symmetry_evidence = event.symmetry_evidence
        if event.possible_poses:
            self.poses, self.pose_locations = event.possible_poses, event.possible_locations
        if self.first_conclusion is None:
            self.first_conclusion = event

    def no_match(self, event: LearningModuleNoMatch) -> None:
        self.state = NO_MATCH
        self.detected_object = event.new_graph_id
        self.possible = ()
        if self.first_conclusion is None:
            self.first_conclusion = event

    def withdrawn(self, possible: tuple[str, ...]) -> None:
        self.state = None
        self.detected_object = None
        self.possible = possible

    def timed_out(self, event: LearningModuleTimedOut) -> None:
        self.state = TIME_OUT  # the detected object and the first conclusion stay as they are
        self.possible = event.possible_matches
        if event.symmetry_evidence is not None:
            self.symmetry_evidence = event.symmetry_evidence
        if event.possible_poses:
            self.poses, self.pose_locations = event.possible_poses, event.possible_locations

    def voted(self, possible: tuple[str, ...]) -> None:
        """A vote round: Monty's ``update_stats_after_vote`` appends the last input's error."""
        self.possible = possible
        self._add_error(self.last_prediction_error)

    def hypothesis(self, event: MostLikelyHypothesis) -> None:
        """One hypothesis per input carries that input's error. A hypothesis said again at the
        same input count without an error is the same input's best guess moved since (votes,
        the module's own movement): it replaces the guess and leaves the errors alone (Monty
        re-reads its current hypothesis at the episode's end and keeps appending the last
        input's error at each vote round)."""
        previous = self.mlh
        self.mlh = event
        if event.prediction_error is None and previous is not None and previous.step == event.step:
            return
        self.last_prediction_error = event.prediction_error
        self._add_error(event.prediction_error)

    def _add_error(self, error: float | None) -> None:
        if error is not None:
            self.prediction_errors.append(error)

    def goal(self, achieved: bool) -> None:
        self.goals_attempted += 1
        self.goals_achieved += achieved
