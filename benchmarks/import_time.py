"""Import cost of our packages next to robo-goggles and stdlib logging, in fresh interpreters.

The issue target: ``import goggles_io`` < 150 ms, without jax or matplotlib. Measured with
``python -X importtime`` (cumulative microseconds of the top-level module), median and min of
``--repeats`` fresh interpreters per module, modules interleaved so load hits them alike.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys

MODULES = ("goggles_io", "runtime_telemetry", "experiment_telemetry", "goggles", "logging")


def import_ms(module: str) -> float | None:
    """Cumulative import time of ``module`` in a fresh interpreter, or None if not installed."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        check=False,
    )
    if proc.returncode != 0:
        return None
    for line in proc.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[2].strip() == module:
            return int(parts[1]) / 1000
    return None


def heavy_imports(module: str) -> list[str]:
    """Which of jax / matplotlib / wandb importing ``module`` pulls in."""
    code = (
        f"import sys, {module}; "
        "print(','.join(m for m in ('jax', 'matplotlib', 'wandb') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    return [m for m in out.stdout.strip().split(",") if m]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    args = parser.parse_args()
    samples: dict[str, list[float]] = {m: [] for m in MODULES}
    for _ in range(args.repeats):
        for module in MODULES:
            ms = import_ms(module)
            if ms is not None:
                samples[module].append(ms)
    print(
        f"{args.repeats} fresh interpreters per module, interleaved; Python {sys.version.split()[0]}"
    )
    print()
    print("| module | median ms | min ms | pulls in jax/matplotlib/wandb |")
    print("|---|---:|---:|---|")
    for module, values in samples.items():
        if not values:
            print(f"| {module} | n/a | n/a | not installed |")
            continue
        heavy = ", ".join(heavy_imports(module)) or "none"
        print(f"| {module} | {statistics.median(values):.1f} | {min(values):.1f} | {heavy} |")
    ours = samples["goggles_io"]
    verdict = "met" if ours and statistics.median(ours) < 150 else "MISSED"
    print()
    print(f"target: import goggles_io median < 150 ms -> {verdict}")


if __name__ == "__main__":
    main()
