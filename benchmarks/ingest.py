"""Collector ingest through ``RemoteHandler``: points/s with 1 and 4 producer processes.

Run: ``python3 benchmarks/ingest.py [--points 100000] [--repeats 3] [--burst-only]``

A collector runs in its own process (SQLite file in a temp dir), and 1 or 4 producer processes
each log ``--points`` scalars through a ``RemoteHandler`` with its default batch size, then
``close()`` it. The clock runs from releasing the producers until the collector holds every
point; the script then checks that every point is stored exactly once (count, no gaps, every
``seq`` 1..N present once: the table's primary key). The queue is made big enough that nothing
is refused, so the figure is the collector's ingest rate, not the handler's refusal policy.

"new" is this checkout's handler and collector; "old" is both as of the commit given by
``--old-rev`` (default: the one before issue 15: headers and body in two writes without
``TCP_NODELAY``, one request per 200-point batch), unpacked from git into a temp dir. The old
side logs ``--old-points`` per producer (its rate does not depend on it, and it is slow). The
sides run alternately, so machine noise hits them alike. Target: >= 100,000 points/s with 4
producers.

The defaults burst (also alone with ``--burst-only``): 4 producers log 50,000 points each as fast
as they can through a ``RemoteHandler`` with its default settings (no queue raised by hand),
then ``close()``; the row says how many points were stored (target 200,000/200,000), refused
or spilled, and how long the producers' logging loop and the whole burst took.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

TARGET = 100_000
_ROOT = Path(__file__).resolve().parent.parent

_COLLECTOR = """
import sys
try:
    from goggles_io.server import Collector
except ImportError:  # the old side: before goggles_io.server existed
    from goggles_io.collector import Collector
c = Collector(db_path=sys.argv[1], port=0).start()
print(c.port, flush=True)
sys.stdin.read()
c.close()
"""

_BURST = """
import json, sys, time
from goggles_io.handlers.remote import RemoteHandler
url, run_id, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
h = RemoteHandler(server_url=url, run_id=run_id, read_env=False, enabled=True)  # defaults
h.register()
sys.stdin.readline()
t0 = time.perf_counter()
for i in range(n):
    h.log_scalar("loss", i * 0.5, step=i)
loop_s = time.perf_counter() - t0
queued = h.stats()["queued"]
h.close()
print(json.dumps({**h.stats(), "loop_s": loop_s, "queued_after_loop": queued}), flush=True)
"""

_PRODUCER = """
import json, sys
from goggles_io.handlers.remote import RemoteHandler
url, run_id, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
h = RemoteHandler(server_url=url, run_id=run_id, queue_batches=1_000_000, close_timeout_s=600.0,
                  read_env=False, enabled=True)
h.register()
sys.stdin.readline()  # the start signal
for i in range(n):
    h.log_scalar("loss", i * 0.5, step=i)
h.close()
print(json.dumps(h.stats()), flush=True)
"""


def _old_tree(rev: str, into: Path) -> str:
    """``rev``'s ``src`` directory unpacked from git; its ``goggles_io`` is the old side."""
    into.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(_ROOT), "archive", rev, "src/goggles_io"],
        capture_output=True,
        check=True,
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)
    return str(into / "src")


def _runs(url: str) -> list[dict]:
    with urllib.request.urlopen(f"{url}/runs", timeout=30) as reply:
        return json.loads(reply.read())["runs"]


@contextlib.contextmanager
def _trial(
    code: str, producers: int, points: int, workdir: Path, env: dict[str, str]
) -> Iterator[tuple[str, list[subprocess.Popen[str]]]]:
    """A collector process and ``producers`` processes running ``code``, all registered."""
    db = workdir / f"collector-{time.monotonic_ns()}.sqlite"
    server = subprocess.Popen(
        [sys.executable, "-c", _COLLECTOR, str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert server.stdout is not None
        url = f"http://127.0.0.1:{int(server.stdout.readline())}"
        procs = [
            subprocess.Popen(
                [sys.executable, "-c", code, url, f"p{i}", str(points)],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,  # each prints its tally at close()
                text=True,
                env=env,
            )
            for i in range(producers)
        ]
        while len(_runs(url)) < producers:  # every producer imported and registered
            time.sleep(0.01)
        yield url, procs
    finally:
        if server.stdin is not None:
            server.stdin.close()
        server.wait(timeout=60)


def _release(procs: list[subprocess.Popen[str]]) -> float:
    """Tell every producer to start; return the clock at that moment."""
    t0 = time.perf_counter()
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    return t0


def measure(side_src: str, producers: int, points: int, workdir: Path) -> float:
    """Points/s for one trial; raises when anything is missing or duplicated.

    ``side_src``: a ``src`` directory put first on the path of every process ("" for this
    checkout's).
    """
    path = [side_src, *sys.path] if side_src else sys.path
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(path)}
    with _trial(_PRODUCER, producers, points, workdir, env) as (url, procs):
        t0 = _release(procs)
        total = producers * points
        while sum(r["points"] for r in _runs(url)) < total:
            time.sleep(0.002)
        elapsed = time.perf_counter() - t0
        for proc in procs:
            out, _ = proc.communicate(timeout=600)
            stats = json.loads(out.strip().splitlines()[-1])
            if stats["refused_points"] or stats["lost_points"] or stats["rejected_points"]:
                raise AssertionError(f"producer lost points: {stats}")
        for run in _runs(url):
            if (run["points"], run["last_seq"], run["gaps"]) != (points, points, 0):
                raise AssertionError(f"run {run['run_id']} not stored exactly once: {run}")
        return total / elapsed


def burst_with_defaults(producers: int, points: int, workdir: Path) -> dict[str, float]:
    """The defaults burst: stored/refused/spilled points and its timings."""
    with _trial(_BURST, producers, points, workdir, dict(os.environ)) as (url, procs):
        t0 = _release(procs)
        stats = [
            json.loads(proc.communicate(timeout=600)[0].strip().splitlines()[-1]) for proc in procs
        ]
        elapsed = time.perf_counter() - t0
        return {
            "stored": sum(r["points"] for r in _runs(url)),
            "logged": producers * points,
            "refused": sum(s["refused_points"] for s in stats),
            "queued_after_loop": sum(s["queued_after_loop"] for s in stats),
            "loop_s": max(s["loop_s"] for s in stats),
            "elapsed_s": elapsed,
        }


def _print_burst(rows: list[dict[str, float]]) -> bool:
    print("# defaults burst: 4 producers x 50,000 points, RemoteHandler defaults, close() after")
    print(f"{'run':>3} {'stored/logged':>17} {'refused':>8} {'queued after loop':>18} "
          f"{'logging loop (s)':>17} {'burst to stored (s)':>20}")  # fmt: skip
    for i, r in enumerate(rows):
        print(f"{i:>3} {int(r['stored']):>8,}/{int(r['logged']):<8,} {int(r['refused']):>8,} "
              f"{int(r['queued_after_loop']):>18,} {r['loop_s']:>17.2f} {r['elapsed_s']:>20.2f}")  # fmt: skip
    ok = all(r["stored"] == r["logged"] and r["refused"] == 0 for r in rows)
    print(("PASS" if ok else "FAIL") + ": every point of the defaults burst stored, none refused")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", type=int, default=100_000, help="points per producer")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--old-points", type=int, default=20_000, help="points per old producer")
    parser.add_argument("--old-rev", default="8a0c351", help="git revision of the old side")
    parser.add_argument("--no-old", action="store_true", help="measure the new side only")
    parser.add_argument("--burst-only", action="store_true", help="only the defaults burst")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="ingest-burst-") as tmp:
        burst = [burst_with_defaults(4, 50_000, Path(tmp)) for _ in range(args.repeats)]
    burst_ok = _print_burst(burst)
    if args.burst_only:
        return 0 if burst_ok else 1
    results: dict[tuple[str, int], list[float]] = {}
    with tempfile.TemporaryDirectory(prefix="ingest-bench-") as tmp:
        work = Path(tmp)
        sides = {"new": ""}  # "": this checkout's goggles_io
        if not args.no_old:
            sides["old"] = _old_tree(args.old_rev, (work / "old").resolve())
        for repeat in range(args.repeats):
            for producers in (1, 4):
                for side, folder in sides.items():
                    n = args.points if side == "new" else args.old_points
                    rate = measure(folder, producers, n, work)
                    results.setdefault((side, producers), []).append(rate)
                    print(f"# repeat {repeat}: {side} x{producers}: {rate:,.0f} points/s",
                          file=sys.stderr)  # fmt: skip
    print(
        f"# collector ingest via RemoteHandler: new {args.points}, old {args.old_points} points/producer"
    )
    print(f"{'side':<6} {'producers':>9} {'median points/s':>16}")
    for (side, producers), rates in sorted(results.items()):
        print(f"{side:<6} {producers:>9} {statistics.median(rates):>16,.0f}")
    for producers in (1, 4):
        if ("old", producers) in results:
            ratio = statistics.median(results[("new", producers)]) / statistics.median(
                results[("old", producers)]
            )
            print(f"new/old with {producers} producer(s): {ratio:.1f}x")
    best4 = statistics.median(results[("new", 4)])
    verdict = "PASS" if best4 >= TARGET else "FAIL"
    print(f"{verdict}: {best4:,.0f} points/s with 4 producers (target >= {TARGET:,}); "
          "every point stored exactly once")  # fmt: skip
    return 0 if best4 >= TARGET and burst_ok else 1


if __name__ == "__main__":
    sys.exit(main())
