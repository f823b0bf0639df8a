"""The two settled-scalar cells of ``limits.py`` alone, with the ratio of every repeat.

Issue 44 asks the dedicated-host cell for >= 10x robo-goggles' in every repeat, not only in the
median; ``limits.py`` prints medians. This runs ``limits.bus_cell`` for "scalars, dedicated
host" and "scalars, in-process", sides alternating inside each repeat (this checkout,
``--rev``, robo-goggles), fresh processes each, and prints each repeat's rates and ratios, then
the medians.

Run: ``python3 benchmarks/scalar_cells.py [--rev 21bf96d] [--repeats 3] [--only host,inprocess]``
(about 30 s a repeat on 2 cores). Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from _revision import unpack
from limits import bus_cell

_ROOT = Path(__file__).resolve().parent.parent
_CELLS = {
    "host": ("scalars, dedicated host", "goggles_io", "robo-goggles"),
    "inprocess": ("scalars, in-process", "goggles_io-inprocess", "robo-goggles-inprocess"),
}
_N = 100_000


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="21bf96d")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--only", default="host,inprocess")
    args = parser.parse_args()
    lines = ["| cell | repeat | this checkout | " + args.rev + " | robo-goggles "
             "| this / rg | " + args.rev + " / rg | delivered (this, rev, rg) |",
             "|---|---:|---:|---:|---:|---:|---:|---|"]  # fmt: skip
    with tempfile.TemporaryDirectory(prefix="cells-") as tmp:
        old = unpack(args.rev, Path(tmp) / "old", ("src", "benchmarks"))
        for cell in args.only.split(","):
            label, ours, theirs = _CELLS[cell]
            sides = ((_ROOT, ours), (old, ours), (_ROOT, theirs))
            rates: list[list[float]] = [[], [], []]
            for repeat in range(args.repeats):
                got = []
                for root, peer in sides:
                    r = bus_cell(root, peer, "scalars", _N)
                    got.append((float(r["delivered"]) / float(r["to_last_s"]), int(r["delivered"])))
                    print(f"# {label} {repeat} {peer} at {root}: {got[-1][0]:,.0f}/s",
                          file=sys.stderr, flush=True)  # fmt: skip
                for side, (rate, _) in enumerate(got):
                    rates[side].append(rate)
                this, base, rg = (rate for rate, _ in got)
                delivered = ", ".join(f"{n:,}" for _, n in got)
                lines.append(f"| {label} | {repeat} | {this:,.0f} | {base:,.0f} | {rg:,.0f} "
                             f"| {this / rg:.2f}x | {base / rg:.2f}x | {delivered} |")  # fmt: skip
            med = [statistics.median(side) for side in rates]
            lines.append(f"| {label} | median | {med[0]:,.0f} | {med[1]:,.0f} | {med[2]:,.0f} "
                         f"| {med[0] / med[2]:.2f}x | {med[1] / med[2]:.2f}x | |")  # fmt: skip
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
