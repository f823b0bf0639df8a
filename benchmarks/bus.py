"""The multi-process transport as a user meets it: goggles_io vs robo-goggles vs stdlib QueueHandler.

Peers, each in fresh interpreters with a private socket directory and a private ``TMPDIR``:

* ``goggles_io``              -- default: dedicated host subprocess over the Unix socket, default
  budgets (16 MiB per queue, 96 MiB shared-memory pool, ADR 0083) and the default delivery policy
  (``GOGGLES_WHEN_FULL=spill``: past the budgets, the spool and the disk pool, ADR 0025).
* ``goggles_io-inprocess``    -- ``GOGGLES_TRANSPORT=inprocess`` (no socket).
* ``robo-goggles``            -- its default, the dedicated host.
* ``robo-goggles-inprocess``  -- ``GOGGLES_DEDICATED_HOST=0``.
* ``stdlib``                  -- ``logging.handlers.QueueHandler`` -> ``QueueListener`` (in-process).

Two regimes, for a burst of scalars and a burst of 1 MiB images:

* **cold**: a fresh process, timed from the first log call right after ``attach`` (host start-up
  included);
* **settled**: after ``attach``, one warm-up event is logged and seen by the sink (``flush()``
  where the peer has one), then 1.5 s of quiet, then the burst.

The sink only counts: events, array bytes and the wall-clock time (``time.time()``) of the last
event it saw, written to a file on close (it may run in the host process). Throughput is counted
up to that last event, from the producer's wall-clock time just before its first call, and over
the events delivered (delivered/logged is printed next to it; a ratio against robo-goggles only
counts towards its target when both sides delivered everything); ``finish()`` is timed
separately. Each log call is timed (median, p99); the image runs also time ``np.copyto`` of the
same array (memcpy reference). The goggles_io subscription section runs 0, 1 and 4 subscriber
processes (``gg.subscribe``) next to the producer. Every cold/settled run is repeated
``--repeats`` times, rotating the peers; medians are reported. Progress and each run's transport
warnings (with the phase they came in) go to stderr; the markdown goes to stdout.

Run: ``python3 benchmarks/bus.py [--events N] [--images N] [--repeats N] [--quick]
[--markdown PATH] [--json PATH]`` (about 6 minutes on 2 cores; ``--quick`` about 1.5).
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

PEERS: dict[str, dict[str, str]] = {
    "goggles_io": {},
    "goggles_io-inprocess": {"GOGGLES_TRANSPORT": "inprocess"},
    "robo-goggles": {},
    "robo-goggles-inprocess": {"GOGGLES_DEDICATED_HOST": "0"},
    "stdlib": {},
}
SETTLE_S = 1.5
WARMUP, PROBE = 10**12, 10**12 + 1  # marker steps (steps must be >= 0); the burst uses 0..n-1
_PEER = os.environ.get("BENCH_PEER", "")
_COUNT_FILE = os.environ.get("BENCH_COUNT_FILE", "")
_SEEN_FILE = os.environ.get("BENCH_SEEN_FILE", "")


class _Tally:
    """What a counting sink saw: burst events (step >= 0), their array bytes, the last one's time.

    Events with a step of ``WARMUP`` or more are markers: ``WARMUP`` is the warm-up (it touches the
    seen file, so a producer without ``flush()`` knows the sink is live), ``PROBE`` the
    empty-``finish`` probe.
    """

    def __init__(self) -> None:
        self.count = 0
        self.nbytes = 0
        self.last = 0.0

    def see(self, step: int | None, payload: Any) -> None:
        if step is not None and step >= WARMUP:
            if step == WARMUP and _SEEN_FILE:
                Path(_SEEN_FILE).touch()
            return
        self.count += 1
        self.nbytes += getattr(payload, "nbytes", 0)
        self.last = time.time()

    def write(self) -> None:
        if _COUNT_FILE and self.count:
            with open(_COUNT_FILE, "a") as fh:
                fh.write(f"{self.count} {self.nbytes} {self.last!r}\n")
        self.__init__()  # type: ignore[misc]


# Handler classes live at module level so each peer's host process can import them by name.
if _PEER.startswith("goggles_io"):
    import goggles_io as _gg
    from goggles_io.handlers.base import BaseHandler as _Base

    @_gg.register_handler
    class Counting(_Base):
        """Count burst events and array bytes, note the last one's wall time; write on close."""

        def open(self) -> None:
            self.tally = _Tally()

        def handle(self, event: Any) -> None:
            self.tally.see(event.step, event.payload)

        def close(self) -> None:
            self.tally.write()

elif _PEER.startswith("robo-goggles"):
    import goggles as _rg  # benchmark peer only

    class Counting(_rg.ConsoleHandler):  # type: ignore[no-redef]
        """Count burst events and array bytes, note the last one's wall time; write on close."""

        capabilities = frozenset({"metric", "log", "image"})

        def open(self) -> None:
            self.tally = _Tally()

        def handle(self, event: Any) -> None:
            if not hasattr(self, "tally"):
                self.tally = _Tally()
            self.tally.see(event.step, event.payload)

        def close(self) -> None:
            if hasattr(self, "tally"):
                self.tally.write()

    _rg.register_handler(Counting)


class _Api:
    """One peer's calls: ``attach()``, ``scalar(i)``, ``image(arr, i)``, ``flush()``, ``finish()``."""

    attach: Callable[[], None]
    scalar: Callable[[int], None]
    image: Callable[[Any, int], None]
    flush: Callable[[], None] | None
    finish: Callable[[], Any]


def _api() -> _Api:
    api = _Api()
    if _PEER == "stdlib":
        import logging
        import logging.handlers
        import queue

        tally = _Tally()

        class StdCounting(logging.Handler):
            def emit(self, record: logging.LogRecord) -> None:
                # QueueHandler.prepare formats the message and clears ``args``; ``extra`` stays
                tally.see(record.step, record.payload)  # type: ignore[attr-defined]

        log = logging.getLogger("bench")
        log.setLevel(logging.INFO)
        log.propagate = False
        state: dict[str, Any] = {}

        def attach() -> None:
            q: queue.SimpleQueue[Any] = queue.SimpleQueue()
            log.handlers[:] = [logging.handlers.QueueHandler(q)]
            state["listener"] = logging.handlers.QueueListener(q, StdCounting())
            state["listener"].start()

        def finish() -> None:
            state["listener"].stop()
            tally.write()

        api.attach, api.finish, api.flush = attach, finish, None
        api.scalar = lambda i: log.info("%s %s", "loss", 0.5, extra={"step": i, "payload": 0.5})

        def image(a: Any, i: int) -> None:
            copy = a.copy()  # the caller may reuse its buffer; a queued record must not see that
            log.info("%s %s", "img", copy, extra={"step": i, "payload": copy})

        api.image = image
        return api
    gg = _gg if _PEER.startswith("goggles_io") else _rg
    logger = gg.get_logger("bench", with_metrics=True)
    api.attach = lambda: gg.attach(Counting(name="count"), scopes=["global"])
    api.scalar = lambda i: logger.scalar("loss", 0.5, step=i)
    api.image = lambda a, i: logger.image(a, name="img", step=i)
    api.flush = gg.flush if _PEER.startswith("goggles_io") else None
    api.finish = gg.finish
    return api


def _percentiles(samples: list[int]) -> dict[str, float]:
    ordered = sorted(samples)
    return {
        "median_us": statistics.median(ordered) / 1e3,
        "p99_us": ordered[int(len(ordered) * 0.99)] / 1e3,
    }


def _own_rss_mib(field: str = "VmHWM") -> float:
    """This process's ``field`` (VmHWM: its peak resident set) in MiB."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith(field + ":"):
            return int(line.split()[1]) / 1024
    return 0.0


def _peer_rss_mib(field: str = "VmRSS") -> float:
    """``field`` (VmRSS, VmHWM = peak) of the other processes of this run (a dedicated host, found
    by its environment), in MiB; 0 when there is none (in-process peers)."""
    tag = f"BENCH_COUNT_FILE={_COUNT_FILE}".encode()
    total = 0.0
    for proc in Path("/proc").glob("[0-9]*"):
        if proc.name == str(os.getpid()):
            continue
        try:
            if tag not in (proc / "environ").read_bytes().split(b"\0"):
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith(field + ":"):
                    total += int(line.split()[1]) / 1024
        except OSError:
            continue
    return total


def _wait_for(path: str, timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while not os.path.exists(path):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _worker(regime: str, workload: str, n: int, t_start: float) -> dict[str, Any]:
    """Run one burst in this fresh process; return the producer's side of the measurement."""
    import numpy as np

    api = _api()
    arr = np.random.default_rng(0).integers(0, 255, (512, 512, 4), dtype=np.uint8)  # 1 MiB
    call = api.scalar if workload == "scalars" else (lambda i: api.image(arr, i))
    attach_wall, t_attach = time.time(), time.perf_counter()
    api.attach()
    out: dict[str, Any] = {
        "attach_ms": (time.perf_counter() - t_attach) * 1e3,
        "attach_wall": attach_wall,
    }
    if regime == "settled":
        _phase("warm-up")
        call(WARMUP)
        if api.flush is not None:
            api.flush()
        if not _wait_for(_SEEN_FILE, 120):
            raise RuntimeError("the warm-up event never reached the sink")
        time.sleep(SETTLE_S)
        out["idle_rss_mib"] = _peer_rss_mib()
    else:
        out["import_attach_ms"] = (time.perf_counter() - t_start) * 1e3
    clock = time.perf_counter_ns
    samples = [0] * n
    _phase("burst")
    rss_before = _own_rss_mib()
    start_wall = time.time()
    for i in range(n):
        s = clock()
        call(i)
        samples[i] = clock() - s
        if i == 0 and regime == "cold":
            out["first_call_back_ms"] = (time.perf_counter() - t_start) * 1e3
    out["calls_s"] = time.time() - start_wall
    out["producer_growth_mib"] = _own_rss_mib() - rss_before
    out["start_wall"] = start_wall
    out["first_call_us"] = samples[0] / 1e3
    out.update(_percentiles(samples))
    out["peak_rss_mib"] = _peer_rss_mib("VmHWM")
    _phase("finish")
    t_fin = time.perf_counter()
    api.finish()
    out["finish_ms"] = (time.perf_counter() - t_fin) * 1e3
    _phase("after finish")
    if workload == "images":
        dst = np.empty_like(arr)
        copies = []
        for _ in range(max(n, 50)):
            s = clock()
            np.copyto(dst, arr)
            copies.append(clock() - s)
        out["memcpy_median_us"] = statistics.median(copies) / 1e3
        # A second reference closer to what a transport does: copy into a 64 MiB pre-faulted ring
        # of 1 MiB slots (a cold destination each time, as in a shared-memory pool).
        ring = np.empty((64, *arr.shape), dtype=np.uint8)
        ring.fill(1)  # fault every page in now (np.zeros would map them lazily)
        copies = []
        for i in range(max(n, 128)):
            s = clock()
            np.copyto(ring[i % 64], arr)
            copies.append(clock() - s)
        out["ring_memcpy_median_us"] = statistics.median(copies) / 1e3
    elif regime == "settled":
        # finish() with nothing queued but a live link: a round trip to the host, whose handlers
        # close. (A second finish() right after the first measures nothing.)
        _phase("empty-finish probe")
        api.attach()
        api.scalar(PROBE)
        time.sleep(1.0)  # the attach and the probe reach the host; the queue is empty again
        t_fin = time.perf_counter()
        api.finish()
        out["empty_finish_ms"] = (time.perf_counter() - t_fin) * 1e3
    return out


def _subscriber(n: int) -> None:
    """Subscribe, say ready, count ``n`` burst metrics (or until 3 s pass without one), report."""
    import goggles_io as gg

    sub = gg.subscribe(scopes=["global"], kinds=["metric"])
    print("ready", flush=True)
    count, last, timeout = 0, 0.0, 300.0
    while count < n:
        event = sub.get(timeout=timeout)
        if event is None:
            break
        if event.step is not None and event.step >= WARMUP:
            continue
        count += 1
        last = time.time()
        timeout = 3.0
    sub.sync(timeout=5.0)
    print("RESULT", json.dumps({"count": count, "last": last, "dropped": sub.dropped}), flush=True)
    sub.close()


# -- the parent: fresh interpreters, private dirs -------------------------------------------------
def _env(peer: str, tmp: str) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith("GOGGLES_") and k not in ("BENCH_PEER", "BENCH_COUNT_FILE")
    }
    env.update(
        {
            "BENCH_PEER": peer,
            "BENCH_COUNT_FILE": os.path.join(tmp, "count"),
            "BENCH_SEEN_FILE": os.path.join(tmp, "seen"),
            "GOGGLES_SOCKET": os.path.join(tmp, "sock", "bus.sock"),
            "GOGGLES_HOST_IMPORTS": "bus",
            "GOGGLES_SPOOL_DIR": os.path.join(tmp, "spool"),
            # robo-goggles chmods its temp dir to 0700; as root that would lock others out of /tmp
            "TMPDIR": os.path.join(tmp, "tmp"),
            "PYTHONPATH": os.pathsep.join(
                [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
            ),
            **PEERS[peer],
        }
    )
    os.makedirs(env["TMPDIR"])
    os.makedirs(os.path.dirname(env["GOGGLES_SOCKET"]), mode=0o700)
    return env


def _result(proc_stdout: str, what: str, stderr: str) -> dict[str, Any]:
    lines = [x for x in proc_stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        msg = f"{what} failed:\n{proc_stdout[-2000:]}\n{stderr[-2000:]}"
        raise RuntimeError(msg)
    return json.loads(lines[-1][7:])  # type: ignore[no-any-return]


def _sink_tally(count_file: str) -> tuple[int, int, float]:
    """Sum what the sink wrote on close; ``(events, bytes, wall time of the last event)``."""
    _wait_for(count_file, 10)
    rows = (
        [line.split() for line in Path(count_file).read_text().splitlines()]
        if os.path.exists(count_file)
        else []
    )
    return (
        sum(int(r[0]) for r in rows),
        sum(int(r[1]) for r in rows),
        max((float(r[2]) for r in rows), default=0.0),
    )


def _phase(name: str) -> None:
    """Mark a phase on stderr, so a transport warning there can be placed (burst or not)."""
    print(f"[bench phase] {name}", file=sys.stderr, flush=True)


def _drops_line(stderr: str) -> str:
    """The transport's drop and host-loss lines, each prefixed with the phase it came in."""
    phase, found = "start", []
    for line in stderr.splitlines():
        if line.startswith("[bench phase] "):
            phase = line.split("] ", 1)[1]
        elif "dropped" in line or "lost" in line:
            found.append(f"[{phase}] {line.strip()}")
    return " | ".join(found)[:600]


def _run(peer: str, regime: str, workload: str, n: int, subscribers: int = 0) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="gg-bench-")
    try:
        env = _env(peer, tmp)
        subs = []
        for _ in range(subscribers):
            subs.append(
                subprocess.Popen(
                    [sys.executable, "-c", f"import bus; bus._subscriber({n})"],
                    env=env,
                    cwd=Path(__file__).parent,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
        for sub in subs:
            line = sub.stdout.readline() if sub.stdout else ""
            if line.strip() != "ready":
                raise RuntimeError(
                    f"subscriber did not start: {line!r} {sub.stderr.read() if sub.stderr else ''}"
                )
        code = (  # numpy and this harness's stdlib first: the clock times the library alone
            "import numpy, time, json, argparse, datetime, platform, shutil, statistics, "
            "subprocess, tempfile, importlib.metadata; t0 = time.perf_counter(); import bus; "
            f"print('RESULT', json.dumps(bus._worker({regime!r}, {workload!r}, {n}, t0)))"
        )
        proc = subprocess.run(
            [sys.executable, "-c", code],
            env=env,
            cwd=Path(__file__).parent,
            capture_output=True,
            text=True,
            timeout=600,
        )
        result = _result(proc.stdout, f"{peer}/{regime}/{workload}", proc.stderr)
        result["drops"] = _drops_line(proc.stderr)
        result["delivered"], result["delivered_bytes"], last = _sink_tally(env["BENCH_COUNT_FILE"])
        result["to_last_s"] = last - result["start_wall"] if last else float("nan")
        result["attach_to_last_s"] = last - result["attach_wall"] if last else float("nan")
        result["subscribers"] = []
        for sub in subs:
            out, err = sub.communicate(timeout=120)
            got = _result(out, "subscriber", err)
            got["to_last_s"] = got["last"] - result["start_wall"] if got["count"] else float("nan")
            result["subscribers"].append(got)
        return result
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


# -- reporting -----------------------------------------------------------------------------------
def _med(values: list[float]) -> float:
    good = [v for v in values if v == v]  # drop NaN (nothing delivered)
    return statistics.median(good) if good else float("nan")


def _fmt(x: float) -> str:
    if x != x:
        return "n/a"
    return f"{x:,.2f}" if abs(x) < 100 else f"{x:,.0f}"


def _delivered(runs: list[dict[str, Any]], n: int) -> str:
    got = sorted(r["delivered"] for r in runs)
    text = f"{got[0]:,}" if got[0] == got[-1] else f"{got[0]:,}–{got[-1]:,}"
    return f"{text}/{n:,}"


def _ratio_line(label: str, value: float, target: str, met: bool | None) -> str:
    verdict = "–" if met is None else ("met" if met else "**missed**")
    return f"- {label}: **{_fmt(value)}x** (target {target}: {verdict})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, help="scalars per burst (default 100000)")
    parser.add_argument("--images", type=int, help="1 MiB images per burst (default 200)")
    parser.add_argument("--repeats", type=int, help="runs of each peer/regime (default 3)")
    parser.add_argument(
        "--quick",
        action="store_true",
        help="smoke run: defaults of 10000 scalars, 40 images, 1 repeat",
    )
    parser.add_argument("--markdown", help="also write the markdown section to this path")
    parser.add_argument("--json", help="also write every run's raw result to this path")
    args = parser.parse_args()
    defaults = (10_000, 40, 1) if args.quick else (100_000, 200, 3)
    args.events = args.events or defaults[0]
    args.images = args.images or defaults[1]
    args.repeats = args.repeats or defaults[2]
    began = time.monotonic()

    runs: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for rep in range(args.repeats):
        for peer in PEERS:
            for workload in ("scalars", "images"):
                n = args.events if workload == "scalars" else args.images
                for regime in ("cold", "settled"):
                    r = _run(peer, regime, workload, n)
                    runs.setdefault((peer, regime, workload), []).append(r)
                    print(
                        f"[{time.monotonic() - began:5.0f}s] rep {rep} {peer} {regime} {workload}: "
                        f"{r['delivered']}/{n} in {r['to_last_s']:.3f}s, call median "
                        f"{r['median_us']:.1f}us, finish {r['finish_ms']:.0f}ms {r['drops']}",
                        file=sys.stderr,
                        flush=True,
                    )
        for k in (0, 1, 4):
            r = _run("goggles_io", "settled", "scalars", args.events, subscribers=k)
            runs.setdefault(("goggles_io", f"subs{k}", "scalars"), []).append(r)
            print(
                f"[{time.monotonic() - began:5.0f}s] rep {rep} subscribers={k}: call median "
                f"{r['median_us']:.2f}us, subs {[(s['count'], s['dropped']) for s in r['subscribers']]}",
                file=sys.stderr,
                flush=True,
            )

    def m(peer: str, regime: str, workload: str, key: str) -> float:
        return _med([r[key] for r in runs[(peer, regime, workload)]])

    def rate(peer: str, regime: str, workload: str, span: str = "to_last_s") -> float:
        """Median over repeats of delivered / time to the last event seen (events/s or GB/s)."""
        key = "delivered" if workload == "scalars" else "delivered_bytes"
        scale = 1.0 if workload == "scalars" else 1e-9
        return _med([r[key] * scale / r[span] for r in runs[(peer, regime, workload)]])

    def from_attach(peer: str, regime: str, workload: str) -> str:
        if regime != "cold":
            return "–"
        value = rate(peer, regime, workload, "attach_to_last_s")
        return _fmt(value) if workload == "scalars" else f"{value:.2f}"

    def mib(value: float) -> str:
        return _fmt(value) if value else "n/a"

    lines = [
        f"{args.events:,} scalars and {args.images:,} x 1 MiB images per burst; median of "
        f"{args.repeats} fresh-process runs per cell, peers rotated. Throughput = events (or bytes) "
        "the sink saw / (wall time of the last one it saw - wall time before the first log call); "
        "`finish()` is timed apart. cold = fresh process, timed from the first call after `attach` "
        '(host start-up inside, as far as `attach` did not already wait for it: the "from attach" '
        "column times from just before `attach` instead); settled = warm-up event seen by the sink, "
        f"then {SETTLE_S} s idle. Host RSS: the other processes of the run (the dedicated host), "
        "n/a in-process.",
        "",
        "**Scalars** (`log.scalar`)",
        "",
        "| peer | regime | events/s to last event | events/s from attach | delivered/logged "
        "| call median (us) | call p99 (us) | first call (us) | finish() (ms) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for peer in PEERS:
        for regime in ("cold", "settled"):
            c = (peer, regime, "scalars")
            lines.append(
                f"| {peer} | {regime} | {_fmt(rate(*c))} | {from_attach(*c)} | "
                f"{_delivered(runs[c], args.events)} | "
                f"{_fmt(m(*c, 'median_us'))} | {_fmt(m(*c, 'p99_us'))} | "
                f"{_fmt(m(*c, 'first_call_us'))} | {_fmt(m(*c, 'finish_ms'))} |"
            )
    lines += [
        "",
        "**1 MiB images** (`log.image`, 512x512x4 uint8). `goggles_io` runs with its defaults: "
        "16 MiB per queue, a 96 MiB shared-memory pool, and past them the disk pool and the spool "
        "(ADR 0025). robo-goggles has no budget: it queues everything in memory. GB/s counts "
        "delivered bytes only. Producer growth = the producer's peak RSS at the end of the burst "
        "minus just before it (shared-memory pages it touched included). memcpy = `np.copyto` of "
        "the same array into one preallocated buffer, in the same process (the reference of the "
        "call / memcpy ratio); ring memcpy = the same into a pre-faulted 64 MiB ring of 1 MiB "
        "slots, a cold destination each time as in a shared-memory pool.",
        "",
        "| peer | regime | GB/s to last event | GB/s from attach | delivered/logged "
        "| call median (us) | call p99 (us) | memcpy median (us) | call / memcpy "
        "| ring memcpy median (us) | finish() (ms) | producer growth (MiB) "
        "| host peak RSS at end of burst (MiB) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for peer in PEERS:
        for regime in ("cold", "settled"):
            c = (peer, regime, "images")
            lines.append(
                f"| {peer} | {regime} | {rate(*c):.2f} | {from_attach(*c)} | "
                f"{_delivered(runs[c], args.images)} | "
                f"{_fmt(m(*c, 'median_us'))} | {_fmt(m(*c, 'p99_us'))} | "
                f"{_fmt(m(*c, 'memcpy_median_us'))} | "
                f"{m(*c, 'median_us') / m(*c, 'memcpy_median_us'):.2f} | "
                f"{_fmt(m(*c, 'ring_memcpy_median_us'))} | "
                f"{_fmt(m(*c, 'finish_ms'))} | {_fmt(m(*c, 'producer_growth_mib'))} | "
                f"{mib(m(*c, 'peak_rss_mib'))} |"
            )
    lines += [
        "",
        "**Start-up and shutdown** (cold, numpy already imported as in a training script: import "
        "of the library + `attach` before the first call, and until the first call returned; "
        "empty finish: `finish()` on a live link with nothing queued; idle host RSS: before the "
        "settled scalar burst; peak: by the end of the scalar burst)",
        "",
        "| peer | import + attach (ms) | import + attach + first call back (ms) | attach (ms) "
        "| first call, cold (us) | empty finish (ms) | idle host RSS (MiB) "
        "| host peak RSS, scalars (MiB) |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for peer in PEERS:
        cold, settled = (peer, "cold", "scalars"), (peer, "settled", "scalars")
        lines.append(
            f"| {peer} | {_fmt(m(*cold, 'import_attach_ms'))} | "
            f"{_fmt(m(*cold, 'first_call_back_ms'))} | {_fmt(m(*cold, 'attach_ms'))} | "
            f"{_fmt(m(*cold, 'first_call_us'))} | {_fmt(m(*settled, 'empty_finish_ms'))} | "
            f"{mib(m(*settled, 'idle_rss_mib'))} | {mib(m(*settled, 'peak_rss_mib'))} |"
        )
    lines += [
        "",
        "**goggles_io subscriptions** (settled scalar burst from one producer with the counting "
        "handler attached, and k processes iterating `gg.subscribe(scopes=['global'], "
        "kinds=['metric'])`; events/s = events a subscriber received / (its last one's wall time - "
        "the producer's start))",
        "",
        "| subscribers | producer call median (us) | producer call p99 (us) | events/s per subscriber "
        "(median) | received/logged (worst subscriber) | dropped for subscribers (sum) "
        "| handler delivered/logged |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for k in (0, 1, 4):
        c = ("goggles_io", f"subs{k}", "scalars")
        subs = [s for r in runs[c] for s in r["subscribers"]]
        if subs:
            per_sub = _fmt(_med([s["count"] / s["to_last_s"] for s in subs]))
            worst = f"{min(s['count'] for s in subs):,}/{args.events:,}"
            dropped = f"{_med([sum(s['dropped'] for s in r['subscribers']) for r in runs[c]]):,.0f}"
        else:
            per_sub = worst = dropped = "–"
        lines.append(
            f"| {k} | {_fmt(m(*c, 'median_us'))} | {_fmt(m(*c, 'p99_us'))} | {per_sub} | {worst} | "
            f"{dropped} | {_delivered(runs[c], args.events)} |"
        )

    rg, ours = "robo-goggles", "goggles_io"

    def complete(peer: str, regime: str, workload: str) -> bool:
        n = args.events if workload == "scalars" else args.images
        return all(r["delivered"] == n for r in runs[(peer, regime, workload)])

    def rate_ratio(
        label: str,
        peer: str,
        regime: str,
        workload: str,
        target: float | None,
        span: str = "to_last_s",
    ) -> str:
        """A throughput ratio; a target only counts as met when both sides delivered everything."""
        v = rate(peer, regime, workload, span) / rate(rg, regime, workload, span)
        n = args.events if workload == "scalars" else args.images
        if complete(peer, regime, workload) and complete(rg, regime, workload):
            met = None if target is None else v >= target
            return _ratio_line(label, v, "none" if target is None else f">= {target:g}", met)
        return (
            f"- {label}: {_fmt(v)}x, **not comparable**: {peer} delivered "
            f"{_delivered(runs[(peer, regime, workload)], n)} (rate over delivered events only; "
            f"robo-goggles {_delivered(runs[(rg, regime, workload)], n)})"
            + ("" if target is None else f"; target >= {target:g}: **missed**")
        )

    ratios = ["", "Ratios against robo-goggles' default (dedicated host), medians of this run:", ""]
    v = m(ours, "settled", "scalars", "median_us") / m(rg, "settled", "scalars", "median_us")
    ratios.append(
        _ratio_line(
            "scalar log call median, settled, goggles_io / robo-goggles", v, "<= 0.3", v <= 0.3
        )
    )
    ratios.append(
        rate_ratio(
            "scalars events/s, settled, goggles_io / robo-goggles", ours, "settled", "scalars", 5
        )
    )
    ratios.append(
        rate_ratio(
            "scalars events/s, cold, goggles_io / robo-goggles", ours, "cold", "scalars", None
        )
    )
    ratios.append(
        rate_ratio(
            "1 MiB images GB/s, settled, goggles_io / robo-goggles", ours, "settled", "images", 3
        )
    )
    ratios.append(
        rate_ratio(
            "1 MiB images GB/s, cold (from the first call: our host starts inside it, robo-goggles' "
            "attach waited for its host), goggles_io / robo-goggles",
            ours,
            "cold",
            "images",
            None,
        )
    )
    ratios.append(
        rate_ratio(
            "1 MiB images GB/s, cold timed from before `attach` (both include their host's start), "
            "goggles_io / robo-goggles",
            ours,
            "cold",
            "images",
            3,
            "attach_to_last_s",
        )
    )
    for regime in ("cold", "settled"):
        grew = max(r["producer_growth_mib"] for r in runs[(ours, regime, "images")])
        ratios.append(
            f"- producer RSS growth over the image burst, {regime}, goggles_io (worst run): "
            f"**{_fmt(grew)} MiB** (target < 128: {'met' if grew < 128 else '**missed**'})"
        )
    boot = m(ours, "cold", "scalars", "first_call_back_ms")
    ratios.append(
        f"- import + attach + first call back, cold, goggles_io: **{_fmt(boot)} ms** (target < 100: "
        f"{'met' if boot < 100 else '**missed**'})"
    )
    med = m(ours, "settled", "images", "median_us")
    ratios.append(
        f"- 1 MiB image log call, settled, goggles_io: median **{_fmt(med)} us**, p99 "
        f"**{_fmt(m(ours, 'settled', 'images', 'p99_us'))} us** (robo-goggles: median "
        f"{_fmt(m(rg, 'settled', 'images', 'median_us'))} us, p99 "
        f"{_fmt(m(rg, 'settled', 'images', 'p99_us'))} us)"
    )
    lines += ratios
    print("\n".join(lines))
    if args.json:
        raw = {"/".join(key): value for key, value in runs.items()}
        Path(args.json).write_text(json.dumps(raw, indent=1))
    print(f"[{time.monotonic() - began:.0f}s in all]", file=sys.stderr)
    if args.markdown:
        cmd = "python3 benchmarks/bus.py " + " ".join(sys.argv[1:])
        section = (
            "## Multi-process transport (`benchmarks/bus.py`)\n\n"
            f"Command: `{cmd.strip()}` · date {datetime.date.today()} · machine: {os.cpu_count()} "
            f"cores, Python {platform.python_version()} · robo-goggles {version('robo-goggles')} · "
            "machine shared with other jobs (not quieted): read the ratios, not the absolute "
            "numbers.\n\n" + "\n".join(lines) + "\n"
        )
        Path(args.markdown).write_text(section)


if __name__ == "__main__":
    main()
