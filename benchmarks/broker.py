"""Events across machines through Redis Streams, side by side with the broker off.

Starts its own ``redis-server`` on a free loopback port. Measured, in fresh processes:

* end to end: ``--producers`` producer "machines" (each its own socket and host,
  ``GOGGLES_BROKER`` set) log ``--events`` scalars between them, started together once every
  host is warm; ``--consumers`` consumer processes (``attach(..., from_broker=True)``, one
  consumer group) count them. Throughput = events / (the last consumer saw the last one - the
  first producer's first call), wall clock across processes; ``finish()`` is not inside it.
* the producer's per-call cost (median and p99 of ``scalar``) with the broker on and off: the
  forwarder runs in the host, so the log call should not notice it.

Run: ``python3 benchmarks/broker.py [--events 200000] [--repeats 3] [--producers 1]
[--consumers 1] [--rev REV]`` (``--rev``: also run ``REV``'s ``src``, unpacked from git into a
temp dir, in alternation with this checkout).
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
import threading
import time
from pathlib import Path
from typing import Any

from _revision import unpack

_ROOT = Path(__file__).resolve().parents[1]
_PROBE = Path(__file__).resolve().parent / "_cpu_probe"

_PRODUCER = r"""
import json, sys, time
import goggles_io as gg
n = int(sys.argv[1])
log = gg.get_logger("bench", with_metrics=True)
for i in range(2000):
    log.scalar("warm", 0.0, step=i)
gg.flush(60)
print("ready", flush=True)
sys.stdin.readline()  # every producer's host is warm: go
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
import json, os, sys, time
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
said = -1
while not os.path.exists(sys.argv[2]):  # the parent's stop file: every event was seen
    if Count.seen != said:
        said = Count.seen
        print(json.dumps({"seen": said, "last": Count.last}), flush=True)
    time.sleep(0.005)
print(json.dumps({"seen": Count.seen, "last": Count.last}), flush=True)
gg.finish(timeout=10)
"""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _env(
    root: Path, machine: str, broker: str | None, run: str, src: Path, cpu: Path | None = None
) -> dict[str, str]:
    sock = root / machine
    sock.mkdir(exist_ok=True, mode=0o700)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    env.update(GOGGLES_SOCKET=str(sock / "bus.sock"), GOGGLES_HOST_IDLE_TIMEOUT="0.5")
    env["PYTHONPATH"] = os.pathsep.join([str(src), env.get("PYTHONPATH", "")])
    if broker:
        env.update(GOGGLES_BROKER=broker, GOGGLES_BROKER_RUN=run)
    if cpu is not None:  # every process of the run (hosts too) writes its CPU per thread there
        env["PYTHONPATH"] = os.pathsep.join([str(_PROBE), env["PYTHONPATH"]])
        env["GG_BENCH_CPU_DIR"] = str(cpu)
    return env


def _cpu_by_thread(folder: Path) -> dict[str, Any]:
    """CPU seconds by ``role / thread`` of one run, from ``_cpu_probe``'s files."""
    found: dict[str, float] = {}
    for path in folder.glob("*.json"):
        data = json.loads(path.read_text())
        argv = data["argv"]
        if argv[0].endswith("host.py"):
            machine = "consumer" if "/consumer" in " ".join(argv) else "producer"
            role = f"host of a {machine}"
        else:
            role = "consumer" if len(argv) == 3 else "producer"
        for thread, cpu in data["threads"].items():
            key = f"{role} / {thread}"
            found[key] = found.get(key, 0.0) + cpu
    return found


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) the process ``pid`` used so far (Linux ``/proc``)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


class _Consumer:
    """One consumer process and the latest ``{seen, last}`` it printed."""

    def __init__(self, cmd: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, text=True)
        assert self.proc.stdout is not None and self.proc.stdout.readline() == "ready\n"
        self.latest = {"seen": 0, "last": 0.0}
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.latest = json.loads(line)

    def done(self) -> dict[str, Any]:
        self.proc.wait(timeout=60)
        self._reader.join(10)
        return self.latest


def _once(
    root: Path, broker: str | None, args: argparse.Namespace, run: str, src: Path
) -> dict[str, Any]:
    n, producers = args.events, args.producers
    stop = root / f"stop-{run}"
    cpu = None
    if args.cpu:
        cpu = root / f"cpu-{run}"
        cpu.mkdir()
    consumers = []
    if broker:
        consumers = [
            _Consumer(
                [sys.executable, "-c", _CONSUMER, str(n), str(stop)],
                _env(root, f"consumer{c}", broker, run, src, cpu),
            )
            for c in range(args.consumers)
        ]
    share = [n // producers + (p < n % producers) for p in range(producers)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _PRODUCER, str(share[p])],
            env=_env(root, f"producer{p}", broker, run, src, cpu),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for p in range(producers)
    ]
    for proc in procs:
        assert proc.stdout is not None and proc.stdout.readline() == "ready\n"
    if cpu is not None:  # the probes leave out what each thread used until now
        (cpu / "go").touch()
        time.sleep(0.1)
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    outs = [json.loads(proc.communicate(timeout=600)[0].strip().splitlines()[-1]) for proc in procs]
    got: dict[str, Any] = {
        "start": min(o["start"] for o in outs),
        "median_us": statistics.median(o["median_us"] for o in outs),
        "p99_us": max(o["p99_us"] for o in outs),
        "finish_s": max(o["finish_s"] for o in outs),
        "dropped": sum(o["dropped"] for o in outs),
        "lost": sum(o["lost"] for o in outs),
    }
    if consumers:
        deadline = time.monotonic() + 120
        while sum(c.latest["seen"] for c in consumers) < n and time.monotonic() < deadline:
            time.sleep(0.01)
        stop.touch()
        seen = [c.done() for c in consumers]
        got["seen"] = sum(s["seen"] for s in seen)
        last = max(s["last"] for s in seen)
        got["events_per_s"] = got["seen"] / max(last - got["start"], 1e-9)
    if cpu is not None:  # hosts exit after their idle timeout: wait for their files
        expected = 2 * producers + len(consumers)
        deadline = time.monotonic() + 15
        while len(list(cpu.glob("*.json"))) < expected and time.monotonic() < deadline:
            time.sleep(0.1)
        got["cpu"] = _cpu_by_thread(cpu)
    return got


def _table(sides: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]], n: int) -> None:
    med = statistics.median
    print(
        "| code | path | scalar median (us) | scalar p99 (us) | finish (s) | end-to-end events/s "
        "| delivered | dropped + lost (worst run) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for side, (off, on) in sides.items():
        for label, rows in (("broker off", off), ("broker on (Redis)", on)):
            rate = (
                f"{med(x['events_per_s'] for x in rows):,.0f}" if "events_per_s" in rows[0] else "-"
            )
            seen = f"{min(x['seen'] for x in rows):,}/{n:,}" if "seen" in rows[0] else "-"
            print(
                f"| {side} | {label} | {med(x['median_us'] for x in rows):.2f} | "
                f"{med(x['p99_us'] for x in rows):.2f} | {med(x['finish_s'] for x in rows):.2f} | "
                f"{rate} | {seen} | {max(x['dropped'] + x['lost'] for x in rows):,} |"
            )
    print()
    for side, (off, on) in sides.items():
        e2e = med(x["events_per_s"] for x in on)
        ratio = med(x["median_us"] for x in on) / med(x["median_us"] for x in off)
        redis = med(x["redis_us"] for x in on)
        print(
            f"- {side}: end to end through Redis **{e2e:,.0f} events/s**, producer cost broker "
            f"on / off **{ratio:.2f}x**, redis-server CPU {redis:.2f} us/event"
        )


def _cpu_table(sides: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]], n: int) -> None:
    """CPU µs per event by ``role / thread``, medians over the runs, from the moment every
    process was ready (start-up and warm-up left out) to its exit."""
    columns = [(side, label, runs) for side, pair in sides.items() for label, runs in
               zip(("broker off", "broker on"), pair, strict=True)]  # fmt: skip
    keys = sorted({k for _, _, runs in columns for r in runs for k in r["cpu"]})
    print()
    print(
        "| CPU µs/event: process / thread | "
        + " | ".join(f"{s}, {lb}" for s, lb, _ in columns)
        + " |"
    )
    print("|---|" + "---:|" * len(columns))
    for key in [*keys, "all processes (redis-server aside)"]:
        cells = []
        for _, _, runs in columns:
            if key in keys:
                values = [r["cpu"].get(key, 0.0) for r in runs]
            else:
                values = [sum(r["cpu"].values()) for r in runs]
            cells.append(f"{statistics.median(values) / n * 1e6:.2f}")
        print(f"| {key} | " + " | ".join(cells) + " |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000, help="in all, over the producers")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--producers", type=int, default=1)
    parser.add_argument("--consumers", type=int, default=1)
    parser.add_argument("--rev", help="also run this git revision's src, in alternation")
    parser.add_argument(
        "--cpu", action="store_true", help="also print CPU per event by process and thread"
    )
    args = parser.parse_args()
    if shutil.which("redis-server") is None:
        sys.exit("redis-server is not installed (apt-get install redis-server)")
    root = Path(tempfile.mkdtemp(prefix="gg-broker-bench-"))
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
    sides: dict[str, tuple[list[dict[str, Any]], list[dict[str, Any]]]] = {
        side: ([], []) for side in srcs
    }
    try:
        for r in range(args.repeats):
            for i, (side, src) in enumerate(srcs.items()):
                off, on = sides[side]
                off.append(_once(root, None, args, f"off{r}s{i}", src))
                before = _cpu_s(server.pid)
                on.append(_once(root, url, args, f"on{r}s{i}", src))
                on[-1]["redis_us"] = (_cpu_s(server.pid) - before) / args.events * 1e6
                print(f"# {r} {side}: off {off[-1]}, on {on[-1]}", file=sys.stderr, flush=True)
    finally:
        server.terminate()
        server.wait()
        shutil.rmtree(root, ignore_errors=True)
    print(
        f"# benchmarks/broker.py --events {args.events:,} --producers {args.producers} "
        f"--consumers {args.consumers}, medians of {args.repeats} runs (fresh processes)"
    )
    _table(sides, args.events)
    if args.cpu:
        _cpu_table(sides, args.events)


if __name__ == "__main__":
    main()
