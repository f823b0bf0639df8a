"""Producer cost of one scalar into W&B (offline): through goggles_io vs ``wandb.log`` in the loop.

Run: ``python3 benchmarks/sinks.py [--calls 5000] [--repeats 5] [--markdown]``

Both sides write a real offline W&B run. "ours" times ``logger.scalar`` with a ``WandBHandler``
attached (the SDK runs on the handler's worker thread); "direct" times ``run.log`` called in the
training loop. Repetitions alternate between the two sides so machine noise hits both alike;
each call is timed on its own and the table shows the median and p99 per call over all calls,
and the ratio direct/ours (the target is >= 10x).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import statistics
import sys
import tempfile
import time

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

import wandb

import goggles_io as gg

TARGET_RATIO = 10.0


def _p99(samples: list[int]) -> float:
    ordered = sorted(samples)
    return float(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))])


def time_ours(calls: int, out: str, samples: list[int]) -> float:
    """Time logger.scalar calls; return the seconds finish() took to drain to W&B."""
    handler = gg.WandBHandler(name="bench.wandb", project="bench", run_name="ours", dir=out)
    gg.attach(handler)
    logger = gg.get_logger("bench", with_metrics=True)
    logger.scalar("warmup", 0.0, step=0)  # starts the W&B run on the worker thread
    gg.flush()
    clock = time.perf_counter_ns
    for step in range(1, calls + 1):
        t0 = clock()
        logger.scalar("loss", 0.5, step=step)
        samples.append(clock() - t0)
    t0 = time.perf_counter()
    report = gg.finish()
    if report.dropped:
        print(f"warning: the bus dropped {report.dropped} events", file=sys.stderr)
    return time.perf_counter() - t0


def time_direct(calls: int, out: str, samples: list[int]) -> float:
    """Time run.log calls in the loop; return the seconds run.finish() took."""
    run = wandb.init(project="bench", name="direct", dir=out, reinit="create_new")
    run.log({"warmup": 0.0}, step=0)
    clock = time.perf_counter_ns
    for step in range(1, calls + 1):
        t0 = clock()
        run.log({"loss": 0.5}, step=step)
        samples.append(clock() - t0)
    t0 = time.perf_counter()
    run.finish()
    return time.perf_counter() - t0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--markdown", action="store_true")
    args = parser.parse_args()
    ours: list[int] = []
    direct: list[int] = []
    drain = {"ours": [], "direct": []}
    with tempfile.TemporaryDirectory(prefix="bench-sinks-") as out:
        for _ in range(args.repeats):
            drain["ours"].append(time_ours(args.calls, out, ours))
            drain["direct"].append(time_direct(args.calls, out, direct))
    rows = [
        ("goggles_io logger.scalar -> WandBHandler", ours, drain["ours"]),
        ("wandb run.log in the loop", direct, drain["direct"]),
    ]
    ratio_med = statistics.median(direct) / statistics.median(ours)
    ratio_p99 = _p99(direct) / _p99(ours)
    lines = [
        "| producer call | median ns | p99 ns | finish s (median) |",
        "|---|---:|---:|---:|",
    ]
    for label, samples, fin in rows:
        lines.append(
            f"| {label} | {statistics.median(samples):,.0f} | {_p99(samples):,.0f} "
            f"| {statistics.median(fin):.2f} |"
        )
    lines.append(f"| **ratio direct/ours** | **{ratio_med:.1f}x** | **{ratio_p99:.1f}x** | |")
    header = (
        f"{args.repeats} x {args.calls} calls per side, alternating; Python "
        f"{platform.python_version()}, {os.cpu_count()} cores, wandb {wandb.__version__} "
        f"(offline), {datetime.date.today().isoformat()}"
    )
    print(header)
    print("\n".join(lines))
    ok = ratio_med >= TARGET_RATIO
    print(f"target: median ratio >= {TARGET_RATIO:.0f}x -> {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
