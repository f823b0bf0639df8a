"""Filters: smoothing, outlier rejection and composition on a noisy numpy series.

Run: python examples/104_filters.py
"""

from __future__ import annotations

import numpy as np

from goggles_io.filters import (
    AverageFilter,
    FilterConfig,
    MedianFilter,
    ScaleFilter,
    StdRejectFilter,
    create_concat_filter,
)

rng = np.random.default_rng(0)
signal = np.sin(np.linspace(0, 3, 40)) + rng.normal(0, 0.05, 40)
signal[[17, 31]] = [8.0, -6.0]  # spikes
signal[25] = np.nan  # a dropped sample

# Stateful API: step the filter (or call it) on each new sample.
avg, med = AverageFilter(window_size=5), MedianFilter(window_size=5)
# Reject spikes and NaN; a rejected sample is replaced by the last accepted one.
reject = StdRejectFilter(std_factor=3.0, window_size=10, fallback_filter=[])

# Config-driven composition: reject outliers (replaced by the mean of the last 3 accepted
# values), then smooth and quantise.
chain = create_concat_filter(
    [
        FilterConfig(
            type="StdRejectFilter",
            parameters={
                "std_factor": 3.0,
                "window_size": 10,
                "fallback_filter": [{"type": "AverageFilter", "parameters": {"window_size": 3}}],
            },
        ),
        FilterConfig(type="ExpAverageFilter", parameters={"alpha": 0.3}),
        FilterConfig(
            type="QuantizationFilter",
            parameters={"min_value": -2.0, "max_value": 2.0, "step_size": 0.01},
        ),
    ]
)

print(f"{'t':>3} {'raw':>8} {'average':>8} {'median':>8} {'reject':>8} {'chain':>8}")
for t, x in enumerate(signal):
    x = float(x)
    row = [avg.step(x), med.step(x), reject.step(x), chain.step(x)]
    print(f"{t:>3} {x:>8.3f} " + " ".join(f"{v:>8.3f}" for v in row))

# The pure API: the caller carries the state (the same code runs under jax.jit).
f = AverageFilter(window_size=3)
state = f.init_state(0.0)
for x in [1.0, 2.0, 3.0, 4.0]:
    state, y = f.apply(state, x)
print("pure moving average of 1..4 with window 3 ends at", float(y))
print("chain:", chain.name)
print("unit change:", ScaleFilter(scale=1000.0).step(np.array([0.25, 1.5])))
