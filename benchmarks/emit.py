"""Cost of ``emit`` next to the stdlib ``logging`` call it replaces, measured side by side.

Run: ``python3 benchmarks/emit.py [--calls 200000] [--repeats 7]``

Each pair is timed in alternation, in ten chunks per repetition, so machine noise hits both
sides alike. The markdown table shows the median ns per call over the repetitions, the
ratio ours/stdlib, and the same ratio after subtracting the empty-loop cost from both
sides (stricter; the targets are judged on it). Exits 1 if a target is missed.
"""

from __future__ import annotations

import argparse
import datetime
import logging
import logging.handlers
import os
import platform
import queue
import statistics
import sys
import time
from collections.abc import Callable

import attrs

import runtime_telemetry as rt
from runtime_telemetry.events import LearningModuleStep

_CHUNKS = 10
TARGETS = {"disabled": 1.5, "one subscriber": 1.5}


class NoOpSubscriber(rt.Subscriber):
    def on_event(self, schema: rt.TelemetrySchema) -> None:
        pass


class NoOpThreaded(rt.ThreadedSubscriber):
    def on_event(self, schema: rt.TelemetrySchema) -> None:
        pass


class NoOpHandler(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        pass


def _time_loop(call: Callable[[], object], calls: int) -> float:
    """ns per call of ``calls`` back-to-back calls."""
    start = time.perf_counter_ns()
    for _ in range(calls):
        call()
    return (time.perf_counter_ns() - start) / calls


def _stdlib_logger(name: str, level: int, handler: logging.Handler | None) -> logging.Logger:
    logger = logging.getLogger(name)
    logger.setLevel(level)
    logger.propagate = False
    logger.handlers.clear()
    logger.addHandler(handler or logging.NullHandler())
    return logger


def _nothing() -> None:
    pass


Result = tuple[str, str, list[float], list[float], list[float]]


def _bench_pairs(calls: int, repeats: int) -> list[Result]:
    event = LearningModuleStep(lm_id="lm_0", step=1, possible_matches=("mug", "bowl"))
    rt.configure({"telemetry": "WARNING", "telemetry.bench.on": "INFO"})

    off = rt.get_telemetry("bench.off")
    std_off = _stdlib_logger("stdbench.off", logging.WARNING, None)

    on = rt.get_telemetry("bench.on")
    subscriber = NoOpSubscriber().subscribe("telemetry.bench.on")
    std_on = _stdlib_logger("stdbench.on", logging.INFO, NoOpHandler())

    threaded_emitter = rt.get_telemetry("bench.threaded")
    rt.configure({"telemetry.bench.threaded": "INFO"})
    threaded = NoOpThreaded(queue_size=calls + 1).subscribe("telemetry.bench.threaded")
    std_queue: queue.SimpleQueue[logging.LogRecord] = queue.SimpleQueue()
    std_threaded = _stdlib_logger(
        "stdbench.threaded", logging.INFO, logging.handlers.QueueHandler(std_queue)
    )
    listener = logging.handlers.QueueListener(std_queue, NoOpHandler())
    listener.start()

    pairs: list[tuple[str, Callable[[], object], str, Callable[[], object]]] = [
        ("disabled", lambda: off.emit(event), "logger.debug", lambda: std_off.debug("step")),
        (
            "one subscriber",
            lambda: on.emit(event),
            "logger.info",
            lambda: std_on.info("step"),
        ),
        (
            "ThreadedSubscriber (producer)",
            lambda: threaded_emitter.emit(event),
            "QueueHandler (producer)",
            lambda: std_threaded.info("step"),
        ),
    ]
    results = []
    for name, ours, std_name, std in pairs:
        ours_ns: list[float] = []
        std_ns: list[float] = []
        loop_ns: list[float] = []
        chunk = calls // _CHUNKS
        for _ in range(repeats):
            # Alternate in chunks within a repetition, so a burst of load hits both sides.
            ours_sum = std_sum = loop_sum = 0.0
            for _ in range(_CHUNKS):
                ours_sum += _time_loop(ours, chunk)
                std_sum += _time_loop(std, chunk)
                loop_sum += _time_loop(_nothing, chunk)
                threaded.flush(timeout=None)
            ours_ns.append(ours_sum / _CHUNKS)
            std_ns.append(std_sum / _CHUNKS)
            loop_ns.append(loop_sum / _CHUNKS)
        results.append((name, std_name, ours_ns, std_ns, loop_ns))
    listener.stop()
    threaded.close(timeout=None)
    subscriber.close()
    if threaded.dropped:
        print(f"warning: ThreadedSubscriber dropped {threaded.dropped} events", file=sys.stderr)
    return results


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=200_000, help="calls per repetition")
    parser.add_argument("--repeats", type=int, default=7, help="repetitions (median is shown)")
    args = parser.parse_args(argv)

    event_ns = statistics.median(
        _time_loop(
            lambda: LearningModuleStep(lm_id="lm_0", step=1, possible_matches=("mug",)),
            args.calls,
        )
        for _ in range(args.repeats)
    )
    results = _bench_pairs(args.calls, args.repeats)

    lines = [
        "| case | ours ns/call (min–max) | stdlib peer | peer ns/call (min–max) "
        "| empty loop ns | ratio | ratio net of loop | target (net) |",
        "|---|---:|---|---:|---:|---:|---:|---|",
    ]
    failed = False
    for name, std_name, ours_ns, std_ns, loops_ns in results:
        ours_med, std_med = statistics.median(ours_ns), statistics.median(std_ns)
        loop_ns = statistics.median(loops_ns)
        ratio = ours_med / std_med
        net = (ours_med - loop_ns) / (std_med - loop_ns)
        target = TARGETS.get(name)
        verdict = "–"
        if target is not None:
            verdict = f"<= {target}x " + ("met" if net <= target else "MISSED")
            failed |= net > target
        lines.append(
            f"| emit, {name} | {ours_med:,.0f} ({min(ours_ns):,.0f}–{max(ours_ns):,.0f}) "
            f"| `{std_name}` | {std_med:,.0f} ({min(std_ns):,.0f}–{max(std_ns):,.0f}) "
            f"| {loop_ns:,.0f} | {ratio:.2f}x | {net:.2f}x | {verdict} |"
        )
    print(f"benchmarks/emit.py, {datetime.date.today().isoformat()}: Python "
          f"{platform.python_version()} ({platform.machine()}, {os.cpu_count()} cores), "
          f"attrs {attrs.__version__}; {args.calls:,} calls x {args.repeats} repetitions, medians.")  # fmt: skip
    print(f"The empty loop (timed alongside) is inside every figure; building the "
          f"LearningModuleStep ({event_ns:,.0f} ns) is outside them.\n")  # fmt: skip
    print("\n".join(lines))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
