"""One broker consumer reading a backlog: its reading thread's CPU per event, side by side.

Run: ``python3 benchmarks/broker_backlog.py [--events 300000] [--rev b7e600f] [--repeats 3]
[--callgrind]``

Starts its own ``redis-server``. Each run, in a fresh process: fills a stream with ``--events``
``scalar`` events as the forwarder sends them (client batches of 1,024, each an entry of its
own, ADR 0079), then one :class:`BrokerConsumer` with the broker benchmark's counting handler
reads them all. Measured: the reading thread's CPU (``pthread_getcpuclockid``, which other
load on the machine does not move) per event, and the cyclic collector's collections. The
sides (this checkout, ``--rev``'s ``src``) alternate. ``--callgrind`` also counts the
instructions of a consumer process (filled by another process) under valgrind at two backlog
sizes and prints the difference per event: start-up and imports cancel out.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _revision import unpack

_ROOT = Path(__file__).resolve().parents[1]

_FILL = r"""
import os, sys
os.environ["GOGGLES_TRANSPORT"] = "inprocess"
import redis
import goggles_io as gg
from goggles_io._event.codec import Batch, Encoder
from goggles_io._event.rows import row_of
url, run, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
kept = []
class Keep(gg.BaseHandler):
    def handle_batch(self, events):
        kept.extend(events)
    def handle(self, event):
        kept.append(event)
gg.attach(Keep(name="keep"), scopes=["*"])
log = gg.get_logger("bench", with_metrics=True)
for i in range(1024):
    log.scalar("x", float(i), step=i)
gg.flush(30)
# as a log call builds them: a one-value metric's row holds its name and value (rows.py)
rows = [(*r[:2], "x", *r[3:12], float(i), "", 0)
        for i, r in enumerate(map(row_of, kept[:1024]))]
enc = Encoder()
client = redis.Redis.from_url(url)
pipe = client.pipeline(transaction=False)
for s, at in enumerate(range(0, n, 1024), start=1):
    part = rows[: min(1024, n - at)]
    # a forwarded client frame (ADR 0079): the producer numbers the rows
    frame = enc.encode(Batch(s, part, False, "bench-producer", at + 1))
    pipe.xadd(f"goggles_io:{run}", {"p": "host:1:bench", "s": s, "d": frame})
pipe.execute()
"""

_CONSUME = r"""
import gc, json, os, sys, threading, time
url, run, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
import redis  # imported on the reading thread otherwise: its CPU would count
import goggles_io as gg
from goggles_io._broker.consumer import BrokerConsumer
from goggles_io._broker.settings import BrokerSettings
class Count(gg.BaseHandler):
    seen = 0
    def handle_batch(self, events):
        for e in events:
            if e.extra.get("name") is None and "x" in e.payload:
                Count.seen += 1
    def handle(self, event):
        self.handle_batch([event])
collections = [0, 0, 0]
gc.callbacks.append(lambda phase, info: phase == "start" and collections.__setitem__(
    info["generation"], collections[info["generation"]] + 1))
consumer = BrokerConsumer(url, BrokerSettings(url=url, run=run))
t0 = time.perf_counter()
consumer.attach(Count(name="count"), ["*"])
thread = consumer._thread
clock = time.pthread_getcpuclockid(thread.ident)
while Count.seen < n:
    time.sleep(0.002)
cpu = time.clock_gettime(clock)
wall = time.perf_counter() - t0
consumer.finish(timeout_s=10, idle_s=0.05)
print("RESULT", json.dumps({"cpu_us": cpu / n * 1e6, "wall_s": wall, "gc": collections,
                            "seen": Count.seen}))
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(src: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")])
    return env


def _fill(url: str, run: str, n: int, src: Path) -> None:
    subprocess.run([sys.executable, "-c", _FILL, url, run, str(n)], env=_env(src), check=True)


def _consume(url: str, run: str, n: int, src: Path, prefix: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [*prefix, sys.executable, "-c", _CONSUME, url, run, str(n)],
        env=_env(src),
        capture_output=True,
        text=True,
        check=False,
    )
    lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        raise RuntimeError(f"consumer on {src} failed:\n{done.stderr[-2000:]}")
    return json.loads(lines[-1][7:])  # type: ignore[no-any-return]


def _instructions(url: str, run: str, n: int, src: Path, root: Path) -> int:
    out = root / f"callgrind-{run}.out"
    _consume(url, run, n, src, ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"])
    for line in out.read_text().splitlines():
        if line.startswith("totals:") or line.startswith("summary:"):
            return int(line.split()[1])
    raise RuntimeError(f"no totals in {out}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--rev", help="also run this git revision's src, in alternation")
    parser.add_argument("--callgrind", action="store_true", help="also count instructions")
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("redis-server is not installed (apt-get install redis-server)")
    root = Path(tempfile.mkdtemp(prefix="gg-backlog-bench-"))
    srcs = {"this checkout": _ROOT / "src"}
    if args.rev:
        srcs[args.rev] = unpack(args.rev, root / "rev") / "src"
    port = _free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(root)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    time.sleep(0.5)  # a benchmark, not a test: the server is up long before the first XADD
    got: dict[str, list[dict[str, object]]] = {side: [] for side in srcs}
    counted: dict[str, list[float]] = {side: [] for side in srcs}
    try:
        for r in range(args.repeats):
            for i, (side, src) in enumerate(srcs.items()):
                run = f"r{r}s{i}"
                _fill(url, run, args.events, src)
                got[side].append(_consume(url, run, args.events, src, []))
                print(f"# {r} {side}: {got[side][-1]}", file=sys.stderr, flush=True)
                if args.callgrind:
                    small, big = args.events // 3, args.events
                    counts = []
                    for size in (small, big):
                        _fill(url, f"{run}c{size}", size, src)
                        counts.append(_instructions(url, f"{run}c{size}", size, src, root))
                    counted[side].append((counts[1] - counts[0]) / (big - small))
                    print(f"# {r} {side}: {counted[side][-1]:,.0f} instr/event", file=sys.stderr)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(root, ignore_errors=True)
    med = statistics.median
    print(f"# benchmarks/broker_backlog.py --events {args.events:,}, medians of {args.repeats}")
    print(
        "| code | reading thread CPU (µs/event) | collections (young/middle/full) | instr/event |"
    )
    print("|---|---:|---:|---:|")
    for side, runs in got.items():
        cpu = med(float(x["cpu_us"]) for x in runs)  # type: ignore[arg-type]
        gcs = "/".join(str(med(x["gc"][g] for x in runs)) for g in range(3))  # type: ignore[index]
        ins = f"{med(counted[side]):,.0f}" if counted[side] else "-"
        print(f"| {side} | {cpu:.3f} | {gcs} | {ins} |")


if __name__ == "__main__":
    main()
