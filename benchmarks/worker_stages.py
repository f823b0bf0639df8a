"""µs per event of each stage of the worker benchmark's path, worker side and experiment side.

Run: ``python3 benchmarks/worker_stages.py [--steps 120] [--episodes 40] [--repeats 5]``

One process, no worker processes: each stage is timed alone over the stream of
``_worker_runtime.episode_events`` (1,444 events an episode at 120 steps), the median of
``--repeats``. Worker side: the emit to a logger with only the roots' ``NullHandler``
(level check, handler walk, and a record where the code makes one), the stdlib record alone
(``makeRecord``), the emit to an ``EventForwarder`` an episode at a time (what a worker pays;
chunks go to a private goggles bus, whose sender thread runs alongside), and the forwarder's
row and pack alone. Experiment side, an episode at a time as the harness does: decoding the
chunks, replaying them to the standard aggregators and scoring them (``post_episode``), with
the garbage collector on and off, then each part alone; and, for comparison, the in-process
path (emit straight to the aggregators, then scoring). Run it with ``PYTHONPATH`` naming
another checkout's ``src`` to profile that code (``benchmarks/_revision.py`` unpacks one).
A measurement, not a test.
"""

from __future__ import annotations

import argparse
import gc
import logging
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from _workers import _context, use_private_bus

use_private_bus()

from _worker_runtime import episode_events

import goggles_io
import runtime_telemetry as rt
from experiment_telemetry.aggregators.standard import make_aggregators
from experiment_telemetry.workers import EventForwarder, replay_episode
from experiment_telemetry.workers.inbox import EpisodeEvents

_NAME = "bench.worker_runtime"


def _per_event(
    run: Callable[[], object], events: int, repeats: int, after: Callable[[], object] = list
) -> float:
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        samples.append((time.perf_counter() - start) / events * 1e6)
        after()  # not timed
    return statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=120)
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    rt.configure({"telemetry": "INFO"})
    logging.getLogger("experiment_telemetry").setLevel(logging.ERROR)
    stream = episode_events(args.steps) * args.episodes
    count = len(stream)
    emitter = rt.get_telemetry(_NAME)
    logger = emitter.events_logger
    rows: list[tuple[str, str, float]] = []

    def emit_all() -> None:
        emit = emitter.emit
        for event in stream:
            emit(event)

    rows.append(("worker", "emit, no subscriber (NullHandler only)", 0.0))
    rows[-1] = (*rows[-1][:2], _per_event(emit_all, count, args.repeats))

    def records() -> None:
        make = logger.makeRecord
        name = logger.name
        for event in stream:
            make(name, 20, __file__, 1, event, (), None, "f")

    rows.append(("worker", "  of which makeRecord", _per_event(records, count, args.repeats)))

    per_episode = len(stream) // args.episodes
    chunks: list[list[tuple[bytes, int]]] = []
    forwarder = EventForwarder("bench.stages", 0).subscribe("telemetry")
    bus_emit = forwarder._emit

    def keep(event: goggles_io.Event) -> None:
        if event.payload:
            chunks[-1].append((event.payload, int(event.extra["c"])))
        bus_emit(event)

    forwarder._emit = keep  # type: ignore[method-assign]

    def forwarded() -> None:
        chunks.clear()
        emit = emitter.emit
        for e in range(args.episodes):
            chunks.append([])
            forwarder.begin(e)
            for event in stream[e * per_episode : (e + 1) * per_episode]:
                emit(event)
            forwarder.end()

    def flush() -> None:
        goggles_io.flush(30.0)

    rows.append(("worker", "emit to an EventForwarder", 0.0))
    rows[-1] = (*rows[-1][:2], _per_event(forwarded, count, args.repeats, flush))
    forwarded_chunks = list(chunks)

    class _Rec:
        name = logger.name
        levelno = logging.INFO
        msg: object = None

    rec = _Rec()

    def forward_only() -> None:
        chunks.append([])
        forwarder.begin(0)
        femit = forwarder.emit
        for event in stream:
            rec.msg = event
            femit(rec)  # type: ignore[arg-type]
        forwarder.end()

    rows.append(("worker", "  of which the forwarder (row, pack, chunk)", 0.0))
    rows[-1] = (*rows[-1][:2], _per_event(forward_only, count, args.repeats))
    forwarder.close()
    goggles_io.flush(30.0)

    def decoded(e: int) -> list[Any]:
        entry = EpisodeEvents()
        for payload, c in forwarded_chunks[e]:
            entry.chunks.append(payload)
            entry.rows.append(True)
            entry.received += c
        return entry.decode()

    aggregators = [a.subscribe("telemetry.bench") for a in make_aggregators({"watch.enabled": 1})]

    def whole() -> None:
        for e in range(args.episodes):
            replay_episode(decoded(e), 0)
            for aggregator in aggregators:
                aggregator.post_episode(_context(e))

    rows.append(("experiment", "decode, replay, score (an episode at a time)", 0.0))
    rows[-1] = (*rows[-1][:2], _per_event(whole, count, args.repeats))
    gc.disable()
    rows.append(("experiment", "  the same, gc off", _per_event(whole, count, args.repeats)))
    gc.enable()

    def decode_only() -> None:
        for e in range(args.episodes):
            decoded(e)

    rows.append(("experiment", "  of which decode rows", 0.0))
    rows[-1] = (*rows[-1][:2], _per_event(decode_only, count, args.repeats))
    events = [decoded(e) for e in range(args.episodes)]

    def replay_and_score() -> None:
        for e in range(args.episodes):
            replay_episode(events[e], 0)
            for aggregator in aggregators:
                aggregator.post_episode(_context(e))

    rows.append(("experiment", "  of which replay + score", 0.0))
    rows[-1] = (*rows[-1][:2], _per_event(replay_and_score, count, args.repeats))

    def score_only() -> None:
        for e in range(args.episodes):
            for aggregator in aggregators:
                aggregator.post_episode(_context(e))

    rows.append(("experiment", "    of which post_episode", 0.0))
    rows[-1] = (*rows[-1][:2], _per_event(score_only, count, args.repeats))

    def in_process() -> None:
        emit = emitter.emit
        for e in range(args.episodes):
            for event in stream[e * per_episode : (e + 1) * per_episode]:
                emit(event)
            for aggregator in aggregators:
                aggregator.post_episode(_context(e))

    rows.append(("in-process", "emit to the aggregators + score", 0.0))
    rows[-1] = (*rows[-1][:2], _per_event(in_process, count, args.repeats))
    for aggregator in aggregators:
        aggregator.close()
    goggles_io.finish()
    print(f"# benchmarks/worker_stages.py --steps {args.steps} --episodes {args.episodes} "
          f"--repeats {args.repeats}: {count} events, median µs per event")  # fmt: skip
    print("| side | stage | µs/event |")
    print("|---|---|---:|")
    for side, stage, us in rows:
        print(f"| {side} | {stage} | {us:.2f} |")


if __name__ == "__main__":
    main()
