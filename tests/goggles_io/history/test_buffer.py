"""goggles_io.history.buffer: the README API, on both layouts, on CPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from goggles_io.exceptions import (  # noqa: E402
    ConfigurationError,
    InvalidNameError,
    InvalidPayloadError,
)
from goggles_io.history import (  # noqa: E402
    HistorySpec,
    RingHistory,
    create_history,
    peek_last,
    slice_history,
    to_device,
    to_host,
    update_history,
)

B = 3
SPEC = HistorySpec.from_config(
    {
        "obs": {"length": 4, "shape": (2,), "dtype": jnp.float32},
        "reward": {"length": 2, "shape": (), "dtype": jnp.float32, "init": "ones"},
    }
)


@pytest.fixture(params=["shift", "ring"])
def layout(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def obs(value: float) -> Any:
    return jnp.full((B, 2), value, jnp.float32) + jnp.arange(B, dtype=jnp.float32)[:, None]


def step(history: Any, value: float, reset: list[bool] | None = None) -> Any:
    mask = None if reset is None else jnp.asarray(reset)
    return update_history(
        history, {"obs": obs(value), "reward": jnp.full((B,), value)}, mask, spec=SPEC
    )


class TestCreateHistory:
    def test_readme_shapes(self) -> None:
        """Every field is (B, T, *shape) with its own length, as the README prints."""
        spec = HistorySpec.from_config({"states": {"length": 100, "shape": (64, 64, 2)}})

        assert (32, 100, 64, 64, 2) == create_history(spec, batch_size=32)["states"].shape

    def test_per_field_lengths(self, layout: str) -> None:
        """Fields keep their own T."""
        history = create_history(SPEC, B, layout=layout)

        assert ((B, 4, 2), (B, 2)) == (history["obs"].shape, history["reward"].shape)

    def test_init_fills(self, layout: str) -> None:
        """init='zeros' fields start at 0 and init='ones' fields at 1."""
        history = to_host(create_history(SPEC, B, layout=layout))

        assert (0.0, 1.0) == (history["obs"].max(), history["reward"].min())

    def test_randn_init_uses_rng(self) -> None:
        """A randn field is filled from rng and differs from zeros."""
        spec = HistorySpec.from_config({"x": {"length": 5, "init": "randn"}})

        history = create_history(spec, B, rng=jax.random.key(0))

        assert 0 < float(jnp.std(history["x"]))

    def test_randn_without_rng_is_rejected(self) -> None:
        """A randn field without rng raises, naming the field."""
        spec = HistorySpec.from_config({"x": {"length": 5, "init": "randn"}})

        with pytest.raises(ConfigurationError, match="'x' has init='randn'"):
            create_history(spec, B)

    def test_ring_layout_is_a_ring_history(self) -> None:
        """layout='ring' returns a RingHistory."""
        assert isinstance(create_history(SPEC, B, layout="ring"), RingHistory)

    @pytest.mark.parametrize("batch_size", [0, -2, 1.5, True])
    def test_bad_batch_size_is_rejected(self, batch_size: Any) -> None:
        """A batch_size that is not an int >= 1 raises, showing the value."""
        with pytest.raises(
            ConfigurationError, match=f"batch_size must be an int >= 1 \\(got {batch_size!r}"
        ):
            create_history(SPEC, batch_size)

    def test_bad_layout_is_rejected(self) -> None:
        """An unknown layout raises, naming it."""
        with pytest.raises(ConfigurationError, match="'deque'"):
            create_history(SPEC, B, layout="deque")

    def test_spec_must_be_a_history_spec(self) -> None:
        """Passing a plain mapping as spec raises and points to from_config."""
        with pytest.raises(ConfigurationError, match="from_config"):
            create_history({"obs": {"length": 2}}, B)  # type: ignore[arg-type]


class TestUpdateHistory:
    def test_newest_entry_is_last(self, layout: str) -> None:
        """After an update the new entry is at index -1 along T and the oldest fell off."""
        history = step(step(create_history(SPEC, B, layout=layout), 1.0), 2.0)

        np.testing.assert_array_equal([0.0, 0.0, 1.0, 2.0], to_host(history)["obs"][0, :, 0])

    def test_b1_shaped_input_is_accepted(self, layout: str) -> None:
        """(B, 1, *shape) entries give the same result as (B, *shape)."""
        history = create_history(SPEC, B, layout=layout)

        a = update_history(history, {"obs": obs(5.0)})
        b = update_history(history, {"obs": obs(5.0)[:, None]})

        np.testing.assert_array_equal(to_host(a)["obs"], to_host(b)["obs"])

    def test_missing_fields_are_untouched(self, layout: str) -> None:
        """A field absent from new_data keeps its values, even when rows reset."""
        history = step(create_history(SPEC, B, layout=layout), 7.0)
        before = to_host(history)["reward"]

        history = update_history(history, {"obs": obs(1.0)}, jnp.asarray([True, False, False]))

        np.testing.assert_array_equal(before, to_host(history)["reward"])

    def test_reset_clears_only_masked_rows(self, layout: str) -> None:
        """reset_mask sets the masked rows to init and leaves the other rows updated."""
        history = step(step(create_history(SPEC, B, layout=layout), 1.0), 2.0, [False, True, False])
        host = to_host(history)

        np.testing.assert_array_equal(np.zeros((4, 2)), host["obs"][1])
        np.testing.assert_array_equal(np.ones(2), host["reward"][1])
        np.testing.assert_array_equal([[0, 0], [0, 0], [1, 1], [2, 2]], host["obs"][0])

    def test_entries_after_reset_start_a_fresh_window(self, layout: str) -> None:
        """After a reset, later entries fill the row's window from the newest end."""
        history = step(create_history(SPEC, B, layout=layout), 1.0)
        history = step(step(history, 2.0, [True, False, False]), 3.0)

        np.testing.assert_array_equal([0.0, 0.0, 0.0, 3.0], to_host(history)["obs"][0, :, 0])

    def test_init_none_is_never_reset(self) -> None:
        """A field with init='none' ignores reset_mask and keeps shifting."""
        spec = HistorySpec.from_config({"x": {"length": 2, "init": "none"}})
        history = update_history(create_history(spec, 1), {"x": jnp.ones(1)})

        history = update_history(history, {"x": jnp.full(1, 2.0)}, jnp.asarray([True]), spec=spec)

        np.testing.assert_array_equal([[1.0, 2.0]], to_host(history)["x"])

    def test_randn_reset_needs_rng(self) -> None:
        """Resetting a randn field without rng raises, naming the field."""
        spec = HistorySpec.from_config({"x": {"length": 2, "init": "randn"}})
        history = create_history(spec, 1, rng=jax.random.key(0))

        with pytest.raises(ConfigurationError, match="'x' has init='randn'"):
            update_history(history, {"x": jnp.ones(1)}, jnp.asarray([True]), spec=spec)

    def test_randn_reset_redraws_row(self, layout: str) -> None:
        """Resetting a randn field with rng refills the row with fresh normals."""
        spec = HistorySpec.from_config({"x": {"length": 8, "init": "randn"}})
        history = create_history(spec, 2, rng=jax.random.key(0), layout=layout)
        history = update_history(history, {"x": jnp.full(2, 100.0)}, spec=spec)

        history = update_history(
            history,
            {"x": jnp.full(2, 100.0)},
            jnp.asarray([True, False]),
            spec=spec,
            rng=jax.random.key(1),
        )

        assert (10.0 > np.abs(to_host(history)["x"][0]).max()) and (
            100.0 == to_host(history)["x"][1, -1]
        )

    def test_randn_fields_reset_independently(self, layout: str) -> None:
        """Two randn fields reset with one rng get different draws, not the same numbers."""
        spec = HistorySpec.from_config(
            {"x": {"length": 4, "init": "randn"}, "y": {"length": 4, "init": "randn"}}
        )
        history = create_history(spec, 1, rng=jax.random.key(0), layout=layout)
        new = {"x": jnp.ones(1), "y": jnp.ones(1)}

        host = to_host(
            update_history(history, new, jnp.asarray([True]), spec=spec, rng=jax.random.key(1))
        )

        assert not np.array_equal(host["x"], host["y"])

    def test_lists_are_accepted(self, layout: str) -> None:
        """Entries and reset_mask given as Python lists work like arrays."""
        history = create_history(SPEC, B, layout=layout)

        history = update_history(
            history, {"reward": [5.0, 6.0, 7.0]}, [False, False, True], spec=SPEC
        )

        np.testing.assert_array_equal(
            [[1.0, 5.0], [1.0, 6.0], [1.0, 1.0]], to_host(history)["reward"]
        )

    def test_dtype_is_cast_to_field(self, layout: str) -> None:
        """Entries of another dtype are cast to the field's dtype."""
        history = update_history(
            create_history(SPEC, B, layout=layout), {"reward": jnp.ones(B, jnp.int32)}
        )

        assert jnp.float32 == history["reward"].dtype

    def test_unknown_field_is_named(self, layout: str) -> None:
        """new_data with a field the history lacks raises InvalidNameError naming it."""
        with pytest.raises(InvalidNameError, match="'action'"):
            update_history(create_history(SPEC, B, layout=layout), {"action": jnp.ones(B)})

    def test_wrong_shape_is_named(self, layout: str) -> None:
        """An entry of the wrong shape raises InvalidPayloadError naming field and shapes."""
        with pytest.raises(
            InvalidPayloadError, match=r"new_data\['obs'\] must have shape \(3, 2\)"
        ):
            update_history(create_history(SPEC, B, layout=layout), {"obs": jnp.ones((B, 3))})

    def test_wrong_reset_mask_shape_is_rejected(self, layout: str) -> None:
        """A reset_mask that is not (B,) raises InvalidPayloadError."""
        with pytest.raises(InvalidPayloadError, match="reset_mask must have shape"):
            update_history(
                create_history(SPEC, B, layout=layout), {"obs": obs(1.0)}, jnp.ones((B, 1))
            )

    def test_update_is_pure(self, layout: str) -> None:
        """The input history is unchanged after an update."""
        history = create_history(SPEC, B, layout=layout)

        update_history(history, {"obs": obs(3.0)})

        assert 0.0 == float(jnp.max(history["obs"]))

    def test_vmap_over_leading_axis(self, layout: str) -> None:
        """vmap(update_history) over stacked histories equals updating each one."""
        histories = [step(create_history(SPEC, B, layout=layout), float(i)) for i in range(2)]
        stacked = jax.tree_util.tree_map(lambda *xs: jnp.stack(xs), *histories)
        new = jnp.stack([obs(10.0), obs(20.0)])
        mask = jnp.asarray([[True, False, False], [False, False, True]])

        out = jax.vmap(lambda h, n, m: update_history(h, {"obs": n}, m))(stacked, new, mask)

        for i in range(2):
            single = update_history(histories[i], {"obs": new[i]}, mask[i])
            item = jax.tree_util.tree_map(lambda x, i=i: x[i], out)
            np.testing.assert_array_equal(to_host(single)["obs"], to_host(item)["obs"])


class TestNoHostSync:
    def test_updates_run_under_transfer_guard(self, layout: str) -> None:
        """Eager and jitted updates from device data make no host transfer."""
        history = create_history(SPEC, B, layout=layout)
        new, mask = obs(1.0), jnp.asarray([False, True, False])
        jitted = jax.jit(update_history)
        jitted(history, {"obs": new}, mask)  # compile outside the guard

        with jax.transfer_guard("disallow"):
            history = update_history(history, {"obs": new}, mask)
            history = jitted(history, {"obs": new}, mask)
            jax.block_until_ready(history)

        assert 1.0 == float(history["obs"][0, -1, 0])

    def test_donated_history_is_consumed(self, layout: str) -> None:
        """With donate_argnums=0 the old buffers are donated to the result."""
        history = create_history(SPEC, B, layout=layout)
        update = jax.jit(update_history, donate_argnums=0)

        new_history = update(history, {"obs": obs(1.0)})

        assert all(
            leaf.is_deleted() for leaf in jax.tree_util.tree_leaves(history) if leaf.ndim >= 2
        )
        assert 1.0 == float(new_history["obs"][0, -1, 0])

    def test_compiled_update_has_no_host_callback(self, layout: str) -> None:
        """The lowered and compiled update contain no callback or custom call."""
        history = create_history(SPEC, B, layout=layout)
        lowered = jax.jit(update_history).lower(history, {"obs": obs(1.0)}, jnp.zeros(B, bool))
        text = (lowered.as_text() + lowered.compile().as_text()).lower()

        assert ("callback" not in text) and ("custom_call" not in text)

    def test_callback_check_detects_a_callback(self) -> None:
        """The HLO check above does see a host callback when one is there."""

        def noisy(x: Any) -> Any:
            jax.debug.print("{}", x)
            return x

        assert "callback" in jax.jit(noisy).lower(jnp.ones(2)).as_text().lower()


class TestReading:
    def test_peek_last(self, layout: str) -> None:
        """peek_last returns the newest n entries, newest last."""
        history = step(step(step(create_history(SPEC, B, layout=layout), 1.0), 2.0), 3.0)

        np.testing.assert_array_equal([2.0, 3.0], np.asarray(peek_last(history, "obs", 2))[0, :, 0])

    @pytest.mark.parametrize("n", [0, 5, 1.0])
    def test_peek_last_bad_n(self, layout: str, n: Any) -> None:
        """n outside [1, T] raises a ConfigurationError naming n."""
        with pytest.raises(ConfigurationError, match="n must be an int in \\[1, 4\\]"):
            peek_last(create_history(SPEC, B, layout=layout), "obs", n)

    @pytest.mark.parametrize(("start", "stop"), [(0, 2), (1, None), (-3, -1), (None, None), (3, 1)])
    def test_slice_history_follows_python_slicing(self, layout: str, start: Any, stop: Any) -> None:
        """slice_history(start, stop) equals the time-ordered window sliced [start:stop]."""
        history = step(step(step(create_history(SPEC, B, layout=layout), 1.0), 2.0), 3.0)

        expected = to_host(history)["obs"][:, start:stop]

        np.testing.assert_array_equal(
            expected, np.asarray(slice_history(history, "obs", start, stop))
        )

    def test_slice_bad_bound(self, layout: str) -> None:
        """A non-int bound raises a ConfigurationError naming it."""
        with pytest.raises(ConfigurationError, match="start must be an int or None"):
            slice_history(create_history(SPEC, B, layout=layout), "obs", 0.5, 2)

    def test_unknown_field_read(self, layout: str) -> None:
        """Reading an unknown field raises InvalidNameError naming it."""
        with pytest.raises(InvalidNameError, match="'nope'"):
            peek_last(create_history(SPEC, B, layout=layout), "nope")

    def test_to_host_gives_numpy(self, layout: str) -> None:
        """to_host returns numpy arrays keyed by field."""
        host = to_host(create_history(SPEC, B, layout=layout))

        assert all(isinstance(v, np.ndarray) for v in host.values())

    def test_to_device_round_trip(self, layout: str) -> None:
        """to_device puts a history (or its to_host copy) on the device unchanged."""
        history = step(create_history(SPEC, B, layout=layout), 4.0)
        device = jax.devices("cpu")[0]

        moved = to_device(history, device)

        np.testing.assert_array_equal(to_host(history)["obs"], to_host(moved)["obs"])
        assert isinstance(to_device(to_host(history), device)["obs"], jax.Array)
