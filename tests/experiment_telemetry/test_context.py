"""EpisodeContext: validated on creation, serialisable like every schema."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from experiment_telemetry.context import EpisodeContext, ObjectUnderSensor
from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from runtime_telemetry import from_dict, from_json, to_dict, to_json

_component = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False)
_rotations = st.tuples(_component, _component, _component, _component).filter(
    lambda q: sum(v * v for v in q) > 1e-6
)


class TestEpisodeContext:
    def test_rotation_is_normalised(self) -> None:
        """A non-unit quaternion is stored as the unit quaternion of the same rotation."""
        c = EpisodeContext(
            mode="eval", epoch=0, episode=0, target="mug", target_rotation=(2, 0, 0, 0)
        )

        assert (1.0, 0.0, 0.0, 0.0) == c.target_rotation

    def test_round_trips_through_the_codec(self) -> None:
        """to_dict/from_dict give back an equal context."""
        c = EpisodeContext(
            mode="train",
            epoch=2,
            episode=9,
            target="mug",
            consistent_child_labels=["handle"],
            seed=4,
        )

        assert c == from_dict(to_dict(c))

    @given(rotation=_rotations)
    def test_any_rotation_round_trips_exactly(self, rotation: tuple[float, ...]) -> None:
        """Normalising is idempotent, so a decoded context equals the one that was encoded."""
        c = EpisodeContext(mode="eval", epoch=0, episode=0, target="mug", target_rotation=rotation)

        assert c == from_json(to_json(c))

    @pytest.mark.parametrize(
        ("kwargs", "match"),
        [
            ({"mode": "test"}, "mode must be one of"),
            ({"epoch": -1}, "epoch must be an int >= 0"),
            ({"episode": True}, "episode must be an int >= 0"),
            ({"target": ""}, "target must be a non-empty str"),
            ({"target_rotation": (0, 0, 0, 0)}, "target_rotation must be 4 finite numbers"),
            ({"target_rotation": (1, 0, 0)}, "target_rotation must be 4 finite numbers"),
            ({"target_rotation": (math.nan, 0, 0, 0)}, "target_rotation must be 4 finite numbers"),
            ({"target_position": (0, 0)}, "target_position must be 3 finite numbers"),
            ({"target_euler": (0, math.inf, 0)}, "target_euler must be 3 finite numbers"),
            ({"target_scale": 0}, "target_scale must be a finite number > 0"),
            ({"target_scale": True}, "target_scale must be a finite number > 0"),
            ({"stepwise_target": ""}, "stepwise_target must be a non-empty str"),
        ],
    )
    def test_bad_values_raise_naming_the_field(self, kwargs: dict[str, object], match: str) -> None:
        """Each bad value raises ExperimentValueError naming the field and the value."""
        base: dict[str, object] = {"mode": "eval", "epoch": 0, "episode": 0, "target": "mug"}
        with pytest.raises(ExperimentValueError, match=match):
            EpisodeContext(**{**base, **kwargs})  # type: ignore[arg-type]

    def test_children_as_bare_string_refused(self) -> None:
        """A bare str for consistent_child_labels is refused (it would be read as letters)."""
        with pytest.raises(ExperimentTypeError, match="consistent_child_labels"):
            EpisodeContext(
                mode="eval", epoch=0, episode=0, target="mug", consistent_child_labels="handle"
            )


class TestMontyTargetFields:
    def test_euler_is_derived_from_the_rotation_when_not_given(self) -> None:
        """Without target_euler, euler() gives the rotation's extrinsic x-y-z angles."""
        c = EpisodeContext(
            mode="eval", epoch=0, episode=0, target="mug", target_rotation=(0.5, 0.5, 0.5, 0.5)
        )

        assert pytest.approx((90.0, 0.0, 90.0)) == c.euler()

    def test_stated_euler_wins(self) -> None:
        """Euler angles the experiment states are kept as they are."""
        c = EpisodeContext(mode="eval", epoch=0, episode=0, target="mug", target_euler=(1, 2, 3))

        assert (1.0, 2.0, 3.0) == c.euler()

    def test_version_two_round_trips_with_every_field(self) -> None:
        """A context with position, Euler angles, scale and stepwise target round-trips."""
        c = EpisodeContext(
            mode="train", epoch=1, episode=2, target="no_label", target_position=(1, 2, 3),
            target_euler=(10, 20, 30), target_scale=0.5, stepwise_target="mug",
        )  # fmt: skip

        assert (2, c) == (EpisodeContext.version, from_json(to_json(c)))


class TestObjectUnderSensor:
    def test_round_trips(self) -> None:
        """The ground-truth event round-trips through the codec."""
        event = ObjectUnderSensor(sensor_id="patch_0", step=3, label="mug")

        assert event == from_dict(to_dict(event))

    def test_empty_label_refused(self) -> None:
        """An empty label raises ExperimentValueError naming it."""
        with pytest.raises(ExperimentValueError, match="label must be a non-empty str"):
            ObjectUnderSensor(sensor_id="patch_0", step=3, label="")
