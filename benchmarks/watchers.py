"""Can an alert be trusted? The default watchers on synthetic healthy and broken runs (issue 31).

Run: ``python3 benchmarks/watchers.py [--seeds 1000:1100] [--failing 34] [--markdown FILE]
[--json FILE] [--show-false N]``

The runs come from ``experiment_telemetry.demo.guide_runs`` (the logging guide's SAC, PPO and DQN
metric tables at its two cadences; see that module). Healthy: one run per seed and algorithm.
Broken: the first ``--failing`` seeds of the range, per algorithm, for each of the guide's four
failures plus silence and NaN/inf (PPO logs no Q value: no value explosion), each at a random
onset and strength. Every run goes through a fresh ``WatchAggregator(make_watches({}))``, the
watchers ``make_aggregators`` attaches to a live run, the demo and replay, fed bundle by bundle.

Reported per watcher (check): detection rate on its failure (an alert of that check on one of the
failure's metrics at or after the onset), median and p90 delay in points of the alerted series
after the onset (for silence, bundles of the silenced metric's source), and the false-alarm rate:
healthy runs with an alert of that check. An alert before the onset of a broken run is counted
as a false alarm too ("early"). The defaults were tuned on seeds 0:100 and are reported on
1000:1100.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from collections import Counter, defaultdict

from experiment_telemetry.aggregators.standard import make_watches
from experiment_telemetry.aggregators.watch import WatchAggregator
from experiment_telemetry.demo.guide_runs import ALGORITHMS, EXPECTED, FAILURES, GuideRun, make_run
from experiment_telemetry.stats import MetricAlert
from runtime_telemetry.events.metrics import MetricsBundle


def alerts_of(run: GuideRun) -> list[MetricAlert]:
    """Feed ``run`` to the default watchers, bundle by bundle; return the alerts."""
    agg = WatchAggregator(make_watches({}))
    alerts: list[MetricAlert] = []
    agg.add_listener(alerts.append)  # type: ignore[arg-type]
    for i, (source, step, values) in enumerate(run.points):
        agg.feed(MetricsBundle(source=source, step=step, values=values, timestamp=float(i)))
    return alerts


def delay(run: GuideRun, alert: MetricAlert) -> int:
    """Points of the alerted series between the onset and the alert (0: the first one after)."""
    assert run.onset is not None
    source = "learner" if run.failure == "silence" else alert.source
    points = [
        step
        for src, step, values in run.points
        if src == source and run.onset < step <= alert.step
        and (run.failure == "silence" or alert.metric in values)
    ]  # fmt: skip
    return max(0, len(points) - 1)


def percentile(values: list[int], q: float) -> float:
    ordered = sorted(values)
    return float(ordered[min(len(ordered) - 1, int(q * len(ordered)))]) if ordered else float("nan")


def evaluate(first: int, last: int, failing: int) -> dict[str, object]:
    """Every run of the seed range through the watchers; the numbers of the table."""
    healthy: dict[str, int] = Counter()  # check -> healthy runs it alerted on
    healthy_any = 0
    healthy_runs = 0
    false_texts: list[str] = []
    found: dict[str, list[int]] = defaultdict(list)  # failure -> delays of detected runs
    runs: dict[str, int] = Counter()
    early: dict[str, int] = Counter()
    missed: list[str] = []
    for seed in range(first, last):
        for algorithm in ALGORITHMS:
            for failure in FAILURES:
                if failure != "none" and seed >= first + failing:
                    continue
                if algorithm == "PPO" and failure == "value_explosion":
                    continue
                run = make_run(seed, algorithm, failure)
                alerts = alerts_of(run)
                if failure == "none":
                    healthy_runs += 1
                    healthy_any += bool(alerts)
                    for check in {a.check for a in alerts}:
                        healthy[check] += 1
                    false_texts += [f"{algorithm} seed {seed}: {a.message}" for a in alerts]
                    continue
                assert run.onset is not None
                runs[failure] += 1
                if any(a.step <= run.onset for a in alerts):
                    early[failure] += 1
                    false_texts += [
                        f"{algorithm} {failure} seed {seed} (onset {run.onset}): {a.message}"
                        for a in alerts
                        if a.step <= run.onset
                    ]
                hits = [
                    a
                    for a in alerts
                    if a.check == EXPECTED[failure]
                    and a.metric in run.metrics
                    and a.step > run.onset
                ]
                if hits:
                    found[failure].append(delay(run, hits[0]))
                else:
                    missed.append(
                        f"{algorithm} {failure} seed {seed} strength {run.strength:.3g} "
                        f"onset {run.onset}: {[a.message for a in alerts]}"
                    )
    return {
        "seeds": [first, last],
        "healthy_runs": healthy_runs,
        "healthy_any": healthy_any,
        "healthy_by_check": dict(healthy),
        "runs": dict(runs),
        "delays": {k: sorted(v) for k, v in found.items()},
        "early": dict(early),
        "false_alarms": false_texts,
        "missed": missed,
    }


def table(result: dict[str, object]) -> list[str]:
    """The markdown table of ``evaluate``'s numbers."""
    healthy_runs = int(result["healthy_runs"])  # type: ignore[call-overload]
    by_check: dict[str, int] = result["healthy_by_check"]  # type: ignore[assignment]
    runs: dict[str, int] = result["runs"]  # type: ignore[assignment]
    delays: dict[str, list[int]] = result["delays"]  # type: ignore[assignment]
    early: dict[str, int] = result["early"]  # type: ignore[assignment]
    lines = [
        "| watcher (check) | failure | broken runs | detected | median delay | p90 delay "
        "| early alerts | healthy runs alerted |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for failure, check in EXPECTED.items():
        n = runs.get(failure, 0)
        got = delays.get(failure, [])
        med = statistics.median(got) if got else float("nan")
        lines.append(
            f"| {check} | {failure} | {n} | {len(got)} ({100 * len(got) / max(n, 1):.1f} %) "
            f"| {med:g} | {percentile(got, 0.9):g} | {early.get(failure, 0)} "
            f"| {by_check.get(check, 0)} ({100 * by_check.get(check, 0) / healthy_runs:.1f} %) |"
        )
    any_ = int(result["healthy_any"])  # type: ignore[call-overload]
    lines.append(
        f"| any | none (healthy) | {healthy_runs} | | | | "
        f"| {any_} ({100 * any_ / healthy_runs:.1f} %) |"
    )
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--seeds",
        default="1000:1100",
        help="FIRST:LAST seed range (healthy: one run per seed and algorithm)",
    )
    parser.add_argument(
        "--failing", type=int, default=34, help="seeds of the range used for broken runs"
    )
    parser.add_argument("--markdown", help="write the table to this file")
    parser.add_argument(
        "--json", help="write the raw numbers (and every false alarm and miss) here"
    )
    parser.add_argument(
        "--show-false", type=int, default=10, help="print this many false alarms and misses"
    )
    args = parser.parse_args(argv)
    try:
        first, last = (int(part) for part in args.seeds.split(":"))
    except ValueError:
        parser.error(f"--seeds must be FIRST:LAST, two integers (got {args.seeds!r})")
    if not 0 <= first < last or args.failing < 1:
        parser.error(
            f"--seeds needs 0 <= FIRST < LAST and --failing >= 1 (got {args.seeds!r}, {args.failing})"
        )
    began = time.perf_counter()
    result = evaluate(first, last, min(args.failing, last - first))
    lines = [
        f"Command: `python3 benchmarks/watchers.py --seeds {first}:{last} --failing {args.failing}` "
        f"({time.perf_counter() - began:.0f} s)",
        "",
        *table(result),
    ]
    print("\n".join(lines))
    for title, key in (("false alarms", "false_alarms"), ("missed", "missed")):
        items: list[str] = result[key]  # type: ignore[assignment]
        if items and args.show_false:
            print(f"\n{title} ({len(items)}):")
            for item in items[: args.show_false]:
                print(f"  {item}")
    if args.markdown:
        with open(args.markdown, "w", encoding="utf-8") as fp:
            fp.write("\n".join(lines) + "\n")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as fp:
            json.dump(result, fp, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
