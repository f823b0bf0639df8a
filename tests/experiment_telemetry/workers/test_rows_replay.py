"""Rows through the bridge score exactly as in one process; what cannot be rebuilt from a row
is decoded by ``from_dict`` (and skipped with a count when it does not decode); replay hands
each event to the handlers the logger reaches, in their order."""

from __future__ import annotations

import logging
import threading

import msgpack
import pytest

from experiment_telemetry.aggregators.standard import make_aggregators
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.stats import StatEvent
from experiment_telemetry.workers import EpisodeEvents, EpisodeInbox, EventForwarder, replay_episode
from runtime_telemetry import Subscriber, TelemetryEvent, get_telemetry, to_dict
from runtime_telemetry.events import (
    LearningModuleObjectRecognized,
    LearningModuleReset,
    LearningModuleStep,
    LearningModuleTimedOut,
    MostLikelyHypothesis,
    SensorimotorStep,
)
from runtime_telemetry.events.metrics import MetricsBundle
from runtime_telemetry.rows import row_fields
from runtime_telemetry.testing import capture_events
from support import wait_until

_SCOPE = "experiment_workers.rows_test"
_LOGGER = "telemetry.rows_test"


def _episode(episode: int) -> list[TelemetryEvent]:
    """Two modules (one recognizes, one times out), system steps and metric bundles that close
    diagnostic windows in the middle of the episode."""
    events: list[TelemetryEvent] = [
        LearningModuleReset(lm_id=f"lm_{m}", evidence_based=m == 0) for m in range(2)
    ]
    for step in range(1, 31):
        for m in range(2):
            events.append(
                LearningModuleStep(lm_id=f"lm_{m}", step=step, possible_matches=("g0", "g1"),
                                   location=(0.0, 0.1 * step, 0.0), symmetry_evidence=step % 3)
            )  # fmt: skip
            events.append(
                MostLikelyHypothesis(lm_id=f"lm_{m}", step=step, graph_id="g0", location=(0, 0, 0),
                                     rotation=(1, 0, 0, 0), evidence=step / 7, prediction_error=0.1)
            )  # fmt: skip
        events.append(SensorimotorStep(step=step, modules_processed=("lm_0", "lm_1")))
        events.append(
            MetricsBundle(source="trainer", step=episode * 30 + step, values={"reward": step / 3})
        )
    events.append(
        LearningModuleObjectRecognized(lm_id="lm_0", step=30, graph_id="g0", location=(0, 0, 0),
                                       rotation=(1, 0, 0, 0))
    )  # fmt: skip
    events.append(
        LearningModuleTimedOut(lm_id="lm_1", step=30, possible_matches=("g0",), pose_resolved=False)
    )
    return events


def _scorer() -> tuple[list[Subscriber], list[StatEvent]]:
    published: list[StatEvent] = []
    config = {"metrics.diagnostic_every": 20, "metrics.progress_every": 45}
    aggregators = [a.subscribe(_LOGGER) for a in make_aggregators(config)]
    for aggregator in aggregators:
        aggregator.add_listener(published.append)
    return aggregators, published  # type: ignore[return-value]


def _context(episode: int) -> EpisodeContext:
    return EpisodeContext(
        mode="eval" if episode else "train", epoch=0, episode=episode, target="mug"
    )


@pytest.mark.usefixtures("socket_bus")
def test_stats_through_the_bridge_equal_the_in_process_stats() -> None:
    """The same events, emitted here into the standard aggregators, or forwarded as rows and
    replayed into another set: every stat published (windows mid-episode included) is equal,
    in the same order."""
    episodes = {e: _episode(e) for e in range(3)}
    contexts = {e: _context(e) for e in episodes}  # their timestamps are in the stats
    assert all(row_fields(type(x)) is not None for x in episodes[0])
    emitter = get_telemetry("rows_test")

    aggregators, in_process = _scorer()
    for episode, events in episodes.items():
        for event in events:
            emitter.emit(event)
        for aggregator in aggregators:
            aggregator.post_episode(contexts[episode])  # type: ignore[attr-defined]
    for aggregator in aggregators:
        aggregator.close()

    cond = threading.Condition()
    inbox = EpisodeInbox(_SCOPE, cond)
    forwarder = EventForwarder(_SCOPE, worker=2).subscribe(_LOGGER)
    for episode, events in episodes.items():
        forwarder.begin(episode)
        for event in events:
            emitter.emit(event)
        forwarder.end()
    forwarder.close()

    def ended() -> bool:
        with cond:
            return inbox.ended(2, 2)

    wait_until(ended, 30, what="the last end marker")
    aggregators, through_bridge = _scorer()
    for episode in episodes:
        with cond:
            arrived = inbox.take(2, episode)
        assert 0 == replay_episode(arrived.decode(), worker=2)
        assert (0, [True] * len(arrived.chunks)) == (arrived.missing, arrived.rows)
        for aggregator in aggregators:
            aggregator.post_episode(contexts[episode])  # type: ignore[attr-defined]
    for aggregator in aggregators:
        aggregator.close()
    inbox.close()

    assert len(in_process) > 3 * 4  # per module, episode and overall stats, and windows
    assert in_process == through_bridge


def _chunk(layouts: list[list[object]], rows: list[list[object]]) -> EpisodeEvents:
    entry = EpisodeEvents()
    entry.chunks.append(msgpack.packb([layouts, rows]))
    entry.rows.append(True)
    entry.received = len(rows)
    return entry


def test_a_layout_of_another_version_is_decoded_by_from_dict_and_counted() -> None:
    """A row whose class here has another version goes to from_dict, which refuses it: skipped
    and counted; the rows around it replay."""
    good = LearningModuleStep(lm_id="lm_0", step=1, possible_matches=("g0",))
    fields = list(row_fields(LearningModuleStep) or ())
    values = [getattr(good, f) for f in fields]
    kind, version = good.kind, good.version
    entry = _chunk(
        [[_LOGGER, 20, kind, version, fields], [_LOGGER, 20, kind, version + 1, fields]],
        [[0, *values], [1, *values], [0, *values]],
    )
    with capture_events(_LOGGER) as captured:
        skipped = replay_episode(entry.decode(), worker=0)

    assert (1, [good, good]) == (skipped, captured)


def test_older_chunks_of_to_dict_triples_still_replay() -> None:
    good = LearningModuleStep(lm_id="lm_0", step=1, possible_matches=("g0",))
    entry = EpisodeEvents()
    entry.chunks.append(msgpack.packb([(_LOGGER, 20, to_dict(good))] * 2))
    entry.rows.append(False)
    entry.received = 2
    with capture_events(_LOGGER) as captured:
        skipped = replay_episode(entry.decode(), worker=0)

    assert (0, [good, good]) == (skipped, captured)


def test_a_chunk_that_does_not_unpack_is_skipped_and_missing(
    caplog: pytest.LogCaptureFixture,
) -> None:
    entry = _chunk([[_LOGGER, 20, "learning_module_step", 2, ["a"]]], [[5, 1]])  # no layout 5
    entry.expected = 1
    with caplog.at_level(logging.WARNING, logger="experiment_telemetry"):
        assert [] == entry.decode()
    assert 1 == entry.missing
    assert "does not decode" in caplog.text


class _Records(logging.Handler):
    def __init__(self, log: list[object]) -> None:
        super().__init__()
        self.log = log

    def emit(self, record: logging.LogRecord) -> None:
        self.log.append(("record", record.msg, record.pathname, record.name))


class _Plain(Subscriber):
    def __init__(self, log: list[object]) -> None:
        super().__init__()
        self.log = log

    def on_event(self, schema: object) -> None:
        self.log.append(("schema", schema))


def test_replay_reaches_the_handlers_of_the_logger_tree_in_order() -> None:
    """Handlers on the logger and its parents, in the stdlib's order, each above its level;
    a record handler gets a record carrying the schema; a filter on the logger is honoured."""
    log: list[object] = []
    event = LearningModuleStep(lm_id="lm_0", step=1, possible_matches=("g0",))
    child, parent = logging.getLogger(f"{_LOGGER}.child"), logging.getLogger(_LOGGER)
    records, plain, quiet = _Records(log), _Plain(log), _Plain(log)
    quiet.setLevel(logging.WARNING)
    child.addHandler(records)
    parent.addHandler(plain)
    parent.addHandler(quiet)
    try:
        replay_episode([(child.name, logging.INFO, event)], worker=4)
        child.addFilter(lambda record: False)
        replay_episode([(child.name, logging.INFO, event)], worker=4)
    finally:
        child.filters.clear()
        child.removeHandler(records)
        parent.removeHandler(plain)
        parent.removeHandler(quiet)

    assert [("record", event, "<worker 4>", child.name), ("schema", event)] == log


@pytest.mark.usefixtures("socket_bus")
def test_a_chunk_goes_out_at_batch_size_or_max_bytes(monkeypatch: pytest.MonkeyPatch) -> None:
    """Chunks hold ``batch_size`` events, fewer when their packed rows reach MAX_CHUNK_BYTES."""
    from experiment_telemetry.workers import forwarder as module

    sent: list[int] = []

    def emit(event: object) -> None:
        extra = event.extra  # type: ignore[attr-defined]
        if "c" in extra:
            sent.append(extra["c"])

    events = _episode(0)[:100]
    for max_bytes, expected in ((1 << 20, [40, 40, 20]), (600, None)):
        monkeypatch.setattr(module, "MAX_CHUNK_BYTES", max_bytes)
        sent.clear()
        forwarder = EventForwarder(_SCOPE, worker=0, batch_size=40)
        forwarder._emit = emit
        forwarder.subscribe(_LOGGER)
        forwarder.begin(0)
        for event in events:
            get_telemetry("rows_test").emit(event)
        forwarder.end()
        forwarder.close()
        assert 100 == sum(sent)
        if expected is not None:
            assert expected == sent
        else:
            assert len(sent) > 3
            assert max(sent) < 40
