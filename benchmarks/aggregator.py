"""Per-event cost of the RecognitionAggregator and of the WatchAggregator (every watch on)
next to a no-op Subscriber, side by side.

Run: ``python3 benchmarks/aggregator.py [--episodes 200] [--bundles 20000] [--repeats 7]
[--workers 1,2,4] [--worker-episodes 40] [--worker-steps 120] [--markdown FILE]``

A recorded-style event stream (4 learning modules, 12 steps per episode: steps, most-likely
hypotheses, sensor patches, terminal events) is emitted through ``runtime_telemetry`` into
either a no-op ``Subscriber`` or a ``RecognitionAggregator`` whose ``post_episode`` runs after
each episode; the two are timed in alternation within each repetition so machine noise hits
both alike. Reported: median ns per event (and p99 over repetitions), events/s, and the ratio.
The events are built once beforehand: only delivery and aggregation are timed.

The watcher table feeds ``MetricsBundle`` events the same way: a learner bundle of five metrics
per step (``q_mean``, ``critic_loss``, ``policy_loss``, ``train_steps``, ``alpha``) and an actor
bundle with ``episode_return`` and ``eval_return`` every 20 steps, healthy noisy values, so every
default watch (non-finite, growth, collapse, divergence, counter, silence) sees its metrics.

The worker tables (``_workers.py``, on a private goggles socket) run the same kind of stream in
1, 2 and 4 worker processes into one experiment's aggregators, next to the in-process path, and
time the producer-side cost of the ``EventForwarder`` against a no-op subscriber.
"""

from __future__ import annotations

import argparse
import datetime
import math
import platform
import random
import statistics
import time

from _worker_runtime import episode_events

import runtime_telemetry as rt
from experiment_telemetry.aggregators import RecognitionAggregator, WatchAggregator
from experiment_telemetry.context import EpisodeContext
from runtime_telemetry.events.metrics import MetricsBundle

_emitter = rt.get_telemetry("bench.runtime")


class NoOpSubscriber(rt.Subscriber):
    def on_event(self, schema: rt.TelemetrySchema) -> None:
        pass


def make_episode(episode: int) -> tuple[list[rt.TelemetryEvent], EpisodeContext]:
    """The worker benchmark's episode stream (12 steps a module), scored as a train episode."""
    events = episode_events(12)
    context = EpisodeContext(mode="train", epoch=0, episode=episode, target="mug")
    return events, context


def make_bundles(count: int) -> list[MetricsBundle]:
    rng = random.Random(0)
    bundles = []
    for t in range(count):
        values = {
            "q_mean": 50.0 * (1 - math.exp(-t / 5000)) + rng.gauss(0, 1),
            "critic_loss": 2.0 * math.exp(-t / 8000) + abs(rng.gauss(0, 0.05)),
            "policy_loss": -1.0 + rng.gauss(0, 0.1),
            "train_steps": float(t),
            "alpha": 0.2 + rng.gauss(0, 0.01),
        }
        bundles.append(MetricsBundle(source="learner", step=t, values=values))
        if t % 20 == 19:
            ret = 100 * (1 - math.exp(-t / 4000))
            actor = {"episode_return": ret + rng.gauss(0, 5), "eval_return": ret + rng.gauss(0, 2)}
            bundles.append(MetricsBundle(source="actor", step=t, values=actor))
    return bundles


def run_bundles(subscriber: rt.Subscriber, bundles: list[MetricsBundle]) -> float:
    emit = _emitter.emit
    start = time.perf_counter_ns()
    for bundle in bundles:
        emit(bundle)
    return (time.perf_counter_ns() - start) / len(bundles)


def run(
    subscriber: rt.Subscriber, episodes: list[tuple[list[rt.TelemetryEvent], EpisodeContext]]
) -> tuple[float, int]:
    emit = _emitter.emit
    score = getattr(subscriber, "post_episode", None)
    count = 0
    start = time.perf_counter_ns()
    for events, context in episodes:
        for event in events:
            emit(event)
        count += len(events)
        if score is not None:
            score(context)
    return (time.perf_counter_ns() - start) / count, count


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--bundles", type=int, default=20_000)
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--workers", default="1,2,4", help="worker counts; '' skips the table")
    parser.add_argument("--worker-episodes", type=int, default=40)
    parser.add_argument("--worker-steps", type=int, default=120)
    parser.add_argument("--markdown", help="write the markdown section to this file")
    args = parser.parse_args()
    rt.configure({"telemetry": "INFO", "telemetry.experiment_telemetry": "OFF"})
    episodes = [make_episode(i) for i in range(args.episodes)]
    results: dict[str, list[float]] = {"no-op Subscriber": [], "RecognitionAggregator": []}
    count = 0
    for _ in range(args.repeats):
        for name in results:
            sub = (
                NoOpSubscriber() if name.startswith("no-op") else RecognitionAggregator()
            ).subscribe("telemetry.bench")
            ns, count = run(sub, episodes)
            sub.close()
            results[name].append(ns)
    base = statistics.median(results["no-op Subscriber"])
    rows = []
    for name, samples in results.items():
        med = statistics.median(samples)
        rows.append(
            f"| {name} | {med:.0f} | {max(samples):.0f} | {1e9 / med:,.0f} | {med / base:.2f}x |"
        )
    bundles = make_bundles(args.bundles)
    watched: dict[str, list[float]] = {"no-op Subscriber": [], "WatchAggregator (all watches)": []}
    alerts = 0
    for _ in range(args.repeats):
        for name in watched:
            sub = NoOpSubscriber() if name.startswith("no-op") else WatchAggregator()
            sub.subscribe("telemetry.bench")
            watched[name].append(run_bundles(sub, bundles))
            alerts += getattr(sub, "alerts", 0)
            sub.close()
    wbase = statistics.median(watched["no-op Subscriber"])
    wrows = []
    for name, samples in watched.items():
        med = statistics.median(samples)
        wrows.append(
            f"| {name} | {med:.0f} | {max(samples):.0f} | {1e9 / med:,.0f} | {med / wbase:.2f}x |"
        )
    wratio = statistics.median(watched["WatchAggregator (all watches)"]) / wbase
    counts = [int(c) for c in args.workers.split(",") if c.strip()]
    cmd = (
        f"python3 benchmarks/aggregator.py --episodes {args.episodes} --bundles {args.bundles} "
        f"--repeats {args.repeats}"
    )
    if counts:
        cmd += (
            f" --workers {args.workers} --worker-episodes {args.worker_episodes}"
            f" --worker-steps {args.worker_steps}"
        )
    text = "\n".join(
        [
            "## Aggregator: RecognitionAggregator cost per runtime event",
            "",
            f"Command: `{cmd}` · date {datetime.date.today()} · machine: 2 cores (shared, not quieted) / "
            f"Python {platform.python_version()} · {count} events per repetition (4 modules x 12 steps, "
            f"post_episode after each of {args.episodes} episodes), emitted through runtime_telemetry; "
            "median and worst over repetitions, both subscribers timed in alternation.",
            "",
            "| subscriber | median ns/event | worst ns/event | events/s | vs no-op |",
            "|---|---:|---:|---:|---:|",
            *rows,
            "",
            "The aggregator's own cost per event is the difference of the two medians; the no-op row is",
            "the price of delivery through stdlib logging that any subscriber pays.",
            "",
            "### Watchers: WatchAggregator cost per MetricsBundle (issue #13)",
            "",
            f"{len(bundles)} bundles per repetition (learner: 5 metrics per step; actor: 2 metrics every",
            "20 steps), every default watch on, emitted through runtime_telemetry; median and worst over",
            f"repetitions, both subscribers timed in alternation; alerts raised: {alerts} (healthy series).",
            "",
            "| subscriber | median ns/bundle | worst ns/bundle | bundles/s | vs no-op |",
            "|---|---:|---:|---:|---:|",
            *wrows,
            "",
            f"target: WatchAggregator within 2x of the no-op subscriber -> "
            f"{'met' if wratio <= 2.0 else 'NOT met'} ({wratio:.2f}x)",
        ]
    )
    if counts:
        from _workers import use_private_bus, worker_tables

        use_private_bus()
        tables = worker_tables(counts, args.worker_episodes, args.worker_steps, args.repeats)
        text += "\n\n" + "\n".join(tables)
    print(text)
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fp:
            fp.write(text + "\n")


if __name__ == "__main__":
    main()
