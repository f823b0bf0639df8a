"""goggles_io.history.utils: reading windows and moving histories between host and device."""

from __future__ import annotations

import os
import subprocess
import sys
import typing
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

from goggles_io.exceptions import (  # noqa: E402
    ConfigurationError,
    ConfigurationTypeError,
    InvalidPayloadTypeError,
    UnknownFieldError,
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
from goggles_io.history import types as history_types  # noqa: E402

B = 2
SPEC = HistorySpec.from_config(
    {"obs": {"length": 4, "shape": (2,)}, "reward": {"length": 3, "shape": (), "init": "ones"}}
)


@pytest.fixture(params=["shift", "ring"])
def filled(request: pytest.FixtureRequest) -> Any:
    """A history after five steps: step v writes v + row to every slot of every field."""
    history = create_history(SPEC, B, layout=request.param)
    for v in range(5):
        rows = float(v) + jnp.arange(B, dtype=jnp.float32)
        history = update_history(
            history, {"obs": jnp.repeat(rows[:, None, None], 2, axis=2), "reward": rows[:, None]}
        )
    return history


class TestPeekLast:
    def test_every_field_newest_last(self, filled: Any) -> None:
        """peek_last gives each field's k newest entries as (B, k, *shape), newest last."""
        out = peek_last(filled, k=2)

        assert ((B, 2, 2), (B, 2)) == (out["obs"].shape, out["reward"].shape)
        np.testing.assert_array_equal([[3.0, 4.0], [4.0, 5.0]], np.asarray(out["reward"]))

    @pytest.mark.parametrize("fields", ["reward", ["reward"]])
    def test_fields_selects(self, filled: Any, fields: Any) -> None:
        """fields= (one name or a list) restricts the result to those fields."""
        assert ["reward"] == list(peek_last(filled, 1, fields))

    @pytest.mark.parametrize(
        ("k", "bad"), [(0, "\\[1, 4\\] for field 'obs'"), (4, "\\[1, 3\\] for field 'reward'")]
    )
    def test_k_outside_window_is_a_value_error(self, filled: Any, k: int, bad: str) -> None:
        """k must lie in [1, T] of every field read; the message names the first field it fails."""
        with pytest.raises(ConfigurationError, match=f"k must be in {bad} \\(got {k}"):
            peek_last(filled, k=k)

    def test_k_must_be_an_int(self, filled: Any) -> None:
        """A float k raises a TypeError."""
        with pytest.raises(ConfigurationTypeError, match="k must be an int"):
            peek_last(filled, k=1.0)  # type: ignore[arg-type]

    def test_jittable_with_static_k(self, filled: Any) -> None:
        """Under jit with k static, the result equals the eager one."""
        jitted = jax.jit(peek_last, static_argnums=(1,))

        np.testing.assert_array_equal(peek_last(filled, 3)["obs"], jitted(filled, 3)["obs"])


class TestSliceHistory:
    @pytest.mark.parametrize(("start", "length"), [(0, 1), (0, 3), (1, 2), (2, 1)])
    def test_equals_time_ordered_slice(self, filled: Any, start: int, length: int) -> None:
        """slice_history(start, length) equals the time-ordered window [start:start+length]."""
        out = slice_history(filled, start, length)

        for name in ("obs", "reward"):
            np.testing.assert_array_equal(
                to_host(filled)[name][:, start : start + length], np.asarray(out[name])
            )

    @pytest.mark.parametrize(("start", "length"), [(0, 0), (-1, 1), (3, 1), (1, 3)])
    def test_window_outside_a_field_is_a_value_error(
        self, filled: Any, start: int, length: int
    ) -> None:
        """length < 1, start < 0, or a window past a field's end raise ValueError."""
        with pytest.raises(ConfigurationError, match="slice_history"):
            slice_history(filled, start, length)

    def test_bounds_must_be_ints(self, filled: Any) -> None:
        """A non-int bound raises a TypeError naming it."""
        with pytest.raises(ConfigurationTypeError, match="start must be an int"):
            slice_history(filled, 0.5, 1)  # type: ignore[arg-type]

    def test_unknown_field_is_a_key_error(self, filled: Any) -> None:
        """An unknown name in fields raises UnknownFieldError, a KeyError naming it."""
        with pytest.raises(KeyError, match="'nope'"):
            slice_history(filled, 0, 1, fields="nope")

    @pytest.mark.parametrize("history", [{}, [1, 2], {"a": jnp.zeros(3)}])
    def test_not_a_history_is_a_type_error(self, history: Any) -> None:
        """An empty or non-mapping history, or a field below rank 2, raises a TypeError."""
        with pytest.raises(InvalidPayloadTypeError):
            slice_history(history, 0, 1)
        with pytest.raises(TypeError):
            peek_last(history)

    def test_only_read_fields_are_checked(self) -> None:
        """A malformed field that is not read does not stop reading the others."""
        history = {"a": jnp.zeros((1, 3, 1)), "b": "not an array"}

        assert (1, 1, 1) == slice_history(history, 0, 1, fields="a")["a"].shape

    def test_jittable_and_vmappable(self, filled: Any) -> None:
        """Under jit (bounds static) and vmap over rows the result equals the eager one."""
        ordered = to_host(filled)
        jitted = jax.jit(slice_history, static_argnums=(1, 2))

        per_row = jax.vmap(lambda row: slice_history({"obs": row[None]}, 1, 2)["obs"][0])

        np.testing.assert_array_equal(ordered["obs"][:, 1:3], jitted(filled, 1, 2)["obs"])
        np.testing.assert_array_equal(ordered["obs"][:, 1:3], per_row(jnp.asarray(ordered["obs"])))


class TestToHost:
    def test_gives_numpy_in_time_order(self, filled: Any) -> None:
        """to_host returns numpy arrays keyed by field, ring histories in time order."""
        host = to_host(filled)

        assert all(isinstance(v, np.ndarray) for v in host.values())
        np.testing.assert_array_equal([2.0, 3.0, 4.0], host["reward"][0])

    def test_keys_copies_only_those(self) -> None:
        """With keys=, only those top-level entries (nested ones too) come to the host."""
        history = {"a": jnp.ones(2), "b": {"x": jnp.zeros(2), "n": 3}}

        host = to_host(history, keys=("b",))

        assert isinstance(host["a"], jax.Array) and isinstance(host["b"]["x"], np.ndarray)
        assert (3 == host["b"]["n"]) and (history["a"] is host["a"])

    def test_passes_traced_values_through_jit(self) -> None:
        """Inside jit there is no host to copy to: to_host returns the traced values."""
        out = jax.jit(lambda h: to_host(h))({"a": jnp.arange(3.0)})

        np.testing.assert_array_equal([0.0, 1.0, 2.0], np.asarray(out["a"]))

    def test_unknown_key_is_a_key_error(self) -> None:
        """keys naming something absent raise UnknownFieldError."""
        with pytest.raises(UnknownFieldError, match="'z'"):
            to_host({"a": jnp.ones(1)}, keys=["z"])


class TestToDevice:
    def test_round_trip(self, filled: Any) -> None:
        """to_device puts a history, or its to_host copy, on a device with equal values."""
        device = jax.devices()[0]

        moved = to_device(filled, device)

        np.testing.assert_array_equal(to_host(filled)["obs"], to_host(moved)["obs"])
        assert isinstance(to_device(to_host(filled), [device])["obs"], jax.Array)

    def test_ring_stays_a_ring(self) -> None:
        """A ring history comes back as a RingHistory, keys selecting whole fields."""
        ring = create_history(SPEC, B, layout="ring")

        moved = to_device(ring, keys=["obs"])

        assert isinstance(moved, RingHistory) and moved.data["reward"] is ring.data["reward"]

    def test_keys_moves_only_those_and_leaves_input_alone(self) -> None:
        """Unselected entries are returned as the same objects, and the input dict is not changed."""
        history = {"a": np.ones(2), "b": {"n": 1}}

        moved = to_device(history, keys=["a"])

        assert isinstance(moved["a"], jax.Array) and moved["b"] is history["b"]
        assert isinstance(history["a"], np.ndarray)

    @pytest.mark.parametrize("devices", [[], ["cpu"], 3])
    def test_bad_devices_are_a_type_error(self, devices: Any) -> None:
        """devices must be None, a Device, or a non-empty sequence of them."""
        with pytest.raises(ConfigurationTypeError, match="devices must be"):
            to_device({"a": jnp.ones(1)}, devices)

    def test_round_robin_over_devices(self) -> None:
        """With two devices the selected keys alternate between them (two CPU devices, subprocess)."""
        code = (
            "import jax, jax.numpy as jnp\n"
            "from goggles_io.history import to_device\n"
            "d = jax.devices()\n"
            "m = to_device({'a': jnp.ones(1), 'b': jnp.ones(1), 'c': jnp.ones(1)}, devices=d)\n"
            "print([next(iter(m[k].devices())).id for k in 'abc'])\n"
        )
        env = {"XLA_FLAGS": "--xla_force_host_platform_device_count=2", "JAX_PLATFORMS": "cpu"}
        out = subprocess.run(
            [sys.executable, "-c", code],
            capture_output=True,
            text=True,
            check=True,
            env={**os.environ, **env},
        ).stdout

        assert "[0, 1, 0]" == out.strip()


class TestTypes:
    def test_history_covers_both_layouts(self) -> None:
        """History is the union of the shift dict and RingHistory; Array and PRNGKey are jax.Array."""
        assert RingHistory in typing.get_args(history_types.History)
        assert history_types.Array is jax.Array is history_types.PRNGKey
