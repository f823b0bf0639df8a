"""RecognitionAggregator: its surface, bad input, and the geometry its statistics use.

Monty's branches have their own files: ``test_monty_module_verdicts.py``,
``test_monty_module_stats.py``, ``test_monty_episode_stats.py``, ``test_labels.py`` and the
property tests ``test_monty_properties.py``.
"""

from __future__ import annotations

import math
import random

import pytest

from experiment_telemetry.aggregators import RecognitionAggregator
from experiment_telemetry.aggregators.verdicts import rotation_error
from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError
from experiment_telemetry.geometry import euler_xyz
from experiment_telemetry.stats import VERDICTS
from lm_events import (
    IDENTITY,
    ctx,
    lm_stats,
    mlh,
    recognize,
    reset,
    step,
    teach,
    timeout,
    verdict,
)


class TestSurface:
    def test_every_verdict_kind_is_reachable(self, agg: RecognitionAggregator) -> None:
        """Hand-written sequences reach all ten verdicts (a guard for VERDICTS)."""
        seen = set()
        teach(agg, "g0", "mug")
        teach(agg, "g1", "bowl")
        for target, children, emit in [
            ("mug", (), lambda: step(on=False)),
            ("no_label", (), lambda: step()),
            ("mug", (), lambda: (step(matches=("g0",)), timeout(matches=("g0",)))),
            ("mug", (), lambda: (step(), timeout())),
            ("mug", ("handle",), lambda: (step(), mlh(graph="handle"), recognize(graph="g1"))),
            ("mug", (), lambda: (step(), mlh(graph="g1"), timeout())),
            ("mug", (), lambda: (step(), mlh(graph="g0"), timeout())),
            ("mug", (), lambda: step(matches=())),
            ("mug", (), lambda: (step(), recognize(graph="g1"))),
            ("mug", (), lambda: (step(), recognize(graph="g0"))),
        ]:
            reset(evidence=True)
            emit()  # type: ignore[no-untyped-call]
            seen.add(
                verdict(
                    agg.post_episode(ctx(target, mode="eval", consistent_child_labels=children))
                )
            )

        assert set(VERDICTS) == seen

    def test_order_is_modules_then_episode_then_overall(self, agg: RecognitionAggregator) -> None:
        """post_episode returns module stats (in order of appearance), the episode, the totals."""
        step("lm_1")
        step("lm_0")

        kinds = [(type(s).__name__, getattr(s, "lm_id", None)) for s in agg.post_episode(ctx())]

        assert [
            ("LearningModuleEpisodeStats", "lm_1"),
            ("LearningModuleEpisodeStats", "lm_0"),
            ("EpisodeStats", None),
            ("OverallStats", None),
        ] == kinds


class TestBadInput:
    def test_post_episode_needs_a_context(self, agg: RecognitionAggregator) -> None:
        """A non-context raises ExperimentTypeError naming what it got."""
        with pytest.raises(ExperimentTypeError, match="context must be an EpisodeContext"):
            agg.post_episode("mug")  # type: ignore[arg-type]

    def test_refused_post_episode_resets_nothing(self, agg: RecognitionAggregator) -> None:
        """The episode's events survive a refused post_episode and score the next valid one."""
        step(matches=())
        with pytest.raises(ExperimentTypeError):
            agg.post_episode(None)  # type: ignore[arg-type]

        assert "no_match" == verdict(agg.post_episode(ctx()))

    def test_unknown_learning_mode_is_refused(self) -> None:
        """learn_labels_in must name modes."""
        with pytest.raises(ExperimentValueError, match="learn_labels_in"):
            RecognitionAggregator(learn_labels_in=("test",))

    def test_sensor_mapping_must_be_str_to_str(self) -> None:
        """sensor_to_lm with a non-str value is refused."""
        with pytest.raises(ExperimentTypeError, match="sensor_to_lm"):
            RecognitionAggregator(sensor_to_lm={"patch": 0})  # type: ignore[dict-item]

    def test_zero_detected_rotation_scores_none_and_warns(
        self, agg: RecognitionAggregator, caplog: pytest.LogCaptureFixture
    ) -> None:
        """A zero quaternion from the runtime keeps the verdict, records no error and warns."""
        teach(agg, "g0", "mug")
        step()
        recognize(rotation=(0.0, 0.0, 0.0, 0.0))

        with caplog.at_level("WARNING", logger="experiment_telemetry.aggregators.verdicts"):
            stats = lm_stats(agg.post_episode(ctx()))

        assert ("correct", None, None) == (
            stats.primary_performance, stats.rotation_error, stats.detected_rotation
        )  # fmt: skip
        assert "rotation_error recorded as None" in caplog.text


class TestRotationError:
    def test_q_and_minus_q_are_the_same_rotation(self) -> None:
        """The sign of a quaternion does not change the error."""
        assert 0.0 == rotation_error(IDENTITY, [(-1.0, 0.0, 0.0, 0.0)])

    def test_quarter_turn_is_ninety_degrees(self) -> None:
        """A 90 degree turn about z is 90.0, rounded to 4 places."""
        half = math.sqrt(0.5)

        assert 90.0 == rotation_error(IDENTITY, [(half, 0.0, 0.0, half)])

    def test_empty_candidates_raise(self) -> None:
        """No detected rotation is a caller error."""
        with pytest.raises(ExperimentValueError, match="at least one rotation"):
            rotation_error(IDENTITY, [])

    def test_non_finite_rotation_raises(self) -> None:
        """A NaN detected rotation is refused rather than scored as a perfect match."""
        with pytest.raises(ExperimentValueError, match="finite, non-zero quaternion"):
            rotation_error(IDENTITY, [(math.nan, 0.0, 0.0, 0.0)])

    def test_equals_scipy_magnitude_rounded(self) -> None:
        """For 2,000 random pairs the error equals scipy's geodesic magnitude to 4 places."""
        spatial = pytest.importorskip("scipy.spatial.transform")
        rng = random.Random(3)
        pairs = [
            ([rng.gauss(0, 1) for _ in range(4)], [rng.gauss(0, 1) for _ in range(4)])
            for _ in range(2000)
        ]

        def scipy_error(t: list[float], d: list[float]) -> float:
            rt = spatial.Rotation.from_quat([*t[1:], t[0]])
            rd = spatial.Rotation.from_quat([*d[1:], d[0]])
            return round(math.degrees((rd * rt.inv()).magnitude()), 4)

        assert [scipy_error(t, d) for t, d in pairs] == [rotation_error(t, [d]) for t, d in pairs]


class TestEuler:
    def test_equals_scipy_xyz_degrees(self) -> None:
        """For 2,000 random rotations euler_xyz equals scipy's as_euler('xyz', degrees=True)."""
        spatial = pytest.importorskip("scipy.spatial.transform")
        rng = random.Random(4)
        quats = [[rng.gauss(0, 1) for _ in range(4)] for _ in range(2000)]
        expected = [
            spatial.Rotation.from_quat([*q[1:], q[0]]).as_euler("xyz", degrees=True) for q in quats
        ]

        assert (
            max(
                abs(a - b)
                for e, q in zip(expected, quats, strict=True)
                for a, b in zip(e, euler_xyz(q), strict=True)
            )
            < 1e-9
        )

    @pytest.mark.parametrize("pitch", [90.0, -90.0])
    def test_gimbal_lock_follows_scipy(self, pitch: float) -> None:
        """At y = +-90 degrees the z angle is 0 and x carries the turn, as scipy reports it."""
        spatial = pytest.importorskip("scipy.spatial.transform")
        r = spatial.Rotation.from_euler("xyz", [30.0, pitch, 40.0], degrees=True)
        x, y, z, w = r.as_quat()
        with pytest.warns(UserWarning, match="Gimbal lock"):
            expected = r.as_euler("xyz", degrees=True)

        assert pytest.approx(tuple(expected), abs=1e-6) == euler_xyz((w, x, y, z))

    def test_degenerate_rotation_is_refused(self) -> None:
        """A zero quaternion is a caller error."""
        with pytest.raises(ExperimentValueError, match="finite, non-zero quaternion"):
            euler_xyz((0.0, 0.0, 0.0, 0.0))
