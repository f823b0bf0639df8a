"""One ``benchmarks/bus.py`` cell, this checkout beside an older revision and robo-goggles.

Run: ``python3 benchmarks/bus_vs_rev.py [--rev 57adf6a] [--workload scalars] [--regime settled]
[--n 100000] [--repeats 5]``

For a "no regression" claim measured side by side: the three sides run alternately in fresh
processes (``bus._run``, so each cell is exactly a ``bus.py`` cell), the old side being ``--rev``'s
``src`` and ``benchmarks`` unpacked from git into a temp dir. Prints each run and the medians:
events/s (or GB/s) to the last event delivered (and, cold, timed from before ``attach``), the
log call's median, the producer's peak RSS growth over the burst, ``finish()``, and the ratios.
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
_CELL = r"""
import json, sys
import bus
r = bus._run(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]))
key, scale = ("delivered_bytes", 1e-9) if sys.argv[3] == "images" else ("delivered", 1.0)
print("RESULT", json.dumps({"rate": r[key] * scale / r["to_last_s"], "median_us": r["median_us"],
                            "attach_rate": r[key] * scale / r["attach_to_last_s"],
                            "growth_mib": r["producer_growth_mib"], "finish_ms": r["finish_ms"],
                            "delivered": r["delivered"]}))
"""


def _cell(root: Path, peer: str, args: argparse.Namespace) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": f"{root / 'src'}{os.pathsep}{root / 'benchmarks'}"}
    cmd = [sys.executable, "-c", _CELL, peer, args.regime, args.workload, str(args.n)]
    done = subprocess.run(cmd, env=env, cwd=root / "benchmarks", capture_output=True, text=True)
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"{peer} at {root} failed:\n{done.stderr[-2000:]}")
    return json.loads(lines[-1][7:])  # type: ignore[no-any-return]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rev", default="57adf6a")
    parser.add_argument("--workload", default="scalars", choices=("scalars", "images"))
    parser.add_argument("--regime", default="settled", choices=("cold", "settled"))
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bus-vs-rev-") as tmp:
        old = unpack(args.rev, Path(tmp) / "old", ("src", "benchmarks"))
        sides = {"this checkout": (_ROOT, "goggles_io"), args.rev: (old, "goggles_io")}
        sides["robo-goggles"] = (_ROOT, "robo-goggles")
        got: dict[str, list[dict[str, float]]] = {side: [] for side in sides}
        for repeat in range(args.repeats):
            for side, (root, peer) in sides.items():
                r = _cell(root, peer, args)
                got[side].append(r)
                print(f"# {repeat} {side}: {r}", file=sys.stderr, flush=True)
    unit = "GB/s" if args.workload == "images" else "events/s"
    keys = ("rate", "attach_rate", "median_us", "growth_mib", "finish_ms")
    med = {s: {k: statistics.median(r[k] for r in rs) for k in keys} for s, rs in got.items()}
    print(f"# bus.py {args.workload} {args.regime}, n={args.n:,}, median of {args.repeats} runs")
    print(f"{'side':<16} {unit + ' to last':>18} {'from attach':>12} {'call median (us)':>17} "
          f"{'growth (MiB)':>13} {'finish (ms)':>12} {'delivered (min)':>16}")  # fmt: skip
    for side, m in med.items():
        low = min(int(r["delivered"]) for r in got[side])
        print(f"{side:<16} {m['rate']:>18,.2f} {m['attach_rate']:>12,.2f} {m['median_us']:>17.2f} "
              f"{m['growth_mib']:>13.2f} {m['finish_ms']:>12.1f} {low:>16,}")  # fmt: skip
    new, base, rg = med["this checkout"], med[args.rev], med["robo-goggles"]

    def ratio(a: dict[str, float], b: dict[str, float], k: str) -> str:
        return f"{a[k] / b[k]:.2f}x" if b[k] else "n/a"

    print(f"this checkout / {args.rev}: throughput {ratio(new, base, 'rate')}, from attach "
          f"{ratio(new, base, 'attach_rate')}, call {ratio(new, base, 'median_us')}, "
          f"growth {new['growth_mib'] - base['growth_mib']:+.2f} MiB")  # fmt: skip
    print(f"vs robo-goggles: this checkout throughput {ratio(new, rg, 'rate')}, call "
          f"{ratio(new, rg, 'median_us')}; {args.rev} throughput {ratio(base, rg, 'rate')}, "
          f"call {ratio(base, rg, 'median_us')}")  # fmt: skip


if __name__ == "__main__":
    main()
