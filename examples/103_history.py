"""Device-resident histories: track states and rewards on device inside a jitted loop (CPU is fine).

Run: python examples/103_history.py
"""

from __future__ import annotations

import tempfile
from pathlib import Path

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # one line that says what to install, not a traceback
    raise SystemExit(
        "103_history.py needs jax: pip install -e '.[jax]' (or pip install 'split-telemetry[jax]')"
    ) from None

import goggles_io as gg
from goggles_io.history import (
    HistorySpec,
    create_history,
    log_history,
    peek_last,
    to_host,
    update_history,
)

BATCH = 8

# Define what to track over time: per-field lengths, batch-first (B, T, *shape).
spec = HistorySpec.from_config(
    {
        "states": {"length": 100, "shape": (16, 16, 2), "dtype": jnp.float32},
        "actions": {"length": 50, "shape": (4,), "dtype": jnp.float32},
        "rewards": {"length": 100, "shape": (), "dtype": jnp.float32},
    }
)

# The README's shift layout: a dict of device arrays, newest entry last along T.
history = create_history(spec, batch_size=BATCH)
print("states:", history["states"].shape)  # (8, 100, 16, 16, 2)

# The ring layout: same API, one slot written per update, cost independent of T.
ring = create_history(spec, batch_size=BATCH, layout="ring")


@jax.jit
def rollout(history, key):
    """100 environment steps; episodes end at random and their rows are reset on device."""

    def step(carry, key):
        history, t = carry
        k_state, k_done = jax.random.split(key)
        # One entry per row: (B, 1, *shape), in the field's dtype.
        new = {
            "states": jax.random.normal(k_state, (BATCH, 1, 16, 16, 2)),
            "actions": jnp.full((BATCH, 1, 4), t, jnp.float32),
            "rewards": jnp.full((BATCH, 1), t, jnp.float32),
        }
        done = jax.random.uniform(k_done, (BATCH,)) < 0.02
        return (update_history(history, new, done, spec), t + 1.0), None

    (history, _), _ = jax.lax.scan(step, (history, 0.0), jax.random.split(key, 100))
    return history


key = jax.random.key(0)
history = rollout(history, key)
ring = rollout(ring, key)

# Both layouts hold the same values; reading the ring goes through ordered views.
same = jnp.array_equal(history["rewards"], ring["rewards"])
print("shift == ring:", bool(same))
print("last 3 rewards of row 0:", peek_last(ring, k=3, fields="rewards")["rewards"][0])

# One device-to-host copy of everything, as numpy.
host = to_host(ring)
print("host copy:", {k: v.shape for k, v in host.items()})

# Send a summary of the newest rewards to goggles_io (here: a CSV file in a temp directory).
with tempfile.TemporaryDirectory() as tmp:
    gg.attach(gg.CsvHandler(Path(tmp), name="examples.history.csv"), scopes=["global"])
    logger = gg.get_logger("examples.history", with_metrics=True)
    log_history(logger, ring, "rewards", step=100, summary=["mean", "max"])
    gg.finish()
    for csv in Path(tmp).rglob("*.csv"):
        print(f"{csv.name}:", csv.read_text().strip().replace("\n", " | "))
