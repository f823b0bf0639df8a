"""Partial aggregation's ceiling: the worker rows of ``workers_vs_rev.py`` with the scoring in
the workers and only each episode's stats crossing (ADR 0084's probe, not a shipped path).

Run: ``python3 benchmarks/workers_ceiling.py [--repeats 5] [--episodes 40] [--steps 120]``

Each sample is a fresh process on a private goggles socket: the in-process path of
``_workers.in_process``, then 1 and 2 workers running ``_scoring_runtime.ScoringRuntime``
(emit and score in the worker; the experiment only collects the outcomes in plan order).
What it leaves out: the harness's ``EventRecorder`` writes every runtime event in the
experiment process, so a real run still needs its events (or their encoded log lines) to cross.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_SAMPLE = r"""
import json, logging, sys, time
import runtime_telemetry as rt
from _workers import _context, in_process, use_private_bus
from _worker_runtime import episode_events
from experiment_telemetry.workers import EpisodeTask, RuntimeSpec, WorkerPool
rt.configure({"telemetry": "INFO", "telemetry.experiment_telemetry": "OFF"})
logging.getLogger("experiment_telemetry").setLevel(logging.ERROR)
use_private_bus()
episodes, steps = int(sys.argv[1]), int(sys.argv[2])
spec = RuntimeSpec(factory="_scoring_runtime:ScoringRuntime", kwargs={"steps": steps})
per = len(episode_events(steps))
got = {"in-process": in_process(episodes, steps)}
for count in (1, 2):
    with WorkerPool(count, spec, levels={"telemetry": "INFO"}) as pool:
        list(pool.run(EpisodeTask(_context(e), False, {}) for e in range(2)))
        start = time.perf_counter()
        outcomes = list(pool.run(EpisodeTask(_context(e), False, {}) for e in range(episodes)))
        got[f"{count} workers"] = episodes * per / (time.perf_counter() - start)
        got[f"{count} workers crossed"] = sum(len(o.events) for o in outcomes) / episodes
        if any(o.lost or o.error for o in outcomes):
            raise SystemExit("an episode was lost or raised")
print("RESULT", json.dumps(got))
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--episodes", type=int, default=40)
    parser.add_argument("--steps", type=int, default=120)
    args = parser.parse_args()
    bench = _ROOT / "benchmarks"
    env = {**os.environ, "PYTHONPATH": f"{_ROOT / 'src'}{os.pathsep}{bench}"}
    rows = []
    for _ in range(args.repeats):
        cmd = [sys.executable, "-c", _SAMPLE, str(args.episodes), str(args.steps)]
        done = subprocess.run(cmd, env=env, cwd=bench, capture_output=True, text=True, check=False)
        lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
        if not lines:
            raise RuntimeError(f"sample failed:\n{done.stderr[-2000:]}")
        rows.append(json.loads(lines[-1][7:]))
        print(f"# {rows[-1]}", file=sys.stderr, flush=True)
    med = statistics.median
    base = med(r["in-process"] for r in rows)
    print(f"# benchmarks/workers_ceiling.py, medians of {args.repeats} samples")
    print("| path | events/s | vs in-process | events crossing an episode | each sample's ratio |")
    print("|---|---:|---:|---:|---|")
    print(f"| in-process | {base:,.0f} | 1.00x | - | - |")
    for name in ("1 workers", "2 workers"):
        rate = med(r[name] for r in rows)
        each = " ".join(f"{r[name] / r['in-process']:.2f}" for r in rows)
        crossed = med(r[f"{name} crossed"] for r in rows)
        print(f"| {name} | {rate:,.0f} | {rate / base:.2f}x | {crossed:.0f} | {each} |")


if __name__ == "__main__":
    main()
