"""Issues 35 and 44's goals in one command: each row beside robo-goggles and the commit before.

Every figure is a median of ``--repeats`` fresh-process runs, the sides alternating inside each
repeat (this checkout, ``--rev``, robo-goggles), default settings, acknowledgements on, and
delivered/logged printed in every row. A bus goal is also decided in every repeat on its own (the
ratio of the two sides run next to each other in that repeat), and each bus row prints the
producer's worst RSS growth beside its documented bound. Sections (``--only`` picks some):

* ``bus``: ``benchmarks/bus.py`` cells (``bus._run``): settled scalars to a dedicated host and
  in-process, settled 1 MiB images (the call beside ``np.copyto`` into a pre-faulted ring of
  1 MiB slots, the cold-ring memcpy, timed in the same process);
* ``broker``: ``benchmarks/broker.py`` with 4 producer processes and 2 consumers;
* ``workers``: ``benchmarks/workers_vs_rev.py`` (runtime in worker processes vs in-process);
* ``index``: ``benchmarks/index.py`` (``telemetry ui`` indexing one run of ``--points``, for each
  line shape: one metric a line as ``logger.scalar`` writes it, and 10 a line).

The last table holds every goal: the bus goals from the medians (and their worst repeat), the
broker, workers and index goals read from those scripts' own output.

Run: ``python3 benchmarks/limits.py [--rev 41a0e84] [--repeats 5] [--only bus,index]``
(6-15 minutes on a quiet 2-core machine with 5 repeats: 6 on 2026-12-05). Markdown to stdout,
progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import os
import re
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


# The producer's RSS growth over a flood that the tests hold, by workload
# (tests/goggles_io/transport/test_placement_and_subscriptions.py, TestByteBudgets)
PRODUCER_BOUND_MIB = {"scalars": 64.0, "images": 128.0}


def _rate(r: dict[str, Any], workload: str) -> float:
    if workload == "images":
        return float(r["delivered_bytes"]) / 1e9 / float(r["to_last_s"])
    return float(r["delivered"]) / float(r["to_last_s"])


# A goal: (name, this checkout's figure, the commit before's, "<=" or ">=", target,
# the figure in each repeat or None where the script reports medians only)
Goal = tuple[str, float, float, str, float, "list[float] | None"]


def _bus_goals(
    workload: str, ours: str, runs: dict[str, list[dict[str, Any]]], rev: str
) -> list[Goal]:
    """The goals a bus cell decides, from the medians and repeat by repeat."""
    new, base, rg = runs["this checkout"], runs[rev], runs["robo-goggles"]

    def ratio(a: list[dict[str, Any]], b: list[dict[str, Any]], key: str) -> list[float]:
        if key == "rate":
            return [_rate(x, workload) / _rate(y, workload) for x, y in zip(a, b, strict=True)]
        return [float(x[key]) / float(y[key]) for x, y in zip(a, b, strict=True)]

    def med(a: list[dict[str, Any]], b: list[dict[str, Any]], key: str) -> float:
        top = statistics.median(_rate(x, workload) if key == "rate" else float(x[key]) for x in a)
        bottom = statistics.median(
            _rate(y, workload) if key == "rate" else float(y[key]) for y in b
        )
        return top / bottom

    if workload == "scalars" and ours == "goggles_io":
        return [
            ("scalar call / robo-goggles' call", med(new, rg, "median_us"),
             med(base, rg, "median_us"), "<=", 0.15, ratio(new, rg, "median_us")),
            ("settled scalars, dedicated host / robo-goggles'", med(new, rg, "rate"),
             med(base, rg, "rate"), ">=", 10.0, ratio(new, rg, "rate")),
        ]  # fmt: skip
    if workload == "scalars":
        return [("settled scalars, in-process / robo-goggles' in-process", med(new, rg, "rate"),
                 med(base, rg, "rate"), ">=", 3.0, ratio(new, rg, "rate"))]  # fmt: skip
    own = [float(r["median_us"]) / float(r["ring_memcpy_median_us"]) for r in new]
    old = [float(r["median_us"]) / float(r["ring_memcpy_median_us"]) for r in base]
    return [
        ("1 MiB image call / cold-ring memcpy", statistics.median(own), statistics.median(old),
         "<=", 2.0, own),
        ("settled image GB/s / robo-goggles'", med(new, rg, "rate"), med(base, rg, "rate"), ">=",
         5.0, ratio(new, rg, "rate")),
    ]  # fmt: skip


def bus_section(rev: str, old: Path, repeats: int) -> tuple[list[str], list[Goal]]:
    """The bus rows: a table of medians and the goals they decide."""
    out = ["## Bus: settled bursts (benchmarks/bus.py cells)", "",
           "| cell | side | events/s or GB/s to last | call median (us) | ring memcpy (us) "
           "| delivered/logged (worst) | producer growth, worst (MiB) | bound (MiB) |",
           "|---|---|---:|---:|---:|---:|---:|---:|"]  # fmt: skip
    goals: list[Goal] = []
    for label, workload, n, ours, theirs in _BUS_CELLS:
        sides = {"this checkout": (_ROOT, ours), rev: (old, ours), "robo-goggles": (_ROOT, theirs)}
        got: dict[str, list[dict[str, Any]]] = {side: [] for side in sides}
        for repeat in range(repeats):
            order = list(sides.items())
            if repeat % 2:  # alternate which side goes first
                order.reverse()
            for side, (root, peer) in order:
                r = bus_cell(root, peer, workload, n)
                got[side].append(r)
                print(f"# bus {label} {repeat} {side}: rate {_rate(r, workload):,.2f} "
                      f"call {r['median_us']:.2f} us", file=sys.stderr, flush=True)  # fmt: skip
        for side, runs in got.items():
            rate = statistics.median(_rate(r, workload) for r in runs)
            call = statistics.median(float(r["median_us"]) for r in runs)
            ring = statistics.median(float(r.get("ring_memcpy_median_us", 0)) for r in runs)
            worst = min(int(r["delivered"]) for r in runs)
            growth = max(float(r.get("producer_growth_mib", float("nan"))) for r in runs)
            bound = PRODUCER_BOUND_MIB[workload]  # ours; robo-goggles promises none
            held = "" if growth < bound or side == "robo-goggles" else " **over the bound**"
            bound_cell = "–" if side == "robo-goggles" else f"< {bound:.0f}"
            ring_cell = f"{ring:.1f}" if workload == "images" else "–"
            rate_cell = f"{rate:,.0f}" if workload == "scalars" else f"{rate:.2f}"
            out.append(f"| {label} | {side} | {rate_cell} | {call:.2f} | {ring_cell} "
                       f"| {worst:,}/{n:,} | {growth:.1f}{held} | {bound_cell} |")  # fmt: skip
        goals += _bus_goals(workload, ours, got, rev)
    return out, goals


def script_section(title: str, argv: list[str]) -> tuple[list[str], str]:
    """Run another benchmark script as written and keep its markdown (and its raw stdout)."""
    print(f"# running {' '.join(argv)}", file=sys.stderr, flush=True)
    done = subprocess.run(
        [sys.executable, *argv], cwd=_HERE, capture_output=True, text=True, timeout=3600
    )
    sys.stderr.write(done.stderr[-3000:])
    text = done.stdout.strip()
    return [f"## {title}", "", f"`python3 benchmarks/{' '.join(argv)}`", "", text], text


def _number(cell: str) -> float:
    """``'205,755'`` -> 205755.0, ``'0.86x'`` -> 0.86, ``'1.94 M'`` -> 1940000.0."""
    cell = cell.strip().strip("*").replace(",", "")
    scale = 1e6 if cell.endswith(" M") else 1.0
    return float(cell.removesuffix(" M").removesuffix("x")) * scale


def broker_goals(text: str, rev: str) -> list[Goal]:
    """The broker's goals from ``broker.py``'s summary lines (one per side)."""
    found: dict[str, tuple[float, float]] = {}
    for m in re.finditer(r"^- (.+?): end to end through Redis \*\*([\d,.]+) events/s\*\*, "
                         r"producer cost broker on / off \*\*([\d.]+)x\*\*", text, re.M):  # fmt: skip
        found[m.group(1)] = (_number(m.group(2)), _number(m.group(3)))
    nan = (float("nan"), float("nan"))
    new, base = found.get("this checkout", nan), found.get(rev, nan)
    return [
        ("broker end to end, 4 producers / 2 consumers (events/s)", new[0], base[0], ">=",
         500_000.0, None),
        ("broker producer cost, on / off", new[1], base[1], "<=", 1.2, None),
    ]  # fmt: skip


def workers_goals(text: str, rev: str) -> list[Goal]:
    """Runtime in 1 and 2 workers / in-process, from ``workers_vs_rev.py``'s table."""
    rows: dict[tuple[str, str], float] = {}
    for m in re.finditer(r"^\| (.+?) \| (\d+ workers) \| [\d,]+ \| ([\d.]+)x \|", text, re.M):
        rows[(m.group(1), m.group(2))] = _number(m.group(3))
    nan = float("nan")
    return [(f"runtime in {k} / in-process", rows.get(("this checkout", k), nan),
             rows.get((rev, k), nan), ">=", 1.0, None) for k in ("1 workers", "2 workers")]  # fmt: skip


def index_goals(text: str, rev: str) -> list[Goal]:
    """Points/s served for each line shape, from ``index.py``'s tables: counted from the server's
    process start, for a run whose sink kept its columns and for the text alone (a run written
    by another tool), each beside ``rev`` reading the text."""
    goals: list[Goal] = []
    row = re.compile(r"^\| (.+?) \| [\d.]+ \| ([\d.]+ M) \| [\d.]+ \| \**([\d.]+ M)\** \|", re.M)
    for block in re.split(r"^(?=# [\d,]+ points)", text, flags=re.M)[1:]:
        shape = "one metric a line" if "one metric a line" in block.split("\n")[0] else "10 a line"
        start = {m.group(1): _number(m.group(2)) for m in row.finditer(block)}
        nan = float("nan")
        base = start.get(rev, nan)
        goals += [
            (f"index served from start, {shape}, columns the sink kept (points/s)",
             start.get("this checkout", nan), base, ">=", 5e6, None),
            (f"index served from start, {shape}, text only (points/s)",
             start.get("this checkout, text only", nan), base, ">=", 5e6, None),
        ]  # fmt: skip
    return goals


def _figure(x: float, target: float) -> str:
    if x != x:
        return "n/a"
    return f"{x:,.0f}" if target >= 1000 else f"{x:.2f}x"


def goals_table(goals: list[Goal], rev: str, repeats: int) -> list[str]:
    """Every goal: medians, each repeat where known, and whether it holds in every repeat."""
    out = ["## Every goal", "",
           f"| goal | this checkout | {rev} | target | met (median) | each repeat (this checkout) "
           "| met in every repeat |", "|---|---:|---:|---:|---|---|---|"]  # fmt: skip
    for name, new, base, how, target, each in goals:

        def holds(x: float, how: str = how, target: float = target) -> bool:
            return x <= target if how == "<=" else x >= target

        every = "–" if each is None else ("yes" if all(holds(x) for x in each) else "no")
        each_cell = "–" if each is None else ", ".join(_figure(x, target) for x in each)
        want = f"{how} {target:,.0f}" if target >= 1000 else f"{how} {target:g}x"
        out.append(f"| {name} | {_figure(new, target)} | {_figure(base, target)} | {want} | "
                   f"{'yes' if holds(new) else 'no'} | {each_cell} | {every} |")  # fmt: skip
    out += ["", f"Medians of {repeats} fresh-process runs; a repeat's ratio divides the two sides "
            "run next to each other in that repeat."]  # fmt: skip
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="41a0e84", help="the commit before (default: issue 35's)")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--points", type=int, default=2_000_000, help="the index section's run")
    parser.add_argument("--only", default="bus,broker,workers,index")
    args = parser.parse_args()
    only = set(args.only.split(","))
    lines: list[str] = [f"# Issue 35 and 44 limits: this checkout beside {args.rev} and "
                        f"robo-goggles, medians of {args.repeats} fresh-process runs", ""]  # fmt: skip
    goals: list[Goal] = []
    with tempfile.TemporaryDirectory(prefix="limits-") as tmp:
        old = unpack(args.rev, Path(tmp) / "old", ("src", "benchmarks"))
        if "bus" in only:
            section, found = bus_section(args.rev, old, args.repeats)
            lines += [*section, ""]
            goals += found
    repeats = str(args.repeats)
    if "broker" in only:
        section, text = script_section("Broker, 4 producers and 2 consumers",
                                       ["broker.py", "--producers", "4", "--consumers", "2",
                                        "--repeats", repeats, "--rev", args.rev])  # fmt: skip
        lines += [*section, ""]
        goals += broker_goals(text, args.rev)
    if "workers" in only:
        section, text = script_section("Runtime in worker processes",
                                       ["workers_vs_rev.py", "--rev", args.rev,
                                        "--repeats", repeats])  # fmt: skip
        lines += [*section, ""]
        goals += workers_goals(text, args.rev)
    if "index" in only:
        section, text = script_section("Dashboard index of one run, each line shape",
                                       ["index.py", "--points", str(args.points),
                                        "--shape", "one,many", "--repeats", repeats,
                                        "--rev", args.rev])  # fmt: skip
        lines += [*section, ""]
        goals += index_goals(text, args.rev)
    if goals:
        lines += goals_table(goals, args.rev, args.repeats)
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
