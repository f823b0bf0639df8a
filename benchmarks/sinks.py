"""Producer cost of one scalar into W&B (offline): goggles_io (socket and in-process) vs ``wandb.log``.

Run: ``python3 benchmarks/sinks.py [--calls 5000] [--repeats 5]``

Every side writes a real offline W&B run. "socket" is goggles_io's default transport: the
``WandBHandler`` is rebuilt in a dedicated host process and the producer only queues the event
for the socket. "in-process" runs the handler on a worker thread of this process
(``GOGGLES_TRANSPORT=inprocess``). "direct" calls ``run.log`` in the training loop. Repetitions
rotate through the three sides so machine noise hits them alike; each call is timed on its own
and the table shows the median and p99 per call over all calls, and the ratios direct/ours
(the target is >= 10x for both of our modes).
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import shutil
import statistics
import sys
import tempfile
import time

os.environ.setdefault("WANDB_MODE", "offline")
os.environ.setdefault("WANDB_SILENT", "true")

import wandb

import goggles_io as gg
from goggles_io.testing import reset_defaults

TARGET_RATIO = 10.0


def _p99(samples: list[int]) -> float:
    ordered = sorted(samples)
    return float(ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))])


def time_ours(transport: str, calls: int, out: str, samples: list[int]) -> float:
    """Time logger.scalar calls on ``transport``; return the seconds finish() took to drain."""
    os.environ["GOGGLES_TRANSPORT"] = transport
    reset_defaults()
    handler = gg.WandBHandler(name="bench.wandb", project="bench", run_name=transport, dir=out)
    gg.attach(handler)
    logger = gg.get_logger("bench", with_metrics=True)
    logger.scalar("warmup", 0.0, step=0)  # starts the host (socket) and the W&B run
    gg.flush(60.0)
    clock = time.perf_counter_ns
    for step in range(1, calls + 1):
        t0 = clock()
        logger.scalar("loss", 0.5, step=step)
        samples.append(clock() - t0)
    t0 = time.perf_counter()
    report = gg.finish(120.0)
    if report.dropped or report.timed_out:
        print(f"warning: {transport}: {report.summary()}", file=sys.stderr)
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
    args = parser.parse_args()
    sides = ("socket", "inprocess", "direct")
    samples: dict[str, list[int]] = {side: [] for side in sides}
    drain: dict[str, list[float]] = {side: [] for side in sides}
    sock_dir = tempfile.mkdtemp(prefix="bs-")  # short: Unix socket paths are limited
    os.environ["GOGGLES_SOCKET"] = os.path.join(sock_dir, "bus.sock")
    try:
        with tempfile.TemporaryDirectory(prefix="bench-sinks-") as out:
            for _ in range(args.repeats):
                for side in sides:
                    if side == "direct":
                        drain[side].append(time_direct(args.calls, out, samples[side]))
                    else:
                        drain[side].append(time_ours(side, args.calls, out, samples[side]))
    finally:
        reset_defaults()
        shutil.rmtree(sock_dir, ignore_errors=True)
    labels = {
        "socket": "goggles_io logger.scalar, socket transport (default) -> host's WandBHandler",
        "inprocess": "goggles_io logger.scalar, in-process -> WandBHandler thread",
        "direct": "wandb run.log in the loop",
    }
    lines = [
        "| producer call | median ns | p99 ns | finish s (median) |",
        "|---|---:|---:|---:|",
    ]
    for side in sides:
        s = samples[side]
        lines.append(
            f"| {labels[side]} | {statistics.median(s):,.0f} | {_p99(s):,.0f} "
            f"| {statistics.median(drain[side]):.2f} |"
        )
    ok = True
    direct = samples["direct"]
    for side in ("socket", "inprocess"):
        med = statistics.median(direct) / statistics.median(samples[side])
        p99 = _p99(direct) / _p99(samples[side])
        ok = ok and med >= TARGET_RATIO
        lines.append(f"| **ratio direct / {side}** | **{med:.1f}x** | **{p99:.1f}x** | |")
    header = (
        f"{args.repeats} x {args.calls} calls per side, rotating; Python "
        f"{platform.python_version()}, {os.cpu_count()} cores, wandb {wandb.__version__} "
        f"(offline), {datetime.date.today().isoformat()}"
    )
    print(header)
    print("\n".join(lines))
    print(
        f"target: median ratio >= {TARGET_RATIO:.0f}x for both modes -> {'met' if ok else 'NOT met'}"
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
