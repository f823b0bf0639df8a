"""goggles_io.history.buffer: create_history and update_history, on both layouts, on CPU."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from goggles_io.exceptions import (  # noqa: E402
    ConfigurationError,
    ConfigurationTypeError,
    InvalidPayloadError,
    UnknownFieldError,
)
from goggles_io.history import (  # noqa: E402
    HistoryFieldSpec,
    HistorySpec,
    RingHistory,
    create_history,
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
NOISE = HistorySpec.from_config({"x": {"length": 4, "shape": (), "init": "randn"}})


@pytest.fixture(params=["shift", "ring"])
def layout(request: pytest.FixtureRequest) -> str:
    return str(request.param)


def obs(value: float) -> Any:
    """One (B, 1, 2) entry whose rows differ: row b holds value + b."""
    return (jnp.full((B, 2), value, jnp.float32) + jnp.arange(B, dtype=jnp.float32)[:, None])[
        :, None
    ]


def reward(value: float) -> Any:
    return jnp.full((B, 1), value, jnp.float32)


def step(history: Any, value: float, reset: list[bool] | None = None) -> Any:
    mask = None if reset is None else jnp.asarray(reset)
    return update_history(history, {"obs": obs(value), "reward": reward(value)}, mask, SPEC)


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

    @pytest.mark.parametrize(
        "rng",
        [jax.random.key(0), jax.random.PRNGKey(0), jax.random.split(jax.random.key(0), B)],
        ids=["typed", "raw", "per-batch"],
    )
    def test_randn_rows_differ(self, rng: Any) -> None:
        """A randn field is filled from rng (one key or per-batch keys), each row its own draw."""
        x = np.asarray(create_history(NOISE, B, rng=rng)["x"])

        assert (0 < x.std()) and not np.array_equal(x[0], x[1])

    def test_randn_without_rng_is_rejected(self) -> None:
        """A randn field without rng raises, naming the field."""
        with pytest.raises(ConfigurationError, match="'x' has init='randn' and requires rng"):
            create_history(NOISE, B)

    def test_ring_layout_is_a_ring_history(self) -> None:
        """layout='ring' returns a RingHistory."""
        assert isinstance(create_history(SPEC, B, layout="ring"), RingHistory)

    @pytest.mark.parametrize("batch_size", [0, -2])
    def test_batch_size_must_be_positive(self, batch_size: int) -> None:
        """batch_size <= 0 raises a ValueError showing the value."""
        with pytest.raises(ConfigurationError, match=f"batch_size must be > 0 \\(got {batch_size}"):
            create_history(SPEC, batch_size)

    @pytest.mark.parametrize("batch_size", [1.5, True])
    def test_batch_size_must_be_an_int(self, batch_size: Any) -> None:
        """A batch_size that is not an int raises a TypeError."""
        with pytest.raises(ConfigurationTypeError, match="batch_size must be an int"):
            create_history(SPEC, batch_size)

    def test_bad_layout_is_rejected(self) -> None:
        """An unknown layout raises, naming it."""
        with pytest.raises(ConfigurationError, match="'deque'"):
            create_history(SPEC, B, layout="deque")

    def test_spec_must_be_a_history_spec(self) -> None:
        """Passing a plain mapping as spec raises a TypeError pointing to from_config."""
        with pytest.raises(ConfigurationTypeError, match="from_config"):
            create_history({"obs": {"length": 2}}, B)  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("field", "match"),
        [
            (HistoryFieldSpec(0, (1,)), "Invalid history length for field 'a'"),
            (HistoryFieldSpec(2, (1,), init="sometimes"), "Unknown init mode for field 'a'"),
        ],
    )
    def test_spec_built_by_hand_is_checked(self, field: HistoryFieldSpec, match: str) -> None:
        """A spec that skipped from_config is checked at creation, naming the field."""
        with pytest.raises(ConfigurationError, match=match):
            create_history(HistorySpec({"a": field}), 1)

    def test_jittable_with_static_batch_size(self, layout: str) -> None:
        """create_history runs under jit with batch_size static."""
        make = jax.jit(lambda b: create_history(SPEC, b, layout=layout), static_argnums=0)

        assert (2, 4, 2) == make(2)["obs"].shape


class TestUpdateHistory:
    def test_newest_entry_is_last(self, layout: str) -> None:
        """After an update the new entry is at index -1 along T and the oldest fell off."""
        history = step(step(create_history(SPEC, B, layout=layout), 1.0), 2.0)

        np.testing.assert_array_equal([0.0, 0.0, 1.0, 2.0], to_host(history)["obs"][0, :, 0])

    @pytest.mark.parametrize(
        ("entry", "match"),
        [
            (jnp.ones((B, 2)), "Dim mismatch"),
            (jnp.ones((B + 1, 1, 2)), "Batch size mismatch"),
            (jnp.ones((B, 2, 2)), "Append length must be 1"),
            (jnp.ones((B, 1, 3)), "Shape mismatch"),
        ],
    )
    def test_entry_must_be_b_1_shape(self, layout: str, entry: Any, match: str) -> None:
        """Entries other than (B, 1, *shape) raise InvalidPayloadError showing both shapes."""
        with pytest.raises(
            InvalidPayloadError, match=f"{match}: new_data\\['obs'\\] must have shape \\(3, 1, 2\\)"
        ):
            update_history(create_history(SPEC, B, layout=layout), {"obs": entry})

    def test_dtype_must_match(self, layout: str) -> None:
        """An entry of another dtype raises instead of being cast."""
        with pytest.raises(InvalidPayloadError, match=r"Dtype mismatch.*float32.*int32"):
            update_history(
                create_history(SPEC, B, layout=layout), {"reward": jnp.ones((B, 1), jnp.int32)}
            )

    def test_lists_take_the_field_dtype(self, layout: str) -> None:
        """Entries and reset_mask given as Python lists work like arrays of the field's dtype."""
        history = update_history(
            create_history(SPEC, B, layout=layout),
            {"reward": [[5], [6], [7]]},
            [False, False, True],
            SPEC,
        )

        np.testing.assert_array_equal(
            [[1.0, 5.0], [1.0, 6.0], [1.0, 1.0]], to_host(history)["reward"]
        )

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

    def test_reset_without_spec_means_zeros(self) -> None:
        """With no spec, a shift-layout reset fills the row with zeros."""
        history = {"x": jnp.ones((2, 3, 1))}

        out = update_history(history, {"x": jnp.full((2, 1, 1), 9.0)}, jnp.asarray([False, True]))

        np.testing.assert_array_equal([[[1], [1], [9]], [[0], [0], [0]]], np.asarray(out["x"]))

    def test_entries_after_reset_start_a_fresh_window(self, layout: str) -> None:
        """After a reset, later entries fill the row's window from the newest end."""
        history = step(create_history(SPEC, B, layout=layout), 1.0)
        history = step(step(history, 2.0, [True, False, False]), 3.0)

        np.testing.assert_array_equal([0.0, 0.0, 0.0, 3.0], to_host(history)["obs"][0, :, 0])

    def test_init_none_is_never_reset(self, layout: str) -> None:
        """A field with init='none' ignores reset_mask and keeps shifting."""
        spec = HistorySpec.from_config({"x": {"length": 2, "shape": (), "init": "none"}})
        history = update_history(create_history(spec, 1, layout=layout), {"x": jnp.ones((1, 1))})

        history = update_history(history, {"x": jnp.full((1, 1), 2.0)}, jnp.asarray([True]), spec)

        np.testing.assert_array_equal([[1.0, 2.0]], to_host(history)["x"])

    def test_unknown_init_mode_in_spec_is_rejected(self) -> None:
        """A hand-built spec with an unknown init raises when it is used for an update."""
        spec = HistorySpec({"x": HistoryFieldSpec(2, (), init="sometimes")})

        with pytest.raises(ConfigurationError, match="Unknown init mode for field 'x'"):
            update_history({"x": jnp.zeros((1, 2))}, {"x": jnp.ones((1, 1))}, [True], spec)

    @pytest.mark.parametrize("mask", [[True, False, False], [False, False, False]])
    def test_randn_reset_requires_rng(self, mask: list[bool]) -> None:
        """Any update of a randn field with a reset_mask needs rng, even if no row resets."""
        history = create_history(NOISE, B, rng=jax.random.key(0))

        with pytest.raises(ConfigurationError, match="'x' has init='randn': a reset requires rng"):
            update_history(history, {"x": jnp.ones((B, 1))}, jnp.asarray(mask), NOISE)

    def test_randn_reset_redraws_row(self, layout: str) -> None:
        """Resetting a randn field with rng refills the row with fresh normals."""
        history = create_history(NOISE, 2, rng=jax.random.key(0), layout=layout)
        history = update_history(history, {"x": jnp.full((2, 1), 100.0)}, None, NOISE)

        history = update_history(
            history, {"x": jnp.full((2, 1), 100.0)}, [True, False], NOISE, jax.random.key(1)
        )

        host = to_host(history)["x"]
        assert (10.0 > np.abs(host[0]).max()) and (100.0 == host[1, -1])

    def test_per_batch_keys_draw_each_row_from_its_key(self, layout: str) -> None:
        """With per-batch keys, a reset row's draw depends on its own key only."""
        history = create_history(NOISE, 2, rng=jax.random.key(0), layout=layout)
        keys = jax.random.split(jax.random.key(1), 2)
        other = keys.at[1].set(jax.random.key(7))
        new, mask = {"x": jnp.ones((2, 1))}, jnp.asarray([True, True])

        a = to_host(update_history(history, new, mask, NOISE, keys))["x"]
        b = to_host(update_history(history, new, mask, NOISE, other))["x"]

        assert np.array_equal(a[0], b[0]) and not np.array_equal(a[1], b[1])

    @pytest.mark.parametrize(
        "rng", [jnp.zeros((B + 1, 2), jnp.uint32), jnp.zeros((3,), jnp.float32), 5]
    )
    def test_rng_of_wrong_shape_is_rejected(self, rng: Any) -> None:
        """rng that is neither one key nor B keys raises, showing its shape."""
        with pytest.raises(ConfigurationError, match="rng must be a PRNGKey"):
            update_history(create_history(SPEC, B), {"obs": obs(1.0)}, None, SPEC, rng)

    def test_randn_fields_reset_independently(self, layout: str) -> None:
        """Two randn fields reset with one rng get different draws, not the same numbers."""
        spec = HistorySpec.from_config(
            {
                "x": {"length": 4, "shape": (), "init": "randn"},
                "y": {"length": 4, "shape": (), "init": "randn"},
            }
        )
        history = create_history(spec, 1, rng=jax.random.key(0), layout=layout)
        new = {"x": jnp.ones((1, 1)), "y": jnp.ones((1, 1))}

        host = to_host(update_history(history, new, jnp.asarray([True]), spec, jax.random.key(1)))

        assert not np.array_equal(host["x"], host["y"])

    def test_unknown_field_is_named(self, layout: str) -> None:
        """new_data with a field the history lacks raises, as ValueError and KeyError."""
        with pytest.raises(UnknownFieldError, match="Missing new data field 'action'") as info:
            update_history(create_history(SPEC, B, layout=layout), {"action": jnp.ones((B, 1))})

        assert isinstance(info.value, ValueError) and isinstance(info.value, KeyError)

    @pytest.mark.parametrize(
        "mask", [jnp.ones((B, 1), bool), jnp.ones((1,), bool), jnp.asarray(True)]
    )
    def test_reset_mask_must_be_b(self, layout: str, mask: Any) -> None:
        """A reset_mask that is not (B,) raises InvalidPayloadError."""
        with pytest.raises(
            InvalidPayloadError, match="Invalid reset_mask shape: expected \\(3,\\)"
        ):
            update_history(create_history(SPEC, B, layout=layout), {"obs": obs(1.0)}, mask)

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

    def test_jit_with_randn_reset_and_per_batch_keys(self, layout: str) -> None:
        """A jitted update takes reset_mask and per-batch keys as traced arguments."""
        history = create_history(NOISE, 2, rng=jax.random.key(0), layout=layout)
        update = jax.jit(lambda h, n, m, k: update_history(h, n, m, NOISE, k))

        out = update(
            history,
            {"x": jnp.ones((2, 1))},
            jnp.asarray([False, True]),
            jax.random.split(jax.random.key(2), 2),
        )

        host = to_host(out)["x"]
        assert (1.0 == host[0, -1]) and (1.0 != host[1, -1])


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
