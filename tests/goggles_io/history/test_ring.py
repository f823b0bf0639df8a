"""goggles_io.history.ring: the ring layout equals the shift layout and a naive numpy reference."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from goggles_io.history import (  # noqa: E402
    HistorySpec,
    RingHistory,
    create_history,
    ordered,
    peek_last,
    slice_history,
    to_host,
    update_history,
)

B = 3
CONFIG = {
    "a": {"length": 4, "shape": (), "init": "zeros"},
    "b": {"length": 2, "shape": (2,), "init": "ones"},
    "c": {"length": 3, "shape": (), "init": "none"},
}
SPEC = HistorySpec.from_config(CONFIG)

operations = st.lists(
    st.tuples(
        st.sets(st.sampled_from(sorted(CONFIG)), min_size=1),  # fields updated
        st.integers(-100, 100),  # value
        st.one_of(st.none(), st.lists(st.booleans(), min_size=B, max_size=B)),  # reset mask
    ),
    max_size=8,
)


def reference(ops: list[tuple[set[str], int, list[bool] | None]]) -> dict[str, np.ndarray]:
    """A naive numpy history: shift each window row by row, reset rows to their init."""
    fill = {"zeros": 0.0, "ones": 1.0, "none": 0.0}
    windows = {
        name: np.full((B, f["length"], *f["shape"]), fill[f["init"]], np.float32)
        for name, f in CONFIG.items()
    }
    for fields, value, mask in ops:
        for name in fields:
            init = CONFIG[name]["init"]
            for row in range(B):
                if mask is not None and mask[row] and init != "none":
                    windows[name][row] = fill[init]
                else:
                    windows[name][row] = np.roll(windows[name][row], -1, axis=0)
                    windows[name][row, -1] = value + row
    return windows


def replay(layout: str, ops: list[tuple[set[str], int, list[bool] | None]]) -> Any:
    history = create_history(SPEC, B, layout=layout)
    for fields, value, mask in ops:
        new = {
            name: jnp.broadcast_to(
                (value + jnp.arange(B, dtype=jnp.float32)).reshape(
                    (B, 1) + (1,) * len(CONFIG[name]["shape"])
                ),
                (B, 1, *CONFIG[name]["shape"]),
            )
            for name in fields
        }
        history = update_history(history, new, None if mask is None else jnp.asarray(mask), SPEC)
    return history


class TestRingEqualsShift:
    @given(operations)
    @settings(max_examples=25, deadline=None)
    def test_both_layouts_match_reference(self, ops: list[Any]) -> None:
        """After any update/reset sequence, shift and ring layouts both equal the numpy reference."""
        expected = reference(ops)

        for layout in ("shift", "ring"):
            actual = to_host(replay(layout, ops))
            for name in CONFIG:
                np.testing.assert_array_equal(
                    expected[name], actual[name], err_msg=f"{layout}/{name}"
                )

    @given(operations, st.integers(1, 4), st.integers(0, 3), st.integers(1, 4))
    @settings(max_examples=15, deadline=None)
    def test_reads_match(self, ops: list[Any], k: int, start: int, length: int) -> None:
        """peek_last and slice_history agree between the two layouts."""
        shift, ring = replay("shift", ops), replay("ring", ops)
        length = min(length, 4 - start)

        np.testing.assert_array_equal(peek_last(shift, k, "a")["a"], peek_last(ring, k, "a")["a"])
        np.testing.assert_array_equal(
            slice_history(shift, start, length, "a")["a"],
            slice_history(ring, start, length, "a")["a"],
        )

    def test_jitted_scan_matches_shift(self) -> None:
        """A ring history carried through lax.scan equals the shift layout carried the same way."""
        xs = jnp.arange(20 * B, dtype=jnp.float32).reshape(20, B)
        masks = (jnp.arange(20 * B).reshape(20, B) % 7) == 0

        def run(layout: str) -> Any:
            def body(h: Any, inputs: Any) -> tuple[Any, None]:
                x, m = inputs
                return update_history(h, {"a": x[:, None]}, m), None

            return jax.jit(lambda h: jax.lax.scan(body, h, (xs, masks))[0])(
                create_history(SPEC, B, layout=layout)
            )

        np.testing.assert_array_equal(to_host(run("shift"))["a"], to_host(run("ring"))["a"])


class TestRingHistory:
    def test_is_a_pytree_of_arrays_only(self) -> None:
        """Its leaves are the data, head and count arrays; init modes are static metadata."""
        history = create_history(SPEC, B, layout="ring")

        assert 9 == len(jax.tree_util.tree_leaves(history))

    def test_round_trips_through_tree_util(self) -> None:
        """Flatten then unflatten gives an equal ring history."""
        history = create_history(SPEC, B, layout="ring")
        leaves, treedef = jax.tree_util.tree_flatten(history)

        again = jax.tree_util.tree_unflatten(treedef, leaves)

        assert isinstance(again, RingHistory) and again.inits == history.inits

    def test_getitem_is_time_ordered(self) -> None:
        """history[field] gives the window in time order, like the shift dict."""
        history = replay("ring", [({"a"}, v, None) for v in range(6)])

        np.testing.assert_array_equal([2, 3, 4, 5], np.asarray(history["a"][0]))

    def test_ordered_passes_dicts_through(self) -> None:
        """ordered() on a shift-layout dict returns its fields unchanged."""
        history = create_history(SPEC, B)

        assert history["a"] is ordered(history)["a"]

    def test_update_writes_one_slot(self) -> None:
        """A ring update changes exactly one slot of the storage per row."""
        history = replay("ring", [({"a"}, 1, None)])

        after = update_history(history, {"a": jnp.full((B, 1), 50.0)})

        assert B == int(jnp.sum(after.data["a"] != history.data["a"]))
