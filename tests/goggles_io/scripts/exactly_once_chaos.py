"""Run the exactly-once chaos tests several times in a row, each with a fresh seed; one line each.

Usage: ``python tests/goggles_io/scripts/exactly_once_chaos.py [runs=10]`` from the repository
root. Each run is ``pytest tests/goggles_io/transport/test_exactly_once.py`` in a child process:
its two tests, 5 host SIGKILLs each (300,000 scalars and 150 images into JSONL, CSV and a custom
sink; 30,000 scalars and 30 images into those, W&B offline and a real collector). The line
gives the seed, whether it passed, per test and sink events / missing / duplicates / out of
order, the report's delivered counts, and the time. Exit status 1 if any run failed. A failed
run's seed replays it: ``GOGGLES_CHAOS_SEED=<seed> pytest ...``.
"""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
import time
from pathlib import Path

_TEST = "tests/goggles_io/transport/test_exactly_once.py"
_ROOT = Path(__file__).resolve().parents[3]


def run_once(seed: int) -> tuple[bool, str]:
    """One run with ``seed``: whether it passed, and its line."""
    start = time.monotonic()
    proc = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-s", "-p", "no:cacheprovider", _TEST],
        cwd=_ROOT,
        env={**os.environ, "GOGGLES_CHAOS_SEED": str(seed)},
        capture_output=True,
        text=True,
        check=False,
    )
    took = time.monotonic() - start
    mark = "exactly-once chaos: "
    found = [ln[ln.index(mark) :] for ln in proc.stdout.splitlines() if mark in ln]
    if not found:
        tail = (proc.stdout + proc.stderr)[-600:].replace("\n", " | ")
        return False, f"seed {seed}: FAILED before its summary ({took:.0f} s): {tail}"
    parts = []
    for raw in found:
        summary = json.loads(raw.split(": ", 1)[1])
        sinks = " ".join(
            f"{s['sink']}={s['events']}/{s['missing']}/{s['duplicates']}/{s['out of order']}"
            for s in summary["sinks"]
        )
        report = {name: tally[0] for name, tally in summary["report"]["handlers"].items()}
        parts.append(f"[{sinks}; report delivered {report}; run.kv {summary['run.kv']}]")
    passed = proc.returncode == 0
    verdict = "passed" if passed else "FAILED"
    line = (
        f"seed {seed}: {verdict} in {took:.0f} s; events/missing/duplicates/out of order: "
        + " ".join(parts)
    )
    return passed, line


def main(argv: list[str]) -> int:
    runs = int(argv[1]) if len(argv) > 1 else 10
    failed = 0
    for i in range(runs):
        seed = random.SystemRandom().randrange(1 << 32)
        passed, line = run_once(seed)
        failed += not passed
        print(f"run {i + 1}/{runs}: {line}", flush=True)
    print(f"{runs - failed} of {runs} runs passed", flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
