"""Exactly once per sink across host deaths, in order (issue 41, "Must show").

The dedicated host is SIGKILLed 5 times, at random moments drawn from a seed, while a run logs
300,000 scalars and 150 x 1 MiB images into a ``RunContext`` with a ``LocalStorageHandler``, a
``CsvHandler`` and a custom host-side handler (``scripts/sequenced_sink.py``, written with the
library's helpers). Every sink must then hold every event exactly once, in the order logged,
each image byte for byte; and the FinishReport and ``run.kv`` must say what the files hold.

Beside it, the same with every built-in sink (ADR 0069, 0070), smaller for CI time: 30,000
scalars and 30 images into JSONL, CSV, the custom sink, ``WandBHandler`` (real wandb offline,
its resumed run read back from W&B's own files) and ``RemoteHandler`` (a real collector on
127.0.0.1), 5 host kills.

The seed is fresh on every run and printed (``GOGGLES_CHAOS_SEED`` replays one;
``GOGGLES_CHAOS_KEEP=<dir>`` keeps the run folder and the host's log there);
``tests/goggles_io/scripts/exactly_once_chaos.py`` runs these tests 10 times in a row.
"""

from __future__ import annotations

import contextlib
import csv
import importlib.util
import json
import os
import random
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from goggles_io.runs import read_kv
from host_kills import kill_host
from support import wait_until
from wandb_reader import read_resumed_history

SCRIPTS = Path(__file__).parent / "scripts"
_SCALARS = 300_000
_IMAGES = 150
_KILLS = 5
_EVENTS = _SCALARS + _IMAGES


def _recording_sink() -> Any:
    """The scripts' ``recording_sink`` module: the images and their checksum."""
    spec = importlib.util.spec_from_file_location("recording_sink", SCRIPTS / "recording_sink.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Lines:
    """Counts the complete lines of a growing file, reading only what was appended."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._offset = 0
        self._lines = 0

    def __call__(self) -> int:
        with contextlib.suppress(FileNotFoundError), open(self.path, "rb") as fh:
            fh.seek(self._offset)
            chunk = fh.read()
            end = chunk.rfind(b"\n") + 1
            self._lines += chunk.count(b"\n", 0, end)
            self._offset += end
        return self._lines


def _read_line(proc: subprocess.Popen[str]) -> str:
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line:
        proc.kill()
        out, err = proc.communicate(timeout=30)
        raise AssertionError(f"the producer ended early\nstdout:\n{out}\nstderr:\n{err}")
    return line.strip()


def _in_order(keys: list[tuple[str, int]]) -> tuple[int, int, list[Any]]:
    """``(duplicates, steps out of order, first problems)`` of a sink's ``(kind, step)`` list."""
    seen: set[tuple[str, int]] = set()
    last: dict[str, int] = {}
    dups = disorder = 0
    first: list[Any] = []
    for key in keys:
        kind, step = key
        if key in seen:
            dups += 1
            if len(first) < 5:
                first.append(("twice", key))
        seen.add(key)
        if step < last.get(kind, -1):
            disorder += 1
            if len(first) < 5:
                first.append(("after", last[kind], key))
        last[kind] = max(step, last.get(kind, -1))
    return dups, disorder, first


def _expected(scalars: int = _SCALARS, images: int = _IMAGES) -> list[tuple[str, int]]:
    every = scalars // images
    keys: list[tuple[str, int]] = []
    for i in range(scalars):
        keys.append(("metric", i))
        if i % every == every - 1:
            keys.append(("image", i // every))
    return keys


def _sink_summary(name: str, keys: list[tuple[str, int]], expected: set[Any]) -> dict[str, Any]:
    dups, disorder, first = _in_order(keys)
    missing = sorted(expected - set(keys))
    return {
        "sink": name,
        "events": len(keys),
        "missing": len(missing),
        "first missing": missing[:5],
        "duplicates": dups,
        "out of order": disorder,
        "first problems": first,
    }


def _storage(run_dir: Path) -> tuple[list[tuple[str, int]], list[str]]:
    """``log.jsonl``'s ``(kind, step)`` per line, and each image line's file."""
    keys, files = [], []
    with open(run_dir / "log.jsonl", encoding="utf-8") as fh:
        for raw in fh:
            rec = json.loads(raw)
            keys.append((rec["kind"], rec["step"]))
            if rec["kind"] == "image":
                files.append(rec["payload"])
    return keys, files


def _table(run_dir: Path) -> tuple[list[tuple[str, int]], int]:
    """``metrics.csv``'s ``("metric", step)`` per row, and rows whose value is not their step."""
    keys, wrong = [], 0
    with open(run_dir / "metrics.csv", encoding="utf-8", newline="") as fh:
        rows = csv.reader(fh)
        header = next(rows)
        x = header.index("x")
        for row in rows:
            step = int(row[0])
            keys.append(("metric", step))
            wrong += float(row[x]) != float(step)
    return keys, wrong


def _custom(run_dir: Path) -> tuple[list[tuple[str, int]], list[int]]:
    keys, bad = [], []
    sink = _recording_sink()
    with open(run_dir / "custom.jsonl", encoding="utf-8") as fh:
        for raw in fh:
            rec = json.loads(raw)
            keys.append((rec["k"], rec["i"]))
            if rec["k"] == "image" and rec["crc"] != sink.image_checksum(sink.make_image(rec["i"])):
                bad.append(rec["i"])
    return keys, bad


def _bad_images(run_dir: Path, files: list[str]) -> list[Any]:
    """Image files that are not the logged pixels, and image files no line names."""
    from PIL import Image

    make_image = _recording_sink().make_image
    bad: list[Any] = []
    for name in files:
        step = int(Path(name).stem.rsplit("_", 1)[1])
        with Image.open(run_dir / name) as img:
            pixels = np.asarray(img)
        if not np.array_equal(pixels, make_image(step)):
            bad.append(name)
    on_disk = {p.relative_to(run_dir).as_posix() for p in (run_dir / "images").rglob("*.*")}
    bad += sorted(on_disk - set(files))  # a second copy (img_7-1.png) or an orphan
    return bad


def _wandb(run_dir: Path, resume_id: str) -> list[tuple[str, int]]:
    """The W&B run's rows as ``(kind, step)``, read back from every folder its hosts wrote."""
    keys = []
    for row in read_resumed_history(run_dir, resume_id or "*"):  # "*": before ADR 0070
        image = "img/_type" in row  # an image's entry comes back flattened (img/path, ...)
        keys.append(("image" if image else "metric", int(row["step"])))
    return keys


def _remote(collector: Any, run_id: str) -> list[tuple[str, int]]:
    """The collector's points of the run as ``("metric", step)``, in its seq order."""
    return [("metric", int(p["step"])) for p in collector.store.points(run_id)]


def _chaos(
    bus: Any,
    finished: Any,
    capsys: pytest.CaptureFixture[str],
    scalars: int,
    images: int,
    collector: Any = None,
) -> None:
    """Run the chaos producer (with the remote and W&B sinks when ``collector`` is given),
    kill its host 5 times at seeded moments, and check every sink and the report."""
    seed = int(os.environ.get("GOGGLES_CHAOS_SEED") or random.SystemRandom().randrange(1 << 32))
    with capsys.disabled():  # in the CI log whether the test passes or not
        print(f"\nexactly-once chaos seed: {seed} (GOGGLES_CHAOS_SEED={seed} replays it)")
    rng = random.Random(seed)
    events = scalars + images
    # Kill when log.jsonl holds this many lines (a moment in the run), then after a few ms.
    marks = sorted(rng.sample(range(events // 50, events * 9 // 10), _KILLS))
    delays = [rng.uniform(0.0, 0.05) for _ in range(_KILLS)]
    bus.env.pop("GOGGLES_SHUTDOWN_TIMEOUT", None)  # default settings
    extra = [] if collector is None else [collector.url, "wandb"]
    env = {"GOGGLES_HOST_IMPORTS": "sequenced_sink", "WANDB_SILENT": "true"}
    proc = bus.run("exactly_once_producer.py", bus.root / "runs", scalars, images, *extra, **env)
    head = json.loads(_read_line(proc))
    run_dir = Path(head["run_dir"])
    assert "ready" == _read_line(proc)
    assert proc.stdin is not None
    proc.stdin.write("go\n")
    proc.stdin.flush()
    lines = _Lines(run_dir / "log.jsonl")
    killed: list[int] = []
    at: list[int] = []
    for mark, delay in zip(marks, delays, strict=True):
        wait_until(
            lambda m=mark: lines() >= m or proc.poll() is not None,
            timeout_s=300,
            what=f"{mark} lines written",
        )
        if proc.poll() is not None:
            break  # the producer ended first: the checks below say why
        time.sleep(delay)  # a seeded moment after the mark: lands anywhere in the pipeline
        killed.append(kill_host(bus, killed))
        at.append(lines())
    stdout, stderr = finished(proc, timeout_s=400)
    report = json.loads(stdout.strip().splitlines()[-1])
    wait_until(lambda: not bus.host_alive(), timeout_s=60, what="the last host gone")

    expected = _expected(scalars, images)
    storage, files = _storage(run_dir)
    table, wrong_values = _table(run_dir)
    custom, bad_crc = _custom(run_dir)
    metrics = {k for k in expected if k[0] == "metric"}
    held = {"storage": storage, "csv": table, "custom": custom}
    want = {"storage": set(expected), "csv": metrics, "custom": set(expected)}
    if collector is not None:
        held["wandb"], want["wandb"] = _wandb(run_dir, head["resume_id"]), set(expected)
        held["remote"], want["remote"] = _remote(collector, head["run_id"]), metrics
    sinks = [_sink_summary(name, keys, want[name]) for name, keys in held.items()]
    bad_images = _bad_images(run_dir, files)
    kv = read_kv(run_dir / "run.kv")
    summary = {
        "seed": seed,
        "kill marks": marks,
        "lines at the kills": at,
        "sinks": sinks,
        "bad images": bad_images[:5],
        "wrong csv values": wrong_values,
        "bad custom crc": bad_crc[:5],
        "report": report,
        "run.kv": {k: kv.get(k) for k in ("status", "lost")},
    }
    print(f"exactly-once chaos: {json.dumps(summary)}")
    keep = os.environ.get("GOGGLES_CHAOS_KEEP")  # a folder to copy the run and host log into
    if keep:
        shutil.copytree(bus.root, Path(keep) / f"seed-{seed}", dirs_exist_ok=True)

    assert len(set(killed)) == _KILLS, summary
    for sink in sinks:
        assert (0, 0, 0) == (sink["missing"], sink["duplicates"], sink["out of order"]), (
            summary,
            stderr[-4000:],
        )
    assert ([], 0, []) == (bad_images, wrong_values, bad_crc), summary
    # The report equals the files: each handler delivered exactly what its sink holds (events;
    # for the remote sink, the points of its events: one each), of as many logged, nothing
    # dropped or lost; run.kv agrees.
    for name, keys in held.items():
        delivered, dropped, errors, of, losses = report["handlers"][name]
        logged = len(want[name])
        assert (len(keys), 0, 0, logged, {}) == (delivered, dropped, errors, of, losses), summary
    assert ({}, 0, 0, False) == (
        report["transport"],
        report["dropped"],
        report["missing"],
        report["timed_out"],
    ), summary
    assert ("done", "0") == (kv.get("status"), str(kv.get("lost"))), summary


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_sink_holds_every_event_once_in_order_across_five_host_kills(
    bus: Any, finished: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """5 host SIGKILLs at seeded random moments during 300,000 scalars and 150 images: each
    sink holds every event once, in order; images intact; the report equals the files."""
    _chaos(bus, finished, capsys, _SCALARS, _IMAGES)


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_every_builtin_sink_holds_every_event_once_in_order_across_five_host_kills(
    bus: Any, finished: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The same with W&B (offline, read back) and a real collector too, 30,000 scalars and 30
    images: every sink, W&B's run and the collector's included, holds every event once, in
    order; the report equals what each holds."""
    pytest.importorskip("wandb")
    from goggles_io.server.collector import Collector

    with Collector(db_path=str(tmp_path / "collector.sqlite")) as collector:
        _chaos(bus, finished, capsys, 30_000, 30, collector)
