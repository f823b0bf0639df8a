"""The worker table of ``aggregator.py`` (``_workers.py``), this checkout beside an older revision.

Run: ``python3 benchmarks/workers_vs_rev.py [--rev 41a0e84] [--repeats 3] [--workers 1,2]
[--episodes 40] [--steps 120]``

Each sample is a fresh process on a private goggles socket that times the in-process path and
each worker count once (``_workers.in_process`` / ``through_workers``: the runtime emits in N
worker processes, the experiment decodes, re-emits and scores every event), on either this
checkout's ``src`` or ``--rev``'s, unpacked from git into a temp dir; the sides alternate,
sample by sample. Also printed: the experiment process's CPU per event (it is the one process
every event goes through). Medians over ``--repeats``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

from _revision import unpack

_ROOT = Path(__file__).resolve().parent.parent
_SAMPLE = r"""
import json, logging, sys, time
import runtime_telemetry as rt
from _workers import in_process, through_workers, use_private_bus
from _worker_runtime import episode_events
from experiment_telemetry.workers import RuntimeSpec, WorkerPool
rt.configure({"telemetry": "INFO", "telemetry.experiment_telemetry": "OFF"})
logging.getLogger("experiment_telemetry").setLevel(logging.ERROR)
use_private_bus()
episodes, steps, counts = int(sys.argv[1]), int(sys.argv[2]), json.loads(sys.argv[3])
spec = RuntimeSpec(factory="_worker_runtime:ReplayRuntime", kwargs={"steps": steps})
got = {"in-process": in_process(episodes, steps)}
for count in counts:
    pool = WorkerPool(count, spec, levels={"telemetry": "INFO"})
    pool.start()
    try:
        through_workers(pool, 2, steps)  # warm: workers imported and connected
        cpu = time.process_time()
        rate, missing = through_workers(pool, episodes, steps)
        cpu = time.process_time() - cpu
    finally:
        pool.close()
    got[f"{count} workers"] = rate
    got[f"{count} workers cpu_us"] = cpu / (episodes * len(episode_events(steps))) * 1e6
    got[f"{count} workers missing"] = missing
print("RESULT", json.dumps(got))
"""


def _sample(src: Path, args: argparse.Namespace, counts: list[int]) -> dict[str, float]:
    bench = _ROOT / "benchmarks"
    env = {**os.environ, "PYTHONPATH": f"{src}{os.pathsep}{bench}"}
    cmd = [sys.executable, "-c", _SAMPLE, str(args.episodes), str(args.steps), json.dumps(counts)]
    done = subprocess.run(cmd, env=env, cwd=bench, capture_output=True, text=True, check=False)
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"sample on {src} failed:\n{done.stderr[-2000:]}")
    return json.loads(lines[-1][7:])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="41a0e84")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--workers", default="1,2")
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--steps", type=int, default=120)
    args = parser.parse_args()
    counts = [int(c) for c in args.workers.split(",") if c.strip()]
    with tempfile.TemporaryDirectory(prefix="workers-vs-rev-") as tmp:
        sides = {
            "this checkout": _ROOT / "src",
            args.rev: unpack(args.rev, Path(tmp) / "old") / "src",
        }
        got: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
        for repeat in range(args.repeats):
            for side, src in sides.items():
                got[side].append(_sample(src, args, counts))
                print(f"# {repeat} {side}: {got[side][-1]}", file=sys.stderr, flush=True)
    med = statistics.median
    print(
        f"# benchmarks/workers_vs_rev.py --rev {args.rev} --workers {args.workers} "
        f"--episodes {args.episodes} --steps {args.steps}, medians of {args.repeats} samples"
    )
    print("| code | path | events/s | vs in-process | experiment CPU µs/event | missing |")
    print("|---|---|---:|---:|---:|---:|")
    for side, rows in got.items():
        base = med(r["in-process"] for r in rows)
        print(f"| {side} | in-process | {base:,.0f} | 1.00x | - | - |")
        for count in counts:
            name = f"{count} workers"
            rate = med(r[name] for r in rows)
            cpu = med(r[f"{name} cpu_us"] for r in rows)
            missing = sum(int(r[f"{name} missing"]) for r in rows)
            print(f"| {side} | {name} | {rate:,.0f} | {rate / base:.2f}x | {cpu:.1f} | {missing} |")


if __name__ == "__main__":
    main()
