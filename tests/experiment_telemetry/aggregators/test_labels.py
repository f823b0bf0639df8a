"""The label map (Monty's graph_id_to_target) and the sensor map, from events and contexts.

Test names carry the branch: ``L<line>`` is a line of Monty's ``logging_utils.py`` (the
reference in ``../shared/reference/tbp.monty/``), ``D<n>`` a departure listed in
``docs/experiment_telemetry.md``.
"""

from __future__ import annotations

import math

import pytest

from experiment_telemetry.aggregators import RecognitionAggregator
from experiment_telemetry.aggregators.standard import make_aggregators
from experiment_telemetry.exceptions import ExperimentTypeError
from lm_events import (
    ctx,
    no_match,
    recognize,
    reset,
    step,
    stored,
    teach,
    timeout,
    verdict,
    withdraw,
)

QUARTER_Z = (math.sqrt(0.5), 0.0, 0.0, math.sqrt(0.5))  # 90 degrees about z
HALF_Z = (0.0, 0.0, 0.0, 1.0)


class TestSensorMapConfig:
    def test_sensor_map_from_a_run_config(self) -> None:
        """make_aggregators reads recognition.sensor_to_lm as "sensor=lm" strings."""
        recognition = make_aggregators(
            {"recognition.sensor_to_lm": ["patch_0=lm_0", "patch_1=lm_1"], "watch.enabled": False}
        )[0]

        assert {"patch_0": "lm_0", "patch_1": "lm_1"} == recognition.sensor_to_lm  # type: ignore[attr-defined]

    def test_malformed_sensor_map_is_refused(self) -> None:
        """A list entry without '=' is refused with ExperimentTypeError naming sensor_to_lm."""
        with pytest.raises(ExperimentTypeError, match="sensor_to_lm"):
            make_aggregators({"recognition.sensor_to_lm": ["patch_0"]})


class TestLabelMap:
    def test_labels_learned_after_scoring(self, agg: RecognitionAggregator) -> None:
        """The episode that stores a graph is scored before its label is learned."""
        step(matches=())
        no_match(new_graph="g0")
        first = verdict(agg.post_episode(ctx("mug")))
        step(matches=("g0",))
        recognize(graph="g0")

        assert ("no_match", "correct") == (first, verdict(agg.post_episode(ctx("mug", episode=1))))

    def test_labels_only_in_train_by_default(self, agg: RecognitionAggregator) -> None:
        """An eval episode teaches nothing."""
        step(matches=())
        no_match(new_graph="g0")
        agg.post_episode(ctx("mug", mode="eval"))

        assert frozenset() == agg.labels("lm_0", "g0")

    def test_no_label_is_learned_in_train(self, agg: RecognitionAggregator) -> None:
        """A training episode with target no_label teaches no_label, as Monty does."""
        teach(agg, "g0", "no_label")

        assert frozenset({"no_label"}) == agg.labels("lm_0", "g0")

    @pytest.mark.parametrize("ending", ["withdrawn", "timed_out"])
    def test_withdrawn_or_timed_out_module_teaches_nothing(
        self, agg: RecognitionAggregator, ending: str
    ) -> None:
        """A module left without a detected object teaches nothing."""
        step()
        recognize(graph="g0")
        withdraw()
        if ending == "timed_out":
            timeout()
        agg.post_episode(ctx("mug"))

        assert frozenset() == agg.labels("lm_0", "g0")

    def test_no_match_teaches_new_graph_id(self, agg: RecognitionAggregator) -> None:
        """A no-match names the new graph, which learns the target without a memory event."""
        step(matches=())
        no_match(new_graph="new_object0")
        agg.post_episode(ctx("mug"))

        assert frozenset({"mug"}) == agg.labels("lm_0", "new_object0")

    def test_memory_update_names_the_graph(self, agg: RecognitionAggregator) -> None:
        """A memory update names the graph that learns the target, over the recognised one."""
        step()
        recognize(graph="g0")
        stored(graph="g1")
        agg.post_episode(ctx("mug"))

        assert (frozenset(), frozenset({"mug"})) == (
            agg.labels("lm_0", "g0"),
            agg.labels("lm_0", "g1"),
        )

    def test_module_without_input_teaches_nothing(self, agg: RecognitionAggregator) -> None:
        """A module that processed no input teaches nothing, even with a memory update."""
        reset()
        stored(graph="g0")
        agg.post_episode(ctx("mug"))

        assert frozenset() == agg.labels("lm_0", "g0")

    def test_labels_are_per_module(self, agg: RecognitionAggregator) -> None:
        """What lm_0 learned does not label lm_1's graph of the same name."""
        teach(agg, "g0", "mug", lm="lm_0")

        assert frozenset() == agg.labels("lm_1", "g0")
