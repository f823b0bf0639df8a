"""WandBHandler into real wandb (offline), exactly once across host deaths (ADR 0070).

The host runs the W&B sink and is SIGKILLed mid-run, 3 times. Before this change each new host
started a new W&B run (4 runs for one), the rows of batches sent again were logged again, and
the rows W&B's core had not written into its transaction log when the host died were lost
(W&B writes it every 15 s or per 32 KiB block). Now every host resumes the same run (one id,
one folder per host), rows are handed to W&B after a ledger beside its files recorded their
events, the host acknowledges a batch only once W&B wrote its rows, and a rebuilt handler skips
the events whose rows W&B kept: read back from W&B's own files, the run holds every step once,
in order.
"""

from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Any

import pytest

from goggles_io.handlers._wandb_log import count_history
from host_kills import kill_host
from support import wait_until
from wandb_reader import read_resumed_history

pytest.importorskip("wandb")

_KILLS = 3


def _rows_written(root: Path, hosts: int) -> int:
    """Rows W&B wrote into the run's files, once the current host (of ``hosts``) has one."""
    files = list(root.glob("wandb/offline-run-*/run-*.wandb"))
    return sum(map(count_history, files)) if len(files) >= hosts else 0


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_wandb_run_holds_every_step_once_in_order_across_host_kills(
    bus: Any, finished: Any
) -> None:
    """3 host SIGKILLs at seeded moments during 12,000 scalars: one W&B run (one id), read back
    from every folder its hosts wrote, holds steps 0..11,999 once each, in order."""
    seed = int(os.environ.get("GOGGLES_CHAOS_SEED") or random.SystemRandom().randrange(1 << 32))
    print(f"\nwandb chaos seed: {seed}")
    rng = random.Random(seed)
    events = 12_000
    root = bus.root / "wb"
    marks = sorted(rng.sample(range(events // 20, events * 8 // 10), _KILLS))
    env = {"WANDB_SILENT": "true", "WANDB_MODE": "offline"}
    proc = bus.run("wandb_producer.py", root, events, **env)
    assert proc.stdout is not None and proc.stdin is not None
    first = proc.stdout.readline()
    assert first.startswith("{"), first + (proc.stderr.read() if proc.stderr else "")
    resume_id = json.loads(first)["resume_id"]
    assert "ready" == proc.stdout.readline().strip()
    proc.stdin.write("go\n")
    proc.stdin.flush()
    killed: list[int] = []
    for mark in marks:
        wait_until(
            lambda m=mark: _rows_written(root, len(killed) + 1) >= m or proc.poll() is not None,
            timeout_s=300,
            what=f"{mark} rows in W&B's files",
        )
        if proc.poll() is not None:
            break
        time.sleep(rng.uniform(0.0, 0.2))
        killed.append(kill_host(bus, killed))
    stdout, stderr = finished(proc, timeout_s=400)
    report = json.loads(stdout.strip().splitlines()[-1])
    history = read_resumed_history(root, resume_id or "*")  # before ADR 0070: every run
    steps = [row.get("step") for row in history]
    folders = sorted(p.name for p in root.glob("wandb/offline-run-*"))
    ids = {name.split("-")[3] for name in folders}
    summary = {
        "seed": seed,
        "kills": len(killed),
        "folders": len(folders),
        "run ids": sorted(ids),
        "rows": len(steps),
        "distinct": len(set(steps)),
        "missing": len(set(range(events)) - set(steps)),
        "in order": steps == list(range(events)),
        "values wrong": sum(row.get("x") != row.get("step") for row in history),
        "report": report,
    }
    print(f"wandb exactly once: {json.dumps(summary)}")
    assert _KILLS == len(set(killed)), (summary, stderr[-3000:])
    assert ([resume_id], _KILLS + 1) == (summary["run ids"], len(folders)), summary  # one run
    assert (events, events, 0, True, 0) == (
        summary["rows"],
        summary["distinct"],
        summary["missing"],
        summary["in order"],
        summary["values wrong"],
    ), summary
    delivered, dropped, errors, logged, losses = report["wandb"]
    assert (events, 0, 0, events, {}) == (delivered, dropped, errors, logged, losses), summary
    assert ({}, False) == (report["transport"], report["timed_out"]), summary
