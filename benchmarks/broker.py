"""Events across machines through Redis Streams, side by side with the broker off.

Starts its own ``redis-server`` on a free loopback port. Measured, in fresh processes:

* end to end: one producer "machine" (its own socket and host, ``GOGGLES_BROKER`` set) logs
  ``--events`` scalars; a consumer process (``attach(..., from_broker=True)``) counts them.
  Throughput = events / (the consumer saw the last one - the producer's first call), wall clock
  across processes; ``finish()`` is not inside it.
* the producer's per-call cost (median and p99 of ``scalar``) with the broker on and off: the
  forwarder runs in the host, so the log call should not notice it.

Run: ``python3 benchmarks/broker.py [--events 200000] [--repeats 3]``
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

_PRODUCER = r"""
import json, sys, time
import goggles_io as gg
n = int(sys.argv[1])
log = gg.get_logger("bench", with_metrics=True)
for i in range(2000):
    log.scalar("warm", 0.0, step=i)
gg.flush(60)
costs = []
clock = time.perf_counter_ns
start = time.time()
for i in range(n):
    t0 = clock()
    log.scalar("x", float(i), step=i)
    costs.append(clock() - t0)
t0 = time.perf_counter()
report = gg.finish(timeout=120)
costs.sort()
print(json.dumps({"start": start, "median_us": costs[n // 2] / 1e3,
                  "p99_us": costs[int(n * 0.99)] / 1e3, "finish_s": time.perf_counter() - t0,
                  "dropped": report.dropped, "lost": report.lost}))
"""

_CONSUMER = r"""
import json, sys, time
import goggles_io as gg
n = int(sys.argv[1])
class Count(gg.BaseHandler):
    seen = 0
    last = 0.0
    def handle_batch(self, events):
        for e in events:
            if e.extra.get("name") is None and "x" in e.payload:
                Count.seen += 1
        Count.last = time.time()
    def handle(self, event):
        self.handle_batch([event])
gg.attach(Count(name="count"), scopes=["*"], from_broker=True)
print("ready", flush=True)
deadline = time.monotonic() + 300
while Count.seen < n and time.monotonic() < deadline:
    time.sleep(0.002)
print(json.dumps({"seen": Count.seen, "last": Count.last}), flush=True)
gg.finish(timeout=10)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(root: Path, machine: str, broker: str | None, run: str) -> dict[str, str]:
    sock = root / machine
    sock.mkdir(exist_ok=True, mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    env.update(GOGGLES_SOCKET=str(sock / "bus.sock"), GOGGLES_HOST_IDLE_TIMEOUT="0.5")
    src = Path(__file__).resolve().parents[1] / "src"
    env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")])
    if broker:
        env.update(GOGGLES_BROKER=broker, GOGGLES_BROKER_RUN=run)
    return env


def _once(root: Path, broker: str | None, n: int, run: str) -> dict[str, float]:
    consumer = None
    if broker:
        consumer = subprocess.Popen(
            [sys.executable, "-c", _CONSUMER, str(n)],
            env=_env(root, "consumer", broker, run), stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        assert consumer.stdout is not None and consumer.stdout.readline() == "ready\n"
    prod = subprocess.run(
        [sys.executable, "-c", _PRODUCER, str(n)],
        env=_env(root, "producer", broker, run), capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    got = json.loads(prod.stdout.strip().splitlines()[-1])
    if consumer is not None:
        out, _ = consumer.communicate(timeout=600)
        seen = json.loads(out.strip().splitlines()[-1])
        got["events_per_s"] = seen["seen"] / max(seen["last"] - got["start"], 1e-9)
        got["seen"] = seen["seen"]
    return got


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("redis-server is not installed (apt-get install redis-server)")
    root = Path(tempfile.mkdtemp(prefix="gg-broker-bench-"))
    port = _free_port()
    server = subprocess.Popen(
        ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
         "--appendonly", "no", "--dir", str(root)],
        stdout=subprocess.DEVNULL,
    )  # fmt: skip
    url = f"redis://127.0.0.1:{port}/0"
    time.sleep(0.5)  # a benchmark, not a test: the server is up long before the first XADD
    try:
        on, off = [], []
        for r in range(args.repeats):
            off.append(_once(root, None, args.events, f"off{r}"))
            on.append(_once(root, url, args.events, f"on{r}"))
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(root, ignore_errors=True)
    med = statistics.median
    e2e = med(x["events_per_s"] for x in on)
    ratio = med(x["median_us"] for x in on) / med(x["median_us"] for x in off)
    print(
        "| path | scalar median (us) | scalar p99 (us) | finish (s) | end-to-end events/s "
        "| delivered | dropped + lost (worst run) |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for label, rows in (("broker off", off), ("broker on (Redis)", on)):
        rate = f"{med(x['events_per_s'] for x in rows):,.0f}" if "events_per_s" in rows[0] else "-"
        seen = f"{min(x['seen'] for x in rows):,}/{args.events:,}" if "seen" in rows[0] else "-"
        print(
            f"| {label} | {med(x['median_us'] for x in rows):.2f} | "
            f"{med(x['p99_us'] for x in rows):.2f} | {med(x['finish_s'] for x in rows):.2f} | "
            f"{rate} | {seen} | {max(x['dropped'] + x['lost'] for x in rows):,} |"
        )
    print()
    print(f"- end to end through Redis: **{e2e:,.0f} events/s** (target >= 100k)")
    print(f"- producer cost, broker on / off: **{ratio:.2f}x** (target <= 1.2x)")


if __name__ == "__main__":
    main()
