"""Runs for the many-runs views (issue 43): seeds of one config, a hyperparameter sweep, curves
logged at two densities. Written as ``RunContext`` runs with ``LocalStorageHandler``'s
``events.jsonl`` lines (the format the dashboard indexes), fast enough for 20 x 100k points.
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from goggles_io.runs import RunContext


def make_run(root: Path, slug: str, config: dict[str, Any] | None = None, **info: Any) -> Path:
    """A closed ``RunContext`` run (no system sampler: these runs are written, not run)."""
    run = RunContext(project="glance", driver="tests", slug=slug, root=root, info=info,
                     system_metrics=False)  # fmt: skip
    if config:
        run.set_config(config)
    run.close()
    return run.dir


def write_points(
    run_dir: Path,
    name: str,
    steps: Sequence[float],
    values: Sequence[float],
    t0: float | None = None,
) -> None:
    """``name`` at ``steps`` as metric lines of ``events.jsonl`` (appended), one second apart."""
    start = time.time() - len(steps) if t0 is None else t0
    key = json.dumps(name)
    with open(run_dir / "events.jsonl", "a", encoding="utf-8") as fh:
        fh.write("".join(
            f'{{"kind": "metric", "scope": "global", "step": {int(s)}, "timestamp": {start + i!r}, '
            f'"logger": "t", "extra": {{}}, "payload": {{{key}: {float(v)!r}}}}}\n'
            for i, (s, v) in enumerate(zip(steps, values, strict=True))
        ))  # fmt: skip


def curve(run_dir: Path, name: str, last: int, every: int, fn: Callable[[float], float]) -> None:
    """``fn(step)`` logged every ``every`` steps up to ``last`` (inclusive)."""
    steps = list(range(0, last + 1, every))
    write_points(run_dir, name, steps, [fn(s) for s in steps])


def seeds(
    root: Path, ends: Sequence[int], level: Callable[[int], float], name: str = "charts/SPS"
) -> list[Path]:
    """One run per seed, ``name`` constant at ``level(seed)`` up to step ``ends[seed]``."""
    out = []
    for seed, end in enumerate(ends):
        run = make_run(root, f"seed{seed}", {"seed": seed, "algo": "ppo"}, group="ppo")
        curve(run, name, end, 10, lambda s, seed=seed: level(seed))
        out.append(run)
    return out


def sweep(root: Path, count: int, points: int = 20) -> list[Path]:
    """``count`` runs over lr (log-spaced), batch size and optimiser, each logging ``loss``
    (which ends lower for lr near 1e-3) and ``return`` (higher likewise)."""
    out = []
    for i in range(count):
        lr = 10 ** (-5 + 4 * ((i * 0.618) % 1))
        batch = (32, 64, 128, 256)[i % 4]
        opt = ("adam", "sgd", "rmsprop")[i % 3]
        quality = math.exp(-((math.log10(lr) + 3) ** 2)) * (1.2 if opt == "adam" else 1.0)
        run = make_run(root, f"sweep{i}", {"lr": lr, "batch": batch, "opt": opt, "seed": i % 5})
        steps = list(range(0, points * 10, 10))
        write_points(run, "loss", steps, [1.0 / (1 + quality * s / 50) for s in steps])
        write_points(run, "return", steps, [quality * 100 * s / steps[-1] for s in steps])
        out.append(run)
    return out
