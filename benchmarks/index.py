"""The dashboard's index of one big run: points/s from ``telemetry ui``'s start to every point
listed, this checkout beside an older revision (issue 35: ≥ 5M points/s, memory as today).

The run is ``benchmarks/ui.py``'s: ``events.jsonl`` in LocalStorageHandler's line format, 10
metrics a line. Each repeat starts a fresh ``telemetry ui`` server (its own process, an empty
index directory) for each side in turn and polls ``/api/runs`` every 50 ms until the points
listed reach the run's; the server's peak RSS (its process tree) is sampled on the way.

Run: ``python3 benchmarks/index.py [--points 20000000] [--repeats 3] [--rev 41a0e84]``
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.error
from pathlib import Path
from typing import Any

from _revision import unpack
from ui import free_port, get_json, tree_rss_mb, write_ours

_ROOT = Path(__file__).resolve().parent.parent


def index_once(src: Path, root: Path, index_dir: Path, points: int) -> dict[str, Any]:
    """Start a server on ``root`` from ``src``; seconds until every point is listed."""
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(src)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(
        [sys.executable, "-m", "experiment_telemetry", "ui", str(root), "--port", str(port),
         "--index-dir", str(index_dir)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    loaded, seen, peak = None, 0, 0.0
    try:
        while time.perf_counter() - t0 < 1800 and loaded is None:
            try:
                listed = get_json(f"http://127.0.0.1:{port}/api/runs")["runs"]
                seen = sum(sum(r["metrics"].values()) for r in listed)
                if seen >= points:
                    loaded = time.perf_counter() - t0
            except (urllib.error.URLError, ConnectionError, OSError, ValueError):
                pass
            peak = max(peak, tree_rss_mb(proc.pid))
            time.sleep(0.05)
    finally:
        proc.terminate()
        proc.wait(30)
    return {"seconds": loaded, "points": seen, "peak_mb": peak}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rev", default="41a0e84", help="the older side ('' for none)")
    parser.add_argument("--work", help="keep the data here (default: a temporary directory)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="index-bench-") as tmp:
        work = Path(args.work or tmp)
        root = work / "runs"
        if not (root / "run0" / "events.jsonl").exists():
            root.mkdir(parents=True, exist_ok=True)
            write_ours(root / "run0", args.points // 10, 10)
        sides = {"this checkout": _ROOT / "src"}
        if args.rev:
            sides[args.rev] = unpack(args.rev, work / f"rev-{args.rev}-{os.getpid()}") / "src"
        rows: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for repeat in range(args.repeats):
            for side, src in sides.items():
                index_dir = work / f"index-{side[:4]}"
                shutil.rmtree(index_dir, ignore_errors=True)  # a cold index every time
                got = index_once(src, root, index_dir, args.points)
                rows[side].append(got)
                print(f"# repeat {repeat} {side}: {got}", file=sys.stderr)
    print(f"# {args.points:,} points, one run (10 metrics a line); medians of {args.repeats}")
    print("| side | indexed in (s) | points/s | server peak RSS (MB) | points listed/written |")
    print("|---|---:|---:|---:|---:|")
    rates = {}
    for side, got in rows.items():
        secs = statistics.median(g["seconds"] or float("inf") for g in got)
        rates[side] = args.points / secs
        listed = min(g["points"] for g in got)
        print(f"| {side} | {secs:.2f} | {rates[side] / 1e6:.2f} M | "
              f"{statistics.median(g['peak_mb'] for g in got):.0f} | {listed:,}/{args.points:,} |")  # fmt: skip
    if args.rev:
        print(f"\nthis checkout / {args.rev}: {rates['this checkout'] / rates[args.rev]:.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
