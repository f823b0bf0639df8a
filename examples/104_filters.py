"""Filters: smoothing, outlier rejection and composition on a noisy numpy series.

Run: python examples/104_filters.py
"""

from __future__ import annotations

import numpy as np

from goggles_io.filters import MedianFilter, MovingAverage, ZScoreFilter, make_filter

rng = np.random.default_rng(0)
signal = np.sin(np.linspace(0, 3, 40)) + rng.normal(0, 0.05, 40)
signal[[7, 21]] = [8.0, -6.0]  # spikes
signal[30] = np.nan  # a dropped sample

# Stateful API: call the filter on each new sample.
ma, med = MovingAverage(window=5), MedianFilter(window=5)
zscore = ZScoreFilter(window=10, threshold=3.0)

# Config-driven composition: reject outliers (and NaN) first, then smooth.
chain = make_filter(
    [
        {"type": "zscore", "window": 10, "threshold": 3.0},
        {"type": "exponential", "alpha": 0.3},
        {"type": "quantize", "step": 0.01},
    ]
)

print(f"{'t':>3} {'raw':>8} {'mov.avg':>8} {'median':>8} {'zscore':>8} {'chain':>8}")
for t, x in enumerate(signal):
    x = float(x)
    row = [ma(x), med(x), zscore(x), chain(x)]
    print(f"{t:>3} {x:>8.3f} " + " ".join(f"{v:>8.3f}" for v in row))

# The pure API: the caller carries the state (the same code runs under jax.jit).
f = MovingAverage(window=3)
state = f.init_state(np.zeros(()))
for x in [1.0, 2.0, 3.0, 4.0]:
    y, state = f.apply(state, x)
print("pure moving average of 1..4 with window 3 ends at", float(y))
print("chain config:", chain.to_config())
