"""Aggregator base: stats reach listeners and the stats stream; feed bypasses logging."""

from __future__ import annotations

from experiment_telemetry.aggregators import STATS_STREAM, RecognitionAggregator
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.stats import StatEvent
from runtime_telemetry.events import LearningModuleStep
from runtime_telemetry.testing import capture_events


class TestAggregator:
    def test_stats_go_to_listeners_and_stream_in_order(self) -> None:
        """post_episode returns, hands to listeners and emits the same stats in the same order."""
        agg = RecognitionAggregator()
        heard: list[StatEvent] = []
        agg.add_listener(heard.append)
        agg.feed(LearningModuleStep(lm_id="lm_0", step=1, possible_matches=("g",)))
        with capture_events(f"telemetry.{STATS_STREAM}") as emitted:
            returned = agg.post_episode(
                EpisodeContext(mode="eval", epoch=0, episode=0, target="mug")
            )

        assert returned == heard == emitted
        assert 3 == len(returned)

    def test_feed_delivers_without_logging(self) -> None:
        """feed() reaches the receivers even with telemetry switched off."""
        agg = RecognitionAggregator()
        agg.feed(LearningModuleStep(lm_id="lm_7", step=1, possible_matches=()))

        stats = agg.post_episode(EpisodeContext(mode="eval", epoch=0, episode=0, target="mug"))

        assert "no_match" == stats[0].primary_performance  # type: ignore[attr-defined]
