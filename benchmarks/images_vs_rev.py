"""The "1 MiB images, dedicated host" cell of ``limits.py`` alone: this checkout, ``--rev``,
robo-goggles, alternating in fresh processes (``limits.bus_cell``), medians and the two goals.

Run: ``python3 benchmarks/images_vs_rev.py [--rev 21bf96d] [--repeats 3] [--n 200]``
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
from pathlib import Path

from _revision import unpack
from limits import _ROOT, _rate, bus_cell


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="21bf96d")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="images-vs-rev-") as tmp:
        old = unpack(args.rev, Path(tmp) / "old", ("src", "benchmarks"))
        sides = {
            "this checkout": (_ROOT, "goggles_io"),
            args.rev: (old, "goggles_io"),
            "robo-goggles": (_ROOT, "robo-goggles"),
        }
        got: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
        for repeat in range(args.repeats):
            for side, (root, peer) in sides.items():
                r = bus_cell(root, peer, "images", args.n)
                got[side].append(r)
                print(f"# {repeat} {side}: {_rate(r, 'images'):.2f} GB/s, call "
                      f"{r['median_us']:.1f} us, ring {r['ring_memcpy_median_us']:.1f} us, "
                      f"{r['delivered']}/{args.n}", file=sys.stderr, flush=True)  # fmt: skip
    med = {
        side: {
            "rate": statistics.median(_rate(r, "images") for r in runs),
            "call": statistics.median(float(r["median_us"]) for r in runs),
            "ring": statistics.median(float(r["ring_memcpy_median_us"]) for r in runs),
            "worst": min(int(r["delivered"]) for r in runs),
        }
        for side, runs in got.items()
    }
    print(f"# 1 MiB images, dedicated host, settled; median of {args.repeats}")
    print("| side | GB/s to last | call median (us) | ring memcpy (us) | call / ring "
          "| delivered (worst) |\n|---|---:|---:|---:|---:|---:|")  # fmt: skip
    for side, m in med.items():
        print(f"| {side} | {m['rate']:.2f} | {m['call']:.1f} | {m['ring']:.1f} "
              f"| {m['call'] / m['ring']:.2f} | {m['worst']}/{args.n} |")  # fmt: skip
    rg = med["robo-goggles"]["rate"]
    for side in (s for s in med if s != "robo-goggles"):
        print(
            f"- {side}: GB/s / robo-goggles' {med[side]['rate'] / rg:.2f}x (goal >= 5x), "
            f"call / ring {med[side]['call'] / med[side]['ring']:.2f}x (goal <= 2x)"
        )


if __name__ == "__main__":
    main()
