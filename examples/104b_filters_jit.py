"""Filters under jax.jit and jax.lax.scan (CPU): the pure API on jax arrays matches numpy.

Run: python examples/104b_filters_jit.py
"""

from __future__ import annotations

try:
    import jax
    import jax.numpy as jnp
except ImportError:  # one line that says what to install, not a traceback
    raise SystemExit(
        "104b_filters_jit.py needs jax: pip install -e '.[jax]' (or pip install 'split-telemetry[jax]')"
    ) from None
import numpy as np

from goggles_io.filters import create_concat_filter

chain = create_concat_filter(
    [
        {"type": "RangeRejectFilter", "parameters": {"min_value": -3.0, "max_value": 3.0}},
        {"type": "MedianFilter", "parameters": {"window_size": 5}},
        {"type": "AverageFilter", "parameters": {"window_size": 4}},
    ]
)

rng = np.random.default_rng(1)
xs = (np.sin(np.linspace(0, 6, 64))[:, None] + rng.normal(0, 0.1, (64, 3))).astype(np.float32)
xs[10, 0], xs[40, 2] = 50.0, np.nan


@jax.jit
def smooth(xs):
    """Filter a (steps, channels) series in one compiled scan; the state is the scan carry."""
    # apply returns (new_state, output): exactly the (carry, y) a scan body returns.
    return jax.lax.scan(chain.apply, chain.init_state(xs[0]), xs)[1]


jitted = np.asarray(smooth(jnp.asarray(xs)))

# The same filter chain, stateful, on numpy.
chain.reset()
reference = np.stack([chain.step(x) for x in xs])

print("max |jit - numpy| =", float(np.max(np.abs(jitted - reference))))
print("step 10 channel 0: raw", xs[10, 0], "-> filtered", jitted[10, 0])
assert np.allclose(jitted, reference, atol=1e-5)
print("jit + scan matches numpy")
