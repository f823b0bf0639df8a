"""The demo's runtime keeps bounded memory: episodes/s and event sizes at 3 and many epochs.

Run: ``python3 benchmarks/demo_scaling.py [--epochs 3 300]``

Each size runs ``telemetry demo`` (``run_demo``, no W&B) into a temp directory, times it, and
reads back the run's runtime event log: episodes/s, the largest ``learning_module_step`` line
and the log's size. Target: episodes/s at the largest size within 1.5x of the smallest, and the
largest line not growing with the number of epochs.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

from experiment_telemetry.demo.experiment import run_demo
from experiment_telemetry.recorder import RUNTIME_EVENTS_FILE

TARGET_RATIO = 1.5


def measure(epochs: int) -> tuple[float, int, int]:
    """(episodes/s, largest learning_module_step line in bytes, event log bytes)."""
    with tempfile.TemporaryDirectory(prefix="demo-scaling-") as root:
        quiet = io.StringIO()
        t0 = time.perf_counter()
        with contextlib.redirect_stdout(quiet), contextlib.redirect_stderr(quiet):
            result = run_demo(root, seed=0, num_epochs=epochs, wandb=False)
        elapsed = time.perf_counter() - t0
        log = Path(result.run_dir) / RUNTIME_EVENTS_FILE
        episodes = widest = 0
        with open(log, "rb") as handle:
            for line in handle:
                if line.startswith(b'{"kind":"learning_module_step"'):
                    widest = max(widest, len(line))
                elif line.startswith(b'{"kind":"episode_context"'):
                    episodes += 1
        return episodes / elapsed, widest, log.stat().st_size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, nargs="+", default=[3, 300])
    args = parser.parse_args()
    rows = [(n, *measure(n)) for n in args.epochs]
    print(f"{'epochs':>7} {'episodes/s':>11} {'widest lm_step line':>20} {'event log':>12}")
    for epochs, rate, widest, size in rows:
        print(f"{epochs:>7} {rate:>11.0f} {widest:>18} B {size / 1e6:>9.1f} MB")
    ratio = rows[0][1] / rows[-1][1]
    ok = ratio <= TARGET_RATIO
    print(f"{'PASS' if ok else 'FAIL'}: episodes/s {rows[0][0]} epochs / {rows[-1][0]} epochs = "
          f"{ratio:.2f}x (target <= {TARGET_RATIO}x)")  # fmt: skip
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
