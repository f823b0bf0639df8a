"""The multi-process transport side by side: goggles_io vs robo-goggles vs stdlib QueueHandler.

Peers, each in fresh interpreters with a private socket directory:

* ``goggles_io``              -- default: dedicated host subprocess over the Unix socket.
* ``goggles_io-inprocess``    -- ``GOGGLES_TRANSPORT=inprocess`` (no socket).
* ``robo-goggles``            -- its default, the dedicated host.
* ``robo-goggles-inprocess``  -- ``GOGGLES_DEDICATED_HOST=0``.
* ``stdlib``                  -- ``logging.handlers.QueueHandler`` -> ``QueueListener`` (in-process).

Sinks only count (events and bytes) and write their tally to a file on close, so delivery is
verified. Measured: producer cost of ``scalar`` (median, p99 over ``--calls``), end-to-end
events/s (``--events`` scalars, until ``finish()`` returns), 1 MiB image producer latency and
GB/s end to end (``--images``), ``finish()`` with nothing queued, cold start (first call after
``attach`` in a fresh process), and the host's RSS.

Run: ``python3 benchmarks/bus.py [--calls 20000] [--events 100000] [--images 200] [--markdown PATH]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from importlib.metadata import version
from pathlib import Path
from typing import Any

PEERS = ("goggles_io", "goggles_io-inprocess", "robo-goggles", "robo-goggles-inprocess", "stdlib")
_PEER = os.environ.get("BENCH_PEER", "")
_COUNT_FILE = os.environ.get("BENCH_COUNT_FILE", "")


def _tally(count: int, nbytes: int) -> None:
    if _COUNT_FILE and count:
        with open(_COUNT_FILE, "a") as fh:
            fh.write(f"{count} {nbytes}\n")


# Handler classes live at module level so each peer's host process can import them by name.
if _PEER.startswith("goggles_io"):
    import goggles_io as _gg
    from goggles_io.handlers.base import BaseHandler as _Base

    @_gg.register_handler
    class Counting(_Base):
        """Count events and array bytes; write the tally on close."""

        def open(self) -> None:
            self.count = 0
            self.nbytes = 0

        def handle(self, event: Any) -> None:
            self.count += 1
            self.nbytes += getattr(event.payload, "nbytes", 0)

        def close(self) -> None:
            _tally(self.count, self.nbytes)
            self.count = 0

elif _PEER.startswith("robo-goggles"):
    import goggles as _rg  # benchmark peer only

    class Counting(_rg.ConsoleHandler):  # type: ignore[no-redef]
        """Count events and array bytes; write the tally on close."""

        capabilities = frozenset({"metric", "log", "image"})

        def open(self) -> None:
            self.count = 0
            self.nbytes = 0

        def handle(self, event: Any) -> None:
            self.count = getattr(self, "count", 0) + 1
            self.nbytes = getattr(self, "nbytes", 0) + getattr(event.payload, "nbytes", 0)

        def close(self) -> None:
            _tally(getattr(self, "count", 0), getattr(self, "nbytes", 0))
            self.count = 0

    _rg.register_handler(Counting)


def _percentiles(samples: list[int]) -> dict[str, float]:
    samples.sort()
    return {
        "median_us": statistics.median(samples) / 1e3,
        "p99_us": samples[int(len(samples) * 0.99)] / 1e3,
    }


def _api() -> tuple[Any, Any, Any]:
    """Return ``(attach_counting, scalar(i), image(arr, i), finish)`` for this peer."""
    if _PEER == "stdlib":
        import logging
        import logging.handlers
        import queue

        class StdCounting(logging.Handler):
            count = 0
            nbytes = 0

            def emit(self, record: logging.LogRecord) -> None:
                StdCounting.count += 1
                StdCounting.nbytes += getattr(record.args[1], "nbytes", 0) if record.args else 0

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
            _tally(StdCounting.count, StdCounting.nbytes)
            StdCounting.count = StdCounting.nbytes = 0
            attach()

        return (
            attach,
            (lambda i: log.info("%s %s", "loss", 0.5)),
            (lambda a, i: log.info("%s %s", "img", a.copy())),
            finish,
        )  # type: ignore[return-value]
    gg = _gg if _PEER.startswith("goggles_io") else _rg

    def attach() -> None:
        gg.attach(Counting(name="count"), scopes=["global"])

    log = gg.get_logger("bench", with_metrics=True)
    return (
        attach,
        (lambda i: log.scalar("loss", 0.5, step=i)),
        (lambda a, i: log.image(a, name="img", step=i)),
        gg.finish,
    )  # type: ignore[return-value]


def _host_rss_mib() -> float:
    """RSS of a child process of ours (the dedicated host), 0 when there is none."""
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            status = (stat.parent / "status").read_text()
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    return 0.0


def _worker(mode: str, n: int) -> dict[str, Any]:
    import numpy as np

    t0 = time.perf_counter()
    attach, scalar, image, finish = _api()
    attach()
    out: dict[str, Any] = {}
    if mode == "cold":
        start = time.perf_counter()
        scalar(0)
        out["first_call_ms"] = (time.perf_counter() - start) * 1e3
        out["to_first_call_ms"] = (time.perf_counter() - t0) * 1e3
        finish()
        return out
    clock = time.perf_counter_ns
    if mode == "producer":
        for i in range(2000):
            scalar(i)
        samples = []
        for i in range(n):
            s = clock()
            scalar(i)
            samples.append(clock() - s)
        out = _percentiles(samples)
        finish()
        out["host_rss_mib"] = _host_rss_mib()  # idle host, after its handlers flushed
        # finish() with nothing queued but a live link: a round trip to the host, whose
        # handlers close. (A second finish() right after the first measures nothing.)
        attach()
        scalar(0)
        time.sleep(1.0)  # the attach and the event reach the host; the queue is empty again
        start = time.perf_counter()
        finish()
        out["empty_finish_ms"] = (time.perf_counter() - start) * 1e3
        return out
    if mode == "e2e":
        scalar(0)
        finish()
        attach()
        start = time.perf_counter()
        for i in range(n):
            scalar(i)
        finish()
        out["seconds"] = time.perf_counter() - start
        return out
    arr = np.random.default_rng(0).integers(0, 255, (512, 512, 4), dtype=np.uint8)  # 1 MiB
    image(arr, 0)
    finish()
    attach()
    samples = []
    start = time.perf_counter()
    for i in range(n):
        s = clock()
        image(arr, i)
        samples.append(clock() - s)
    finish()
    out["seconds"] = time.perf_counter() - start
    out.update(_percentiles(samples))
    return out


def _run(peer: str, mode: str, n: int) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="gg-bench-")
    count_file = os.path.join(tmp, "count")
    env = {
        **os.environ,
        "BENCH_PEER": peer,
        "BENCH_COUNT_FILE": count_file,
        "GOGGLES_SOCKET": os.path.join(tmp, "bus.sock"),
        "GOGGLES_HOST_IMPORTS": "bus",
        "PYTHONPATH": os.pathsep.join(
            [str(Path(__file__).parent), os.environ.get("PYTHONPATH", "")]
        ),
    }
    env.pop("GOGGLES_TRANSPORT", None)
    env.pop("GOGGLES_DEDICATED_HOST", None)
    if peer == "goggles_io-inprocess":
        env["GOGGLES_TRANSPORT"] = "inprocess"
    if peer == "robo-goggles-inprocess":
        env["GOGGLES_DEDICATED_HOST"] = "0"
    code = f"import json, bus; print('RESULT', json.dumps(bus._worker({mode!r}, {n})))"
    proc = subprocess.run(
        [sys.executable, "-c", code],
        env=env,
        cwd=Path(__file__).parent,
        capture_output=True,
        text=True,
        timeout=300,
    )
    lines = [x for x in proc.stdout.splitlines() if x.startswith("RESULT ")]
    if not lines:
        msg = f"{peer}/{mode} failed:\n{proc.stdout[-2000:]}\n{proc.stderr[-2000:]}"
        raise RuntimeError(msg)
    result: dict[str, Any] = json.loads(lines[-1][7:])
    deadline = time.monotonic() + 10
    while not os.path.exists(count_file) and time.monotonic() < deadline:
        time.sleep(0.05)
    tallies = Path(count_file).read_text().split() if os.path.exists(count_file) else ["0", "0"]
    result["delivered"] = sum(int(x) for x in tallies[0::2])
    result["delivered_bytes"] = sum(int(x) for x in tallies[1::2])
    return result


def _fmt(x: float) -> str:
    return f"{x:,.2f}" if x < 100 else f"{x:,.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--images", type=int, default=200)
    parser.add_argument("--markdown", help="write the markdown section to this path")
    args = parser.parse_args()
    rows = {}
    for peer in PEERS:
        prod = _run(peer, "producer", args.calls)
        e2e = _run(peer, "e2e", args.events)
        img = _run(peer, "image", args.images)
        cold = _run(peer, "cold", 1)
        rows[peer] = {
            "scalar_median_us": prod["median_us"],
            "scalar_p99_us": prod["p99_us"],
            "events_per_s": e2e["delivered"] / e2e["seconds"],
            "e2e_delivered": e2e["delivered"],
            "image_median_us": img["median_us"],
            "image_p99_us": img["p99_us"],
            # delivered images (minus the warm-up one) x 1 MiB, over the time until finish() returned
            "image_gb_s": max(img["delivered"] - 1, 0) * 2**20 / img["seconds"] / 1e9,
            "images_delivered": img["delivered"],
            "empty_finish_ms": prod["empty_finish_ms"],
            "first_call_ms": cold["first_call_ms"],
            "host_rss_mib": prod["host_rss_mib"],
        }
        print(peer, json.dumps(rows[peer]), flush=True)
    head = (
        "| peer | scalar median (us) | scalar p99 (us) | end-to-end events/s | delivered "
        "| 1 MiB image median (us) | image p99 (us) | images GB/s | images delivered "
        "| empty finish (ms) | first call (ms) | host RSS (MiB) |"
    )
    lines = [head, "|---|" + "---:|" * 11]
    for peer, r in rows.items():
        # 0 = no child host process found (in-process peers; robo-goggles' host is not our child)
        rss = _fmt(r["host_rss_mib"]) if r["host_rss_mib"] else "n/a"
        lines.append(
            f"| {peer} | {_fmt(r['scalar_median_us'])} | {_fmt(r['scalar_p99_us'])} | "
            f"{_fmt(r['events_per_s'])} | {r['e2e_delivered']:,}/{args.events + 1:,} | "
            f"{_fmt(r['image_median_us'])} | {_fmt(r['image_p99_us'])} | {r['image_gb_s']:.2f} | "
            f"{r['images_delivered']}/{args.images + 1} | {_fmt(r['empty_finish_ms'])} | "
            f"{_fmt(r['first_call_ms'])} | {rss} |"
        )
    ours, peer = rows["goggles_io"], rows["robo-goggles"]
    ratios = [
        (
            "scalar producer median, goggles_io / robo-goggles default (target <= 0.3)",
            ours["scalar_median_us"] / peer["scalar_median_us"],
        ),
        (
            "end-to-end events/s, goggles_io / robo-goggles default (target >= 5)",
            ours["events_per_s"] / max(peer["events_per_s"], 1e-9),
        ),
        (
            "1 MiB images GB/s, goggles_io / robo-goggles default (target >= 3)",
            ours["image_gb_s"] / max(peer["image_gb_s"], 1e-12),
        ),
    ]
    lines.append("")
    lines += [f"- {label}: **{value:.2f}x**" for label, value in ratios]
    table = "\n".join(lines)
    print(table)
    if args.markdown:
        cmd = "python3 benchmarks/bus.py " + " ".join(sys.argv[1:])
        section = (
            "## Multi-process transport (`benchmarks/bus.py`)\n\n"
            f"Command: `{cmd}` · date {datetime.date.today()} · machine: {os.cpu_count()} cores, "
            f"Python {platform.python_version()} · robo-goggles {version('robo-goggles')}, "
            f"msgpack {version('msgpack')}, cattrs {version('cattrs')} · machine shared with other "
            "jobs (not quieted): read the ratios, not the absolute numbers.\n\n" + table + "\n"
        )
        Path(args.markdown).write_text(section)


if __name__ == "__main__":
    main()
