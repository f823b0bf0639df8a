"""Producer cost and end-to-end throughput of the in-process logger, side by side.

Peers, each measured in its own fresh interpreter (same script, ``--peer``):

* ``goggles_io``   -- this package, in-process async bus (``GOGGLES_TRANSPORT=inprocess``),
  caller info on.
* ``robo-goggles`` -- ``import goggles``, in-process host (``GOGGLES_DEDICATED_HOST=0``, a private
  ``GOGGLES_SOCKET`` in a temp dir), async.
* ``stdlib``       -- ``logging`` with a ``QueueHandler`` -> ``QueueListener`` (the async stdlib
  setup); ``scalar`` is ``logger.info("%s %s", name, value)``.

Each sink is a handler that only counts. Producer cost: per-call ``perf_counter_ns`` over
``--calls`` calls after a warm-up (median, p99). End-to-end: ``--events`` scalar calls, then
wait for delivery (``finish()`` / ``listener.stop()``); events/s = events / elapsed.

Run: ``python3 benchmarks/logger.py [--calls 20000] [--events 100000] [--markdown PATH]``
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
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

PEERS = ("goggles_io", "robo-goggles", "stdlib")


def _producer(call: Callable[[int], None], calls: int) -> dict[str, float]:
    for i in range(min(2000, calls)):
        call(i)
    samples = []
    clock = time.perf_counter_ns
    for i in range(calls):
        start = clock()
        call(i)
        samples.append(clock() - start)
    samples.sort()
    return {
        "median_us": statistics.median(samples) / 1e3,
        "p99_us": samples[int(len(samples) * 0.99)] / 1e3,
    }


def _goggles_io(calls: int, events: int) -> dict[str, Any]:
    # The in-process bus is what this table compares; the socket transport has benchmarks/bus.py.
    os.environ["GOGGLES_TRANSPORT"] = "inprocess"
    import goggles_io as gg
    from goggles_io.handlers.base import BaseHandler

    class Counting(BaseHandler):
        count = 0

        def handle(self, event: gg.Event) -> None:
            Counting.count += 1

    gg.attach(Counting(name="count"))
    log = gg.get_logger("bench", with_metrics=True)
    out = {
        "scalar": _producer(lambda i: log.scalar("loss", 0.5, step=i), calls),
        "info": _producer(lambda i: log.info("step done"), calls),
    }
    gg.finish()
    Counting.count = 0
    start = time.perf_counter()
    for i in range(events):
        log.scalar("loss", 0.5, step=i)
    gg.finish()
    out["events_per_s"] = Counting.count / (time.perf_counter() - start)
    out["delivered"] = Counting.count
    return out


def _robo_goggles(calls: int, events: int) -> dict[str, Any]:
    tmp = tempfile.mkdtemp(prefix="bench-goggles-")
    os.environ["GOGGLES_DEDICATED_HOST"] = "0"
    os.environ["GOGGLES_SOCKET"] = os.path.join(tmp, "goggles.sock")
    import goggles as gg  # benchmark peer only

    class Counting(gg.ConsoleHandler):
        capabilities = frozenset({"metric", "log"})
        count = 0

        def handle(self, event: Any) -> None:
            Counting.count += 1

    gg.register_handler(Counting)
    gg.attach(Counting(name="count"), scopes=["global"])
    log = gg.get_logger("bench", with_metrics=True)
    out = {
        "scalar": _producer(lambda i: log.scalar("loss", 0.5, step=i), calls),
        "info": _producer(lambda i: log.info("step done"), calls),
    }
    gg.finish()
    gg.attach(Counting(name="count2"), scopes=["global"])
    Counting.count = 0
    start = time.perf_counter()
    for i in range(events):
        log.scalar("loss", 0.5, step=i)
    gg.finish()
    out["events_per_s"] = Counting.count / (time.perf_counter() - start)
    out["delivered"] = Counting.count
    return out


def _stdlib(calls: int, events: int) -> dict[str, Any]:
    import logging
    import logging.handlers
    import queue

    class Counting(logging.Handler):
        count = 0

        def emit(self, record: logging.LogRecord) -> None:
            Counting.count += 1

    def setup() -> logging.handlers.QueueListener:
        q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        log.handlers[:] = [logging.handlers.QueueHandler(q)]
        listener = logging.handlers.QueueListener(q, Counting())
        listener.start()
        return listener

    log = logging.getLogger("bench")
    log.setLevel(logging.INFO)
    log.propagate = False
    listener = setup()
    out = {
        "scalar": _producer(lambda i: log.info("%s %s", "loss", 0.5), calls),
        "info": _producer(lambda i: log.info("step done"), calls),
    }
    listener.stop()
    listener = setup()
    Counting.count = 0
    start = time.perf_counter()
    for _ in range(events):
        log.info("%s %s", "loss", 0.5)
    listener.stop()
    out["events_per_s"] = Counting.count / (time.perf_counter() - start)
    out["delivered"] = Counting.count
    return out


_RUNNERS = {"goggles_io": _goggles_io, "robo-goggles": _robo_goggles, "stdlib": _stdlib}


def _table(results: dict[str, dict[str, Any]]) -> str:
    rows = [
        "| peer | scalar median (us) | scalar p99 (us) | info median (us) | info p99 (us) "
        "| end-to-end events/s | delivered |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for peer in PEERS:
        r = results[peer]
        rows.append(
            f"| {peer} | {r['scalar']['median_us']:.2f} | {r['scalar']['p99_us']:.2f} | "
            f"{r['info']['median_us']:.2f} | {r['info']['p99_us']:.2f} | "
            f"{r['events_per_s']:,.0f} | {r['delivered']:,} |"
        )
    ours, peer = results["goggles_io"], results["robo-goggles"]
    ratios = [
        (
            "scalar median, goggles_io / robo-goggles (target <= 0.5)",
            ours["scalar"]["median_us"] / peer["scalar"]["median_us"],
        ),
        (
            "info median, goggles_io / robo-goggles (target <= 0.5)",
            ours["info"]["median_us"] / peer["info"]["median_us"],
        ),
        (
            "end-to-end events/s, goggles_io / robo-goggles (target >= 2)",
            ours["events_per_s"] / peer["events_per_s"],
        ),
    ]
    rows.append("")
    rows += [f"- {label}: **{value:.2f}x**" for label, value in ratios]
    return "\n".join(rows)


def _missing_peer() -> str | None:
    """One line naming the extra to install when the robo-goggles peer is not importable."""
    try:
        import goggles  # noqa: F401  (benchmark peer only)
    except ImportError:
        return (
            "compares goggles_io with robo-goggles, which is not installed: install the "
            "bench extra (python3 -m pip install -e '.[bench]')"
        )
    return None


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--peer", choices=PEERS, help=argparse.SUPPRESS)
    parser.add_argument("--calls", type=int, default=20_000)
    parser.add_argument("--events", type=int, default=100_000)
    parser.add_argument("--markdown", help="write the markdown section to this path")
    args = parser.parse_args()
    if args.peer:
        print(json.dumps(_RUNNERS[args.peer](args.calls, args.events)))
        return
    missing = _missing_peer()
    if missing:
        print(f"benchmarks/logger.py: {missing}", file=sys.stderr)
        sys.exit(2)
    results = {}
    for peer in PEERS:
        cmd = [
            sys.executable,
            __file__,
            "--peer",
            peer,
            "--calls",
            str(args.calls),
            "--events",
            str(args.events),
        ]
        done = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=600)
        results[peer] = json.loads(done.stdout.strip().splitlines()[-1])
    table = _table(results)
    print(table)
    if args.markdown:
        command = (
            "python3 benchmarks/logger.py "
            + " ".join(
                a for a in sys.argv[1:] if not a.startswith("--markdown") and a != args.markdown
            ).strip()
        )
        text = (
            "## Logger: producer cost and end-to-end throughput (in-process)\n\n"
            f"Command: `{command.strip()}` · date {datetime.date.today().isoformat()} · machine: "
            f"{os.cpu_count()} cores (shared, not quieted) / Python {platform.python_version()} · "
            f"peers: robo-goggles {version('robo-goggles')}, stdlib logging "
            f"(QueueHandler + QueueListener) · {args.calls} calls per producer sample, "
            f"{args.events} events end-to-end, each peer in a fresh interpreter.\n\n"
            f"{table}\n"
        )
        with open(args.markdown, "w") as fh:
            fh.write(text)


if __name__ == "__main__":
    main()
