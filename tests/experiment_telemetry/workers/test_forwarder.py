"""``EventForwarder`` -> goggles bus -> ``EpisodeInbox``: events keep their order, their
episode and their exact content, and come back out on the logger they were emitted on."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from experiment_telemetry.workers import EpisodeInbox, EventForwarder, replay_episode
from runtime_telemetry import get_telemetry
from runtime_telemetry.events import LearningModuleStep, MostLikelyHypothesis
from runtime_telemetry.testing import capture_events
from support import wait_until

pytestmark = pytest.mark.usefixtures("socket_bus")
_SCOPE = "experiment_workers.test"


def _events(count: int) -> list[LearningModuleStep | MostLikelyHypothesis]:
    out: list[LearningModuleStep | MostLikelyHypothesis] = []
    for step in range(count // 2):
        out.append(LearningModuleStep(lm_id="lm_0", step=step, possible_matches=("g0", "g1")))
        out.append(
            MostLikelyHypothesis(lm_id="lm_0", step=step, graph_id="g0", location=(0.1, 0, 0),
                                 rotation=(1, 0, 0, 0), evidence=step / 3)
        )  # fmt: skip
    return out


class TestForwarderAndInbox:
    def test_round_trip_keeps_order_content_and_logger(self, tmp_path: Path) -> None:
        """200 events forwarded in one episode arrive complete and in order, and replaying them
        hands subscribers objects equal to the originals, on the original logger."""
        cond = threading.Condition()
        inbox = EpisodeInbox(_SCOPE, cond)
        forwarder = EventForwarder(_SCOPE, worker=7).subscribe("telemetry.fwd_test")
        sent = _events(200)
        emitter = get_telemetry("fwd_test")
        forwarder.begin(3)
        for event in sent:
            emitter.emit(event)
        count = forwarder.end()
        forwarder.close()

        def ended() -> bool:
            with cond:
                return inbox.ended(7, 3)

        wait_until(ended, 30, what="the end marker")
        with cond:
            arrived = inbox.take(7, 3)
        events = arrived.decode()
        with capture_events("telemetry.fwd_test") as captured:
            skipped = replay_episode(events, worker=7)
        inbox.close()

        assert (200, 200, 0, 0) == (count, arrived.expected, arrived.missing, skipped)
        assert -(-200 // forwarder.batch_size) == len(arrived.chunks)  # batch_size to a bus event
        assert {"telemetry.fwd_test"} == {name for name, _, _ in events}
        assert sent == captured

    def test_discarded_episode_ignores_late_arrivals(self) -> None:
        """After discard (its worker was lost), events of that episode are not kept."""
        cond = threading.Condition()
        inbox = EpisodeInbox(_SCOPE, cond)
        forwarder = EventForwarder(_SCOPE, worker=1).subscribe("telemetry.fwd_test")
        with cond:
            inbox.discard(1, 5)
        forwarder.begin(5)
        get_telemetry("fwd_test").emit(_events(2)[0])
        forwarder.end()
        forwarder.begin(6)
        forwarder.end()
        forwarder.close()

        def ended() -> bool:
            with cond:
                return inbox.ended(1, 6)

        wait_until(ended, 30, what="episode 6's end marker")
        with cond:
            late = inbox.take(1, 5)
        inbox.close()

        assert ([], False) == (late.chunks, late.ended)

    def test_undecodable_event_is_skipped_and_counted(self) -> None:
        """An event of an unknown kind is skipped with a count; the ones around it go through."""
        good = _events(2)[0]
        from runtime_telemetry import to_dict

        items = [
            ("telemetry.fwd_test", 20, to_dict(good)),
            ("telemetry.fwd_test", 20, {"kind": "no_such_kind", "version": 1}),
            ("telemetry.fwd_test", 20, to_dict(good)),
        ]
        with capture_events("telemetry.fwd_test") as captured:
            skipped = replay_episode(items, worker=0)

        assert (1, [good, good]) == (skipped, captured)
