"""Per-call cost of the compat loggers beside the libraries they stand in for, in one run.

Variants, each in a fresh interpreter per repeat (same script, ``--variant``), each logging one
scalar per call (``{"loss": v}`` at step i):

* ``compat wandb.log``       -- ``goggles_io.compat.wandb`` (default dedicated-host transport).
* ``wandb offline log``      -- real ``wandb`` with ``WANDB_MODE=offline`` in a private temp dir.
* ``tensorboardX add_scalar``-- ``tensorboardX.SummaryWriter`` (default ``flush_secs=120``).
* ``compat add_scalar``      -- ``goggles_io.compat.tensorboard.SummaryWriter``, when importable.

Per-call cost: ``perf_counter_ns`` around each of ``--calls`` calls after a 1,000-call warm-up
(median and p99 of the calls; the table shows the median over ``--repeats`` processes of each).
``close`` is the time of ``finish()`` / ``close()`` after the loop. Delivered: the points read back
from what each wrote after it closed (goggles_io: ``open_run``; W&B: the offline ``.wandb``
file's history records; tensorboardX: ``tensorboard``'s event file loader), over those logged.

Run: ``python3 benchmarks/compat.py [--calls 20000] [--repeats 5]``
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import struct
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

VARIANTS = ("compat-wandb", "wandb-offline", "tensorboardX", "compat-tensorboard")
LABELS = {
    "compat-wandb": "compat `wandb.log`",
    "wandb-offline": "wandb offline `wandb.log`",
    "tensorboardX": "tensorboardX `add_scalar`",
    "compat-tensorboard": "compat `SummaryWriter.add_scalar`",
}
_WARMUP = 1000


def _timed(call: Callable[[int], None], calls: int) -> list[int]:
    for i in range(_WARMUP):
        call(i)
    clock = time.perf_counter_ns
    samples = []
    for i in range(_WARMUP, _WARMUP + calls):
        start = clock()
        call(i)
        samples.append(clock() - start)
    return samples


def _wandb_points(root: Path) -> int:
    """History rows holding ``loss`` in the offline run file, once it holds its ``exit`` record
    (wandb-core finishes writing it after ``finish()`` returned)."""
    deadline = time.monotonic() + 120
    while True:
        found, complete = _wandb_records(root)
        if complete or time.monotonic() > deadline:
            return found
        time.sleep(0.1)


def _wandb_records(root: Path) -> tuple[int, bool]:
    from wandb.proto import wandb_internal_pb2 as pb

    paths = list(root.glob("wandb/offline-run-*/run-*.wandb"))
    if not paths:
        return 0, False
    data, pos, chunks, found, complete = paths[0].read_bytes(), 7, b"", 0, False
    while pos + 7 <= len(data):
        if 32768 - pos % 32768 < 7:
            pos += 32768 - pos % 32768
            continue
        _crc, length, kind = struct.unpack("<IHB", data[pos : pos + 7])
        chunks += data[pos + 7 : pos + 7 + length]
        pos += 7 + length
        if kind in (1, 4):
            record = pb.Record()
            try:
                record.ParseFromString(chunks)
            except Exception:  # the record being written
                return found, False
            chunks = b""
            kind_of = record.WhichOneof("record_type")
            if kind_of == "history":
                found += any("loss" in (item.key, *item.nested_key) for item in record.history.item)
            complete = complete or kind_of == "exit"
    return found, complete


def _tfevents_points(logdir: Path) -> int:
    from tensorboard.backend.event_processing.event_file_loader import EventFileLoader

    found = 0
    for path in logdir.rglob("events.out.tfevents.*"):
        for event in EventFileLoader(str(path)).Load():
            found += sum(1 for v in event.summary.value if v.tag == "loss")
    return found


def _goggles_points(root: Path) -> int:
    from goggles_io.runs import find_runs, open_run

    return sum(len(open_run(p).series("loss")) for p in find_runs(root) if p.is_dir())


def _variant(name: str, calls: int, work: Path) -> dict[str, Any]:
    """Measure one variant in this process: per-call samples, close time, points read back."""
    if name == "compat-wandb":
        import goggles_io.compat.wandb as wandb

        wandb.init(project="bench", dir=work / "runs")
        samples = _timed(lambda i: wandb.log({"loss": i * 1e-3}, step=i), calls)
        t0 = time.perf_counter()
        wandb.finish()
        closed = time.perf_counter() - t0
        points = _goggles_points(work / "runs")
    elif name == "wandb-offline":
        os.environ.update(WANDB_MODE="offline", WANDB_SILENT="true", WANDB_DIR=str(work))
        import wandb

        wandb.init(project="bench", dir=str(work))
        samples = _timed(lambda i: wandb.log({"loss": i * 1e-3}, step=i), calls)
        t0 = time.perf_counter()
        wandb.finish()
        closed = time.perf_counter() - t0
        points = _wandb_points(work)
    elif name in ("tensorboardX", "compat-tensorboard"):
        if name == "tensorboardX":
            from tensorboardX import SummaryWriter
        else:
            from goggles_io.compat.tensorboard import SummaryWriter  # type: ignore[import-not-found]
        writer = SummaryWriter(str(work / "tb" / "bench"))
        samples = _timed(lambda i: writer.add_scalar("loss", i * 1e-3, i), calls)
        t0 = time.perf_counter()
        writer.close()
        closed = time.perf_counter() - t0
        points = _tfevents_points(work / "tb")
        if name == "compat-tensorboard":
            points = _goggles_points(work / "tb") + _goggles_points(work / "tb" / "bench")
    else:
        raise SystemExit(f"unknown variant {name!r}; one of {VARIANTS}")
    samples.sort()
    return {
        "median_us": statistics.median(samples) / 1e3,
        "p99_us": samples[int(len(samples) * 0.99)] / 1e3,
        "close_s": closed,
        "logged": calls + _WARMUP,
        "delivered": points,
    }


def _available(name: str) -> str | None:
    """Why ``name`` cannot run here, or ``None``."""
    import importlib.util

    module = {"wandb-offline": "wandb", "tensorboardX": "tensorboardX",
              "compat-tensorboard": "goggles_io.compat.tensorboard"}.get(name)  # fmt: skip
    try:
        if module is not None and importlib.util.find_spec(module) is None:
            return f"{module} not importable"
    except ModuleNotFoundError:
        return f"{module} not importable"
    return None


def _spawn(name: str, calls: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-compat-") as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GOGGLES_", "WANDB_"))}
        done = subprocess.run(
            [sys.executable, __file__, "--variant", name, "--calls", str(calls), "--work", tmp],
            capture_output=True, text=True, timeout=900, env=env, check=False, cwd=tmp,
        )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"{name} failed:\n{done.stderr[-3000:]}")
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


def _ver(dist: str) -> str:
    try:
        return version(dist)
    except PackageNotFoundError:
        return "n/a"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=20000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--variant", choices=VARIANTS)
    parser.add_argument("--work")
    args = parser.parse_args()
    if args.variant:
        print(json.dumps(_variant(args.variant, args.calls, Path(args.work))))
        return
    rows, skipped = [], []
    for name in VARIANTS:
        why = _available(name)
        if why:
            skipped.append(f"{LABELS[name]}: {why}")
            continue
        runs = [_spawn(name, args.calls) for _ in range(args.repeats)]
        rows.append((name, runs))
    today = datetime.date.today().isoformat()
    print(
        f"benchmarks/compat.py, {today}: Python {platform.python_version()} "
        f"({platform.machine()}, {os.cpu_count()} cores); wandb {_ver('wandb')}, "
        f"tensorboardX {_ver('tensorboardX')}; {args.calls:,} timed calls after a "
        f"{_WARMUP:,}-call warm-up, {args.repeats} fresh processes per variant; medians over "
        "the processes (min-max in brackets).\n"
    )
    print("| variant | median µs/call | p99 µs/call | close s | delivered / logged |")
    print("|---|---|---|---|---|")
    for name, runs in rows:
        cells = []
        for key, fmt in (("median_us", "{:.2f}"), ("p99_us", "{:.1f}"), ("close_s", "{:.2f}")):
            values = [r[key] for r in runs]
            cells.append(
                f"{fmt.format(statistics.median(values))} "
                f"({fmt.format(min(values))}–{fmt.format(max(values))})"
            )
        delivered = sorted({f"{r['delivered']:,} / {r['logged']:,}" for r in runs})
        print(f"| {LABELS[name]} | {' | '.join(cells)} | {', '.join(delivered)} |")
    for line in skipped:
        print(f"\nnot measured: {line}")


if __name__ == "__main__":
    main()
