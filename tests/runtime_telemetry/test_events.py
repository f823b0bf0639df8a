"""The shipped vocabulary: runtime knowledge only, convenient constructors, unique kinds."""

from __future__ import annotations

import attrs
import numpy as np
import pytest

from runtime_telemetry import TelemetryEvent, TelemetrySnapshot, from_json, to_json
from runtime_telemetry.events import (
    LearningModuleObjectRecognized,
    LearningModuleReset,
    LearningModuleStep,
    LearningModuleTimedOut,
    LearningModuleVotesReceived,
    SensorimotorStep,
    SensorPatchSnapshot,
)
from strategies import SHIPPED_SCHEMAS

EXPERIMENT_WORDS = ("target", "episode", "epoch", "mode", "correct", "confused", "verdict")


class TestVocabulary:
    @pytest.mark.parametrize("cls", SHIPPED_SCHEMAS, ids=lambda c: c.__name__)
    def test_carries_no_experiment_knowledge(self, cls: type) -> None:
        """No field name mentions targets, episodes, epochs, modes or verdicts."""
        names = [f.name for f in attrs.fields(cls)]

        assert [] == [n for n in names if any(word in n for word in EXPERIMENT_WORDS)]

    @pytest.mark.parametrize("cls", SHIPPED_SCHEMAS, ids=lambda c: c.__name__)
    def test_snapshots_are_named_as_snapshots(self, cls: type) -> None:
        """Classes named *Snapshot are TelemetrySnapshots; all others are TelemetryEvents."""
        expected = TelemetrySnapshot if cls.__name__.endswith("Snapshot") else TelemetryEvent

        assert issubclass(cls, expected)

    def test_kinds_are_unique(self) -> None:
        """Every shipped class has its own kind."""
        kinds = [cls.kind for cls in SHIPPED_SCHEMAS]

        assert len(kinds) == len(set(kinds))

    @pytest.mark.parametrize("cls", SHIPPED_SCHEMAS, ids=lambda c: c.__name__)
    def test_every_field_is_documented(self, cls: type) -> None:
        """Each class has a docstring (fields are documented in the source)."""

        assert cls.__doc__


class TestConverters:
    def test_lists_become_tuples(self) -> None:
        """possible_matches given as a list is stored as a tuple, keeping events hashable."""
        step = LearningModuleStep(lm_id="lm_0", step=1, possible_matches=["mug", "bowl"])

        assert ("mug", "bowl") == step.possible_matches

    def test_numpy_pose_becomes_plain_floats(self) -> None:
        """A numpy location and rotation are stored as tuples of Python floats."""
        event = LearningModuleObjectRecognized(
            lm_id="lm_0",
            step=9,
            graph_id="mug",
            location=np.array([0.1, 0.2, 0.3], dtype=np.float32),
            rotation=np.array([1.0, 0.0, 0.0, 0.0]),
            symmetric_rotations=np.eye(4)[:2],
        )

        assert (float, float, 2) == (
            type(event.location[0]),
            type(event.symmetric_rotations[1][0]),
            len(event.symmetric_rotations),
        )

    def test_wrong_length_location_raises(self) -> None:
        """A location that is not three numbers raises ValueError saying so."""
        with pytest.raises(ValueError, match="expected 3 numbers"):
            LearningModuleObjectRecognized(
                lm_id="lm_0", step=9, graph_id="mug", location=(0.0, 1.0), rotation=(1, 0, 0, 0)
            )

    def test_single_string_as_matches_raises(self) -> None:
        """A bare string for possible_matches is refused instead of split into letters."""
        with pytest.raises(TypeError, match="single string"):
            LearningModuleTimedOut(
                lm_id="lm_0", step=1, possible_matches="mug", pose_resolved=False
            )

    def test_snapshot_holds_arrays_as_given(self) -> None:
        """Snapshot arrays are kept as the same objects (no copy on the hot path)."""
        rgba = np.zeros((2, 2, 4), np.uint8)
        snapshot = SensorPatchSnapshot(sensor_id="patch", step=0, rgba=rgba, depth=np.ones((2, 2)))

        assert rgba is snapshot.rgba


class TestMontyParityFields:
    def test_step_location_is_optional(self) -> None:
        """A step without a location keeps None; a numpy location becomes plain floats."""
        without = LearningModuleStep(lm_id="lm_0", step=1, possible_matches=())
        with_location = LearningModuleStep(
            lm_id="lm_0", step=1, possible_matches=(), location=np.array([1, 2, 3])
        )

        assert (None, (1.0, 2.0, 3.0)) == (without.location, with_location.location)

    def test_reset_starts_at_step_zero(self) -> None:
        """A reset needs only the module id; it is not evidence-based unless it says so."""
        reset = LearningModuleReset(lm_id="lm_0")

        assert (0, False) == (reset.step, reset.evidence_based)

    def test_paths_and_poses_become_tuples(self) -> None:
        """Path, possible poses and locations given as lists are stored as tuples of floats."""
        event = LearningModuleObjectRecognized(
            lm_id="lm_0", step=2, graph_id="mug", location=(0, 0, 0), rotation=(1, 0, 0, 0),
            path=[[0, 0, 1]], possible_poses=[[1, 0, 0, 0]], possible_locations=[[0, 1, 0]],
        )  # fmt: skip

        assert (((0.0, 0.0, 1.0),), ((1.0, 0.0, 0.0, 0.0),), ((0.0, 1.0, 0.0),)) == (
            event.path, event.possible_poses, event.possible_locations
        )  # fmt: skip

    def test_system_step_lists_modules_as_a_tuple(self) -> None:
        """modules_processed given as a list is stored as a tuple; a bare str is refused."""
        with pytest.raises(TypeError, match="single string"):
            SensorimotorStep(step=1, modules_processed="lm_0")

        assert ("lm_0",) == SensorimotorStep(step=1, modules_processed=["lm_0"]).modules_processed


class TestLaterAdditionsReadOldLogs:
    """Issue 32 added an event and optional fields without a version bump: older lines decode."""

    def test_old_time_out_line_decodes_without_a_symmetry_count(self) -> None:
        """A version-2 time-out written before issue 32 (no symmetry_evidence) decodes to None."""
        line = (
            '{"kind":"learning_module_timed_out","version":2,"timestamp":1.0,"lm_id":"lm_0",'
            '"step":4,"possible_matches":["mug"],"pose_resolved":false,"possible_poses":[],'
            '"possible_locations":[]}'
        )

        event = from_json(line)

        assert isinstance(event, LearningModuleTimedOut) and event.symmetry_evidence is None

    def test_old_recognition_line_keeps_its_symmetry_count(self) -> None:
        """A version-2 recognition written before issue 32 (an int count) keeps its count."""
        event = LearningModuleObjectRecognized(
            lm_id="lm_0", step=2, graph_id="mug", location=(0, 0, 0), rotation=(1, 0, 0, 0),
            symmetry_evidence=3,
        )  # fmt: skip

        assert 3 == from_json(to_json(event)).symmetry_evidence  # type: ignore[attr-defined]

    def test_votes_received_round_trips(self) -> None:
        """The vote-round event decodes to an equal event, its matches a tuple."""
        event = LearningModuleVotesReceived(lm_id="lm_1", step=0, possible_matches=["mug"])

        assert event == from_json(to_json(event))
