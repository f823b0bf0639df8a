"""What the columns ``LocalStorageHandler`` keeps beside ``log.jsonl`` cost the sink (ADR 0080).

Two measures, each side in its own fresh process, the sides alternating which goes first:

- **settled**: ``--events`` calls of ``logger.scalar`` (``one``: one metric a call, 10 metrics
  taking turns) or ``logger.scalars``-like dicts (``many``: a dict of 10 metrics a call), then
  ``finish()``; events/s from the first call to ``finish`` returning, through the transport
  (``inprocess``: the bus's worker thread; ``socket``: the dedicated host process);
- **handle**: ``LocalStorageHandler.handle`` called directly on prebuilt events, then ``close``
  (fsync): the sink's own CPU µs per event (``time.process_time``: the machine's other load
  counts less than in wall time).

Run: ``python3 benchmarks/storage_columns.py [--events 200000] [--repeats 5] [--shape one,many]
[--transport inprocess,socket]``
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent
_METRICS = 10


def _settled(out: str, columns: bool, shape: str, events: int) -> float:
    import goggles_io as gg

    gg.attach(gg.LocalStorageHandler(out, name="store", columns=columns))
    log = gg.get_logger("bench", with_metrics=True)
    names = [f"m{i}" for i in range(_METRICS)]
    for i in range(2000):  # warm-up: the handler opened, the host started
        log.scalar(names[i % _METRICS], 0.5, step=i)
    gg.flush()
    start = time.perf_counter()
    if shape == "one":
        for i in range(events):
            log.scalar(names[i % _METRICS], i * 0.001, step=i // _METRICS)
    else:
        for i in range(events):
            log.push({n: i * 0.001 for n in names}, step=i)
    gg.finish()
    return events / (time.perf_counter() - start)


def _handle(out: str, columns: bool, shape: str, events: int) -> float:
    from goggles_io._event.records import Event, Kind
    from goggles_io.handlers.storage import LocalStorageHandler

    names = [f"m{i}" for i in range(_METRICS)]
    t0 = time.time()
    if shape == "one":
        payloads = [{names[i % _METRICS]: i * 0.001} for i in range(events)]
    else:
        payloads = [{n: i * 0.001 for n in names} for i in range(events)]
    batch = [Event(kind=Kind.METRIC, scope="global", payload=p, filepath="train.py", lineno=42,
                   step=i, timestamp=t0 + i * 1e-3, logger="bench", pid=1)
             for i, p in enumerate(payloads)]  # fmt: skip
    handler = LocalStorageHandler(out, columns=columns)
    handler.open()
    start = time.process_time()
    for event in batch:
        handler.handle(event)
    handler.close()
    return (time.process_time() - start) / events * 1e6


def _child() -> None:
    mode, out, columns, shape, events = sys.argv[2:7]
    if mode == "settled":
        got = _settled(out, columns == "1", shape, int(events))
    else:
        got = _handle(out, columns == "1", shape, int(events))
    print("RESULT", json.dumps(got))


def _sample(mode: str, transport: str, columns: bool, shape: str, events: int) -> float:
    with tempfile.TemporaryDirectory(prefix="storage-columns-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(_ROOT / "src"), "GOGGLES_SOCKET": f"{tmp}/g.sock"}
        if transport == "inprocess":
            env["GOGGLES_TRANSPORT"] = "inprocess"
        else:
            env.pop("GOGGLES_TRANSPORT", None)
        cmd = [sys.executable, __file__, "--child", mode, f"{tmp}/run", str(int(columns)),
               shape, str(events)]  # fmt: skip
        done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
        lines = [x for x in done.stdout.splitlines() if x.startswith("RESULT ")]
        if not lines:
            raise RuntimeError(done.stderr[-2000:])
        return float(json.loads(lines[-1][7:]))


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        _child()
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=200_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--shape", default="one,many")
    parser.add_argument("--transport", default="inprocess,socket")
    args = parser.parse_args()
    cells: list[tuple[str, str]] = [("handle", "-")]
    cells += [("settled", t) for t in args.transport.split(",") if t]
    print(f"# {args.events:,} events a sample, medians of {args.repeats}; load: "
          f"{os.getloadavg()[0]:.1f}")  # fmt: skip
    print("| shape | measure | columns off | columns on | on / off |")
    print("|---|---|---:|---:|---:|")
    for shape in [s for s in args.shape.split(",") if s]:
        for mode, transport in cells:
            got: dict[bool, list[float]] = {False: [], True: []}
            for repeat in range(args.repeats):
                order = [False, True] if repeat % 2 == 0 else [True, False]
                for columns in order:
                    got[columns].append(_sample(mode, transport, columns, shape, args.events))
            off, on = (statistics.median(got[c]) for c in (False, True))
            if mode == "handle":
                label, unit = "handle, CPU µs/event", ".2f"
            else:
                label, unit = f"settled {transport}, events/s", ",.0f"
            print(f"| {shape} | {label} | {off:{unit}} | {on:{unit}} | {on / off:.3f} |",
                  flush=True)  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
