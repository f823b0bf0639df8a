"""The dashboard's index of one big run: points/s from ``telemetry ui``'s start to every point
listed, this checkout beside older revisions (issues 35 and 44: ≥ 5M points/s for every line
shape, memory as today).

Two line shapes, one run each (``--shape``, both by default):

- ``many``: ``benchmarks/ui.py``'s run, ``events.jsonl`` with 10 metrics a line;
- ``one``: ``log.jsonl`` as ``logger.scalar`` writes it through LocalStorageHandler, one metric a
  line (10 metrics taking turns, so a step is 10 lines).

Each repeat starts a fresh ``telemetry ui`` server (its own process, an empty index directory)
for each side in turn and polls ``/api/runs`` every 50 ms until the points listed reach the
run's; the server's peak RSS (its process tree) is sampled on the way. Rows give medians.

Run: ``python3 benchmarks/index.py [--points 20000000] [--shape one,many] [--repeats 3]
[--rev 41a0e84,30a5257]`` (30a5257: the commit before issue 29)
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
from ui import columns, free_port, get_json, tree_rss_mb, write_ours

_ROOT = Path(__file__).resolve().parent.parent
_METRICS = 10


def write_one_a_line(run_dir: Path, steps: int, metrics: int) -> None:
    """A run directory whose ``log.jsonl`` holds one metric a line, as ``logger.scalar`` writes
    it (LocalStorageHandler's keys and order, ``_layout.record``); checked against the writer."""
    from goggles_io._event.records import Event, Kind
    from goggles_io.handlers._layout import encode_line, record
    from goggles_io.runs import RunContext

    ctx = RunContext(project="bench", driver="benchmarks/index.py", slug=run_dir.name,
                     root=run_dir.parent)  # fmt: skip
    ctx.close()
    _step, cols = columns(steps, metrics)
    t0 = time.time() - steps * 1e-3
    pid = os.getpid()

    def line(name: str, value: float, step: int, when: float) -> str:
        return (f'{{"kind": "metric", "scope": "global", "payload": {{"{name}": {value!r}}}, '
                f'"filepath": "train.py", "lineno": 42, "step": {step}, "timestamp": {when!r}, '
                f'"logger": "train", "pid": {pid}}}\n')  # fmt: skip

    event = Event(kind=Kind.METRIC, scope="global", payload={"m0": 0.5}, filepath="train.py",
                  lineno=42, step=3, timestamp=t0, logger="train", pid=pid)  # fmt: skip
    assert encode_line(record(event)).decode() == line("m0", 0.5, 3, t0), "the writer changed"
    names = [name for name, _ in cols]
    values = [c.tolist() for _, c in cols]
    with open(ctx.dir / "log.jsonl", "w", encoding="utf-8") as fh:
        for i in range(steps):
            when = t0 + i * 1e-3
            fh.write("".join(line(n, v[i], i, when) for n, v in zip(names, values, strict=True)))
    if ctx.dir != run_dir:
        ctx.dir.rename(run_dir)


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
    parser.add_argument("--points", type=int, default=20_000_000, help="points of each run")
    parser.add_argument("--shape", default="one,many", help="line shapes: one, many or both")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rev", default="41a0e84", help="older sides, comma-separated ('' none)")
    parser.add_argument("--work", help="keep the data here (default: a temporary directory)")
    args = parser.parse_args()
    shapes = [s for s in args.shape.split(",") if s]
    revs = [r for r in args.rev.split(",") if r]
    steps = args.points // _METRICS
    points = steps * _METRICS
    out: list[str] = []
    with tempfile.TemporaryDirectory(prefix="index-bench-") as tmp:
        work = Path(args.work or tmp)
        sides = {"this checkout": _ROOT / "src"}
        for rev in revs:
            sides[rev] = unpack(rev, work / f"rev-{rev}-{os.getpid()}") / "src"
        for shape in shapes:
            root = work / f"runs-{shape}-{points}"
            if not (root / "run0" / "run.kv").exists():
                shutil.rmtree(root, ignore_errors=True)
                root.mkdir(parents=True)
                write = write_one_a_line if shape == "one" else write_ours
                write(root / "run0", steps, _METRICS)
            size = sum(f.stat().st_size for f in (root / "run0").glob("*.jsonl"))
            rows: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
            for repeat in range(args.repeats):
                order = list(sides.items())
                if repeat % 2:
                    order.reverse()  # the sides alternate which goes first
                for side, src in order:
                    index_dir = work / f"index-{side[:7]}"
                    shutil.rmtree(index_dir, ignore_errors=True)  # a cold index every time
                    got = index_once(src, root, index_dir, points)
                    rows[side].append(got)
                    print(f"# {shape} repeat {repeat} {side}: {got}", file=sys.stderr)
            out += _table(shape, points, size, args.repeats, rows)
    print("\n".join(out))
    return 0


def _table(
    shape: str, points: int, size: int, repeats: int, rows: dict[str, list[dict[str, Any]]]
) -> list[str]:
    what = "one metric a line (log.jsonl)" if shape == "one" else "10 metrics a line (events.jsonl)"
    lines = [
        f"\n# {points:,} points, one run, {what}, {size / 1e6:,.0f} MB; medians of {repeats}",
        "| side | indexed in (s) | points/s | server peak RSS (MB) | points listed/written |",
        "|---|---:|---:|---:|---:|",
    ]
    rates = {}
    for side, got in rows.items():
        secs = statistics.median(g["seconds"] or float("inf") for g in got)
        rates[side] = points / secs
        listed = min(g["points"] for g in got)
        peak = statistics.median(g["peak_mb"] for g in got)
        lines.append(f"| {side} | {secs:.2f} | {rates[side] / 1e6:.2f} M | {peak:.0f} | "
                     f"{listed:,}/{points:,} |")  # fmt: skip
    for side in list(rates)[1:]:
        lines.append(f"this checkout / {side}: {rates['this checkout'] / rates[side]:.2f}x")
    return lines


if __name__ == "__main__":
    sys.exit(main())
