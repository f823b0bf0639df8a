"""The worker tables of ``aggregator.py``: events/s from worker processes into one
experiment's aggregators, next to the in-process path, and the forwarding cost per event."""

from __future__ import annotations

import logging
import os
import statistics
import tempfile
import time
from collections.abc import Sequence

from _worker_runtime import ReplayRuntime, episode_events

import runtime_telemetry as rt
from experiment_telemetry.aggregators.standard import make_aggregators
from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.workers import (
    EpisodeTask,
    EventForwarder,
    RuntimeSpec,
    WorkerPool,
    replay_episode,
)

_CONFIG = {"watch.enabled": True}


def use_private_bus() -> str:
    """Point goggles_io at a socket of its own (a dedicated host, gone when we are)."""
    root = tempfile.mkdtemp(prefix="gg-bench-")
    os.environ.update(
        GOGGLES_TRANSPORT="socket",
        GOGGLES_SOCKET=os.path.join(root, "bus.sock"),
        GOGGLES_HOST_IDLE_TIMEOUT="0.5",
    )
    return root


def _context(episode: int) -> EpisodeContext:
    return EpisodeContext(mode="eval", epoch=0, episode=episode, target="mug")


def in_process(episodes: int, steps: int) -> float:
    """Events/s: the runtime emits in this process, the aggregators score each episode."""
    runtime = ReplayRuntime(steps)
    aggregators = [a.subscribe("telemetry.bench") for a in make_aggregators(_CONFIG)]
    start = time.perf_counter()
    for episode in range(episodes):
        runtime.run_episode()
        for aggregator in aggregators:
            aggregator.post_episode(_context(episode))
    elapsed = time.perf_counter() - start
    for aggregator in aggregators:
        aggregator.close()
    return episodes * len(runtime.events) / elapsed


def through_workers(pool: WorkerPool, episodes: int, steps: int) -> tuple[float, int]:
    """Events/s: ``pool``'s workers emit, this process re-emits and scores in plan order."""
    per_episode = len(episode_events(steps))
    aggregators = [a.subscribe("telemetry.bench") for a in make_aggregators(_CONFIG)]
    tasks = (EpisodeTask(_context(e), False, {}) for e in range(episodes))
    missing = 0
    start = time.perf_counter()
    for outcome in pool.run(tasks):
        missing += outcome.missing
        replay_episode(outcome.events, outcome.worker)
        for aggregator in aggregators:
            aggregator.post_episode(outcome.task.context)
    elapsed = time.perf_counter() - start
    for aggregator in aggregators:
        aggregator.close()
    return episodes * per_episode / elapsed, missing


class _NoOp(rt.Subscriber):
    def on_event(self, schema: rt.TelemetrySchema) -> None:
        pass


def forwarding_cost(events: int, repeats: int) -> tuple[list[float], list[float]]:
    """ns/event of an emit to a no-op subscriber vs to an ``EventForwarder`` (producer side:
    the emit loop, with the goggles client's sender thread running alongside)."""
    import goggles_io

    stream = (episode_events(120) * (events // 1444 + 1))[:events]
    emit = rt.get_telemetry("bench.forward").emit
    noop_ns: list[float] = []
    forward_ns: list[float] = []
    for _ in range(repeats):
        for sink, samples in ((_NoOp(), noop_ns), (EventForwarder("bench.forward", 0), forward_ns)):
            sink.subscribe("telemetry.bench.forward")
            if isinstance(sink, EventForwarder):
                sink.begin(0)
            start = time.perf_counter_ns()
            for event in stream:
                emit(event)
            samples.append((time.perf_counter_ns() - start) / len(stream))
            if isinstance(sink, EventForwarder):
                sink.end()
            sink.close()
            goggles_io.flush(30.0)  # not timed: the next repetition starts with an empty queue
    return noop_ns, forward_ns


def worker_tables(counts: Sequence[int], episodes: int, steps: int, repeats: int) -> list[str]:
    """Both tables as markdown lines."""
    logging.getLogger("experiment_telemetry").setLevel(logging.ERROR)
    per_episode = len(episode_events(steps))
    rates: dict[str, list[float]] = {"in-process": []}
    missing = 0
    pools = {}
    spec = RuntimeSpec(factory="_worker_runtime:ReplayRuntime", kwargs={"steps": steps})
    for count in counts:
        pools[count] = WorkerPool(count, spec, levels={"telemetry": "INFO"})
        pools[count].start()
        rates[f"{count} worker{'s' if count > 1 else ''}"] = []
    try:
        for _ in range(repeats):
            rates["in-process"].append(in_process(episodes, steps))
            for count, pool in pools.items():
                rate, lost = through_workers(pool, episodes, steps)
                rates[f"{count} worker{'s' if count > 1 else ''}"].append(rate)
                missing += lost
    finally:
        for pool in pools.values():
            pool.close()
    base = statistics.median(rates["in-process"])
    rows = [
        f"| {name} | {statistics.median(v):,.0f} | {min(v):,.0f} | {statistics.median(v) / base:.2f}x |"
        for name, v in rates.items()
    ]
    noop, forward = forwarding_cost(50_000, repeats)
    n, f = statistics.median(noop), statistics.median(forward)
    ratio = f / n
    return [
        "### Workers: runtime events from worker processes into one experiment (issue #16)",
        "",
        f"{episodes} episodes per repetition, {per_episode} events each (4 modules x {steps} steps),",
        "scored by the standard aggregators (recognition, metrics, watchers) in the experiment",
        "process; median and worst over repetitions, all paths timed in alternation. Worker rows:",
        "the runtime emits in N worker processes, each event is forwarded over the goggles socket,",
        "decoded and re-emitted here, and each episode scored in plan order. Events missing (queues",
        f"full) over all repetitions: {missing}.",
        "",
        "| path | median events/s | worst events/s | vs in-process |",
        "|---|---:|---:|---:|",
        *rows,
        "",
        "Forwarding cost in the worker (producer side, 50,000 events per repetition, the goggles",
        "client's sender thread running alongside):",
        "",
        "| subscriber on the runtime's logger | median ns/event | worst ns/event | vs no-op |",
        "|---|---:|---:|---:|",
        f"| no-op Subscriber (in-process emit) | {n:.0f} | {max(noop):.0f} | 1.00x |",
        f"| EventForwarder (to the bus) | {f:.0f} | {max(forward):.0f} | {ratio:.2f}x |",
        "",
        f"target: forwarding within 2x of an in-process emit to one subscriber -> "
        f"{'met' if ratio <= 2.0 else 'NOT met'} ({ratio:.2f}x)",
    ]
