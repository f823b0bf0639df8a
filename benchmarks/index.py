"""The dashboard's index of one big run: points/s from ``telemetry ui``'s start to every point
listed, this checkout beside older revisions (issues 35 and 44: ≥ 5M points/s for every line
shape, memory as today).

Two line shapes, one run each (``--shape``, both by default), written by ``LocalStorageHandler``
itself (``handle`` called in this process, so the run also has the columns it keeps beside
``log.jsonl``, ADR 0080):

- ``many``: ``log.jsonl`` with 10 metrics a line (``logger.scalars`` / a dict logged whole);
- ``one``: ``log.jsonl`` as ``logger.scalar`` writes it, one metric a line (10 metrics taking
  turns, so a step is 10 lines).

Sides: ``this checkout`` reads the run as the sink wrote it (columns present); ``this checkout,
text only`` reads a copy of the same ``log.jsonl`` without the column files (a run written by
robo-goggles, by an older goggles_io, or ``columns=False``); each ``--rev`` reads the copy too,
or with ``--rev-columns`` the run as the sink wrote it (this checkout's levers side by side with
an older one that also takes the columns: b7e600f and later).
Each repeat starts a fresh ``telemetry ui`` server (its own process, an empty index directory)
for each side in turn and polls ``/api/runs`` every 50 ms until the points listed reach the
run's; the server's peak RSS (its process tree) is sampled on the way. "indexed in" counts
from the server's start; "after first answer" from its first ``/api/runs`` answer (the server's
start, ~0.3-0.5 s of Python imports, left out). Rows give medians.

Run: ``python3 benchmarks/index.py [--points 20000000] [--shape one,many] [--repeats 3]
[--rev 21bf96d] [--rev-columns]``
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
from ui import columns, free_port, get_json, tree_rss_mb

_ROOT = Path(__file__).resolve().parent.parent
_METRICS = 10


def write_run(run_dir: Path, steps: int, metrics: int, shape: str) -> None:
    """A run directory whose ``log.jsonl`` (and columns) ``LocalStorageHandler`` wrote: one metric a
    line (``logger.scalar``, metrics taking turns) or ``metrics`` a line (a dict logged whole)."""
    from goggles_io._event.records import Event, Kind
    from goggles_io.handlers.storage import LocalStorageHandler
    from goggles_io.runs import RunContext

    ctx = RunContext(project="bench", driver="benchmarks/index.py", slug=run_dir.name,
                     root=run_dir.parent)  # fmt: skip
    ctx.close()
    _step, cols = columns(steps, metrics)
    t0 = time.time() - steps * 1e-3
    pid = os.getpid()
    names = [name for name, _ in cols]
    values = [c.tolist() for _, c in cols]
    handler = LocalStorageHandler(ctx.dir)
    handler.open()
    try:
        for i in range(steps):
            when = t0 + i * 1e-3
            rows = [{n: v[i]} for n, v in zip(names, values, strict=True)] if shape == "one" else [
                {n: v[i] for n, v in zip(names, values, strict=True)}]  # fmt: skip
            for payload in rows:
                handler.handle(Event(kind=Kind.METRIC, scope="global", payload=payload,
                                     filepath="train.py", lineno=42, step=i, timestamp=when,
                                     logger="train", pid=pid))  # fmt: skip
    finally:
        handler.close()
    if ctx.dir != run_dir:
        ctx.dir.rename(run_dir)


def text_only(run_dir: Path, copy: Path) -> None:
    """``copy``: the run without the sink's column files (its log hard-linked, else copied)."""
    copy.mkdir(parents=True)
    for item in run_dir.iterdir():
        if item.is_file() and not item.name.startswith(".log.jsonl."):
            try:
                os.link(item, copy / item.name)
            except OSError:
                shutil.copy2(item, copy / item.name)


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
    loaded, ready, seen, peak = None, None, 0, 0.0
    try:
        while time.perf_counter() - t0 < 1800 and loaded is None:
            try:
                listed = get_json(f"http://127.0.0.1:{port}/api/runs")["runs"]
                if ready is None:
                    ready = time.perf_counter() - t0
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
    return {"seconds": loaded, "ready": ready, "points": seen, "peak_mb": peak}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=20_000_000, help="points of each run")
    parser.add_argument("--shape", default="one,many", help="line shapes: one, many or both")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rev", default="21bf96d", help="older sides, comma-separated ('' none)")
    parser.add_argument("--rev-columns", action="store_true",
                        help="the --rev sides read the run with the sink's columns too")  # fmt: skip
    parser.add_argument("--work", help="keep the data here (default: a temporary directory)")
    args = parser.parse_args()
    shapes = [s for s in args.shape.split(",") if s]
    revs = [r for r in args.rev.split(",") if r]
    steps = args.points // _METRICS
    points = steps * _METRICS
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="index-bench-") as tmp:
        work = Path(args.work or tmp)
        src = _ROOT / "src"
        sides = {"this checkout": (src, ""), "this checkout, text only": (src, "-text")}
        for rev in revs:
            tree = unpack(rev, work / f"rev-{rev}-{os.getpid()}") / "src"
            sides[rev] = (tree, "" if args.rev_columns else "-text")
        for shape in shapes:
            root = work / f"runs-{shape}-{points}"
            if not (root / "run0" / "run.kv").exists():
                shutil.rmtree(root, ignore_errors=True)
                shutil.rmtree(f"{root}-text", ignore_errors=True)
                root.mkdir(parents=True)
                t = time.perf_counter()
                write_run(root / "run0", steps, _METRICS, shape)
                print(f"# {shape}: written in {time.perf_counter() - t:.1f} s", file=sys.stderr)
                text_only(root / "run0", Path(f"{root}-text") / "run0")
            size = sum(f.stat().st_size for f in (root / "run0").glob("*.jsonl"))
            rows: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
            for repeat in range(args.repeats):
                order = list(sides.items())
                if repeat % 2:
                    order.reverse()  # the sides alternate which goes first
                for side, (side_src, suffix) in order:
                    index_dir = work / f"index-{side.replace(' ', '_')}"
                    shutil.rmtree(index_dir, ignore_errors=True)  # a cold index every time
                    got = index_once(side_src, Path(f"{root}{suffix}"), index_dir, points)
                    rows[side].append(got)
                    print(f"# {shape} repeat {repeat} {side}: {got}", file=sys.stderr)
            out += _table(shape, points, size, args.repeats, rows)
    print("\n".join(out))
    return 0


def _table(
    shape: str, points: int, size: int, repeats: int, rows: dict[str, list[dict[str, Any]]]
) -> list[str]:
    what = "one metric a line" if shape == "one" else "10 metrics a line"
    lines = [
        f"\n# {points:,} points, one run, {what} (log.jsonl), {size / 1e6:,.0f} MB; medians of "
        f"{repeats}",
        "| side | indexed in (s) | points/s | after first answer (s) | points/s | "
        "server peak RSS (MB) | points listed/written |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    rates = {}
    for side, got in rows.items():
        secs = statistics.median(g["seconds"] or float("inf") for g in got)
        after = statistics.median((g["seconds"] or float("inf")) - (g["ready"] or 0) for g in got)
        rates[side] = points / secs
        listed = min(g["points"] for g in got)
        peak = statistics.median(g["peak_mb"] for g in got)
        lines.append(f"| {side} | {secs:.2f} | {rates[side] / 1e6:.2f} M | {after:.2f} | "
                     f"{points / after / 1e6:.2f} M | {peak:.0f} | {listed:,}/{points:,} |")  # fmt: skip
    for side in list(rates)[1:]:
        lines.append(f"this checkout / {side}: {rates['this checkout'] / rates[side]:.2f}x")
    return lines


if __name__ == "__main__":
    sys.exit(main())
