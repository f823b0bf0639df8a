"""Issue 35's goals in one command: each row side by side with robo-goggles and the commit before.

Every figure is a median of ``--repeats`` fresh-process runs, the sides alternating inside each
repeat (this checkout, ``--rev``, robo-goggles), default settings, acknowledgements on, and
delivered/logged printed in every row. Sections (``--only`` picks some):

* ``bus``: ``benchmarks/bus.py`` cells (``bus._run``): settled scalars to a dedicated host and
  in-process, settled 1 MiB images (the call beside ``np.copyto`` into a pre-faulted ring of
  1 MiB slots, the cold-ring memcpy, timed in the same process);
* ``broker``: ``benchmarks/broker.py`` with 4 producer processes and 2 consumers;
* ``workers``: ``benchmarks/workers_vs_rev.py`` (runtime in worker processes vs in-process);
* ``index``: ``benchmarks/index.py`` (``telemetry ui`` indexing one run of ``--points``).

Run: ``python3 benchmarks/limits.py [--rev 41a0e84] [--repeats 3] [--only bus,index]``
(about 25 minutes on 2 cores). Markdown to stdout, progress to stderr.
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
from typing import Any

from _revision import unpack

_HERE = Path(__file__).resolve().parent
_ROOT = _HERE.parent
_CELL = r"""
import json, sys
import bus
r = bus._run(sys.argv[1], "settled", sys.argv[2], int(sys.argv[3]))
print("RESULT", json.dumps(r, default=str))
"""
# (row, workload, n, this side's peer, robo-goggles' peer)
_BUS_CELLS = (
    ("scalars, dedicated host", "scalars", 100_000, "goggles_io", "robo-goggles"),
    ("scalars, in-process", "scalars", 100_000, "goggles_io-inprocess", "robo-goggles-inprocess"),
    ("1 MiB images, dedicated host", "images", 200, "goggles_io", "robo-goggles"),
)


def bus_cell(root: Path, peer: str, workload: str, n: int) -> dict[str, Any]:
    """One ``bus._run`` in fresh processes from ``root``'s code."""
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root / 'benchmarks'}"}
    done = subprocess.run(
        [sys.executable, "-c", _CELL, peer, workload, str(n)],
        env=env, cwd=root / "benchmarks", capture_output=True, text=True, timeout=900,
    )  # fmt: skip
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"{peer} {workload} at {root} failed:\n{done.stderr[-2000:]}")
    result: dict[str, Any] = json.loads(lines[-1][7:])
    return result


def _rate(r: dict[str, Any], workload: str) -> float:
    if workload == "images":
        return float(r["delivered_bytes"]) / 1e9 / float(r["to_last_s"])
    return float(r["delivered"]) / float(r["to_last_s"])


def bus_section(rev: str, old: Path, repeats: int) -> tuple[list[str], list[tuple[Any, ...]]]:
    """The bus rows: a table of medians and the goals they decide."""
    out = ["## Bus: settled bursts (benchmarks/bus.py cells)", "",
           "| cell | side | events/s or GB/s to last | call median (us) | ring memcpy (us) "
           "| delivered/logged (worst) |", "|---|---|---:|---:|---:|---:|"]  # fmt: skip
    goals: list[tuple[Any, ...]] = []
    for label, workload, n, ours, theirs in _BUS_CELLS:
        sides = {"this checkout": (_ROOT, ours), rev: (old, ours), "robo-goggles": (_ROOT, theirs)}
        got: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for repeat in range(repeats):
            for side, (root, peer) in sides.items():
                r = bus_cell(root, peer, workload, n)
                got[side].append(r)
                print(f"# bus {label} {repeat} {side}: rate {_rate(r, workload):,.2f} "
                      f"call {r['median_us']:.2f} us", file=sys.stderr, flush=True)  # fmt: skip
        med: dict[str, dict[str, float]] = {}
        for side, runs in got.items():
            med[side] = {
                "rate": statistics.median(_rate(r, workload) for r in runs),
                "call": statistics.median(float(r["median_us"]) for r in runs),
                "ring": statistics.median(float(r.get("ring_memcpy_median_us", 0)) for r in runs),
            }
            worst = min(int(r["delivered"]) for r in runs)
            logged = n
            ring = f"{med[side]['ring']:.1f}" if workload == "images" else "–"
            rate = (
                f"{med[side]['rate']:,.0f}" if workload == "scalars" else f"{med[side]['rate']:.2f}"
            )
            out.append(f"| {label} | {side} | {rate} | {med[side]['call']:.2f} | {ring} "
                       f"| {worst:,}/{logged:,} |")  # fmt: skip
        new, base, rg = med["this checkout"], med[rev], med["robo-goggles"]
        if workload == "scalars" and ours == "goggles_io":
            goals.append(("scalar call / robo-goggles' call", new["call"] / rg["call"],
                          base["call"] / rg["call"], "<=", 0.15))  # fmt: skip
            goals.append(("settled scalars, dedicated host / robo-goggles'",
                          new["rate"] / rg["rate"], base["rate"] / rg["rate"], ">=", 10.0))  # fmt: skip
        elif workload == "scalars":
            goals.append(("settled scalars, in-process / robo-goggles' in-process",
                          new["rate"] / rg["rate"], base["rate"] / rg["rate"], ">=", 3.0))  # fmt: skip
        else:
            goals.append(("1 MiB image call / cold-ring memcpy", new["call"] / new["ring"],
                          base["call"] / base["ring"], "<=", 2.0))  # fmt: skip
            goals.append(("settled image GB/s / robo-goggles'", new["rate"] / rg["rate"],
                          base["rate"] / rg["rate"], ">=", 5.0))  # fmt: skip
    return out, goals


def script_section(title: str, argv: list[str]) -> list[str]:
    """Run another benchmark script as written and keep its markdown."""
    print(f"# running {' '.join(argv)}", file=sys.stderr, flush=True)
    done = subprocess.run(
        [sys.executable, *argv], cwd=_HERE, capture_output=True, text=True, timeout=3600
    )
    sys.stderr.write(done.stderr[-3000:])
    return [f"## {title}", "", f"`python3 benchmarks/{' '.join(argv)}`", "", done.stdout.strip()]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="41a0e84", help="the commit before (default: issue 35's)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--points", type=int, default=20_000_000, help="the index section's run")
    parser.add_argument("--only", default="bus,broker,workers,index")
    args = parser.parse_args()
    only = set(args.only.split(","))
    lines: list[str] = [f"# Issue 35 limits: this checkout beside {args.rev} and robo-goggles, "
                        f"medians of {args.repeats} fresh-process runs", ""]  # fmt: skip
    goals: list[tuple[Any, ...]] = []
    with tempfile.TemporaryDirectory(prefix="limits-") as tmp:
        old = unpack(args.rev, Path(tmp) / "old", ("src", "benchmarks"))
        if "bus" in only:
            section, found = bus_section(args.rev, old, args.repeats)
            lines += [*section, ""]
            goals += found
    if "broker" in only:
        lines += [*script_section("Broker, 4 producers and 2 consumers",
                                  ["broker.py", "--producers", "4", "--consumers", "2",
                                   "--repeats", str(args.repeats), "--rev", args.rev]), ""]  # fmt: skip
    if "workers" in only:
        lines += [*script_section("Runtime in worker processes",
                                  ["workers_vs_rev.py", "--rev", args.rev,
                                   "--repeats", str(args.repeats)]), ""]  # fmt: skip
    if "index" in only:
        lines += [*script_section("Dashboard index of one run",
                                  ["index.py", "--points", str(args.points),
                                   "--repeats", str(args.repeats), "--rev", args.rev]), ""]  # fmt: skip
    if goals:
        lines += ["## Goals decided by the bus rows", "",
                  f"| goal | this checkout | {args.rev} | target | met |", "|---|---:|---:|---:|---|"]  # fmt: skip
        for name, new, base, how, target in goals:
            met = new <= target if how == "<=" else new >= target
            lines.append(f"| {name} | {new:.2f}x | {base:.2f}x | {how} {target:g}x | "
                         f"{'yes' if met else 'no'} |")  # fmt: skip
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
