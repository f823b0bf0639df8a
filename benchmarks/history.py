"""Jitted history update cost vs window length T: ring layout, shift layout, robo-goggles.

Each variant runs ``h = update(h, new)`` under ``jax.jit`` with the history donated (so XLA may
update in place), timing each call to ``block_until_ready``; medians and p99 after warm-up.

    python benchmarks/history.py [--quick] [--out results.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import time
from collections.abc import Callable
from importlib.metadata import version
from typing import Any

import jax
import jax.numpy as jnp

from goggles_io.history import HistorySpec, create_history, update_history

B, SHAPE = 32, (64,)
LENGTHS = (100, 1000, 10000)


def time_calls(update: Callable[[Any, Any], Any], history: Any, new: Any, reps: int) -> list[float]:
    """Per-call seconds of ``history = update(history, new)``, after three warm-up calls."""
    for _ in range(3):
        history = jax.block_until_ready(update(history, new))
    samples = []
    for _ in range(reps):
        t0 = time.perf_counter()
        history = jax.block_until_ready(update(history, new))
        samples.append(time.perf_counter() - t0)
    return samples


def variants(length: int) -> dict[str, tuple[Callable[[Any, Any], Any], Any, Any]]:
    config = {"obs": {"length": length, "shape": SHAPE, "dtype": jnp.float32}}
    spec = HistorySpec.from_config(config)
    new = jnp.ones((B, 1, *SHAPE), jnp.float32)
    ours = jax.jit(lambda h, n: update_history(h, {"obs": n}), donate_argnums=0)
    out = {
        "ring": (ours, create_history(spec, B, layout="ring"), new),
        "shift": (ours, create_history(spec, B, layout="shift"), new),
    }
    try:
        from goggles.history import HistorySpec as PeerSpec
        from goggles.history import create_history as peer_create
        from goggles.history import update_history as peer_update
    except ImportError:
        return out
    peer = jax.jit(lambda h, n: peer_update(h, {"obs": n}), donate_argnums=0)
    out["robo-goggles"] = (peer, peer_create(PeerSpec.from_config(config), B), new)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    parser.add_argument("--out", help="write the results as JSON to this file")
    args = parser.parse_args()
    reps = 20 if args.quick else 100
    device = jax.devices()[0]
    print(f"# history update, B={B}, shape={SHAPE}, float32, device={device.platform}, reps={reps}")
    print(f"{'T':>6} {'variant':>13} {'median_us':>10} {'p99_us':>10} {'vs ring':>8}")
    rows = []
    for length in LENGTHS:
        medians = {}
        for name, (update, history, new) in variants(length).items():
            samples = sorted(time_calls(update, history, new, reps))
            median = statistics.median(samples)
            p99 = samples[min(len(samples) - 1, int(0.99 * len(samples)))]
            medians[name] = median
            rows.append({"T": length, "variant": name, "median_s": median, "p99_s": p99})
        for row in rows[-len(medians) :]:
            ratio = row["median_s"] / medians["ring"]
            row["vs_ring"] = ratio
            print(
                f"{length:>6} {row['variant']:>13} {row['median_s'] * 1e6:>10.1f} "
                f"{row['p99_s'] * 1e6:>10.1f} {ratio:>7.1f}x"
            )
    ring = {r["T"]: r["median_s"] for r in rows if r["variant"] == "ring"}
    print(f"# ring T={LENGTHS[-1]} / T={LENGTHS[0]}: {ring[LENGTHS[-1]] / ring[LENGTHS[0]]:.2f}x")
    if args.out:
        meta = {
            "device": str(device),
            "python": platform.python_version(),
            "jax": version("jax"),
            "robo-goggles": _peer_version(),
            "B": B,
            "shape": list(SHAPE),
            "reps": reps,
        }
        with open(args.out, "w") as fh:
            json.dump({"meta": meta, "results": rows}, fh, indent=2)


def _peer_version() -> str | None:
    try:
        return version("robo-goggles")
    except Exception:
        return None


if __name__ == "__main__":
    main()
