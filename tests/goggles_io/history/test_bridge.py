"""goggles_io.history.bridge: log_history sends a field's newest values to a goggles_io logger."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

jax = pytest.importorskip("jax")
jnp = pytest.importorskip("jax.numpy")

import goggles_io as gg  # noqa: E402
from goggles_io.exceptions import ConfigurationError  # noqa: E402
from goggles_io.history import HistorySpec, create_history, log_history, update_history  # noqa: E402
from goggles_io.testing import MemoryHandler  # noqa: E402

SPEC = HistorySpec.from_config(
    {"reward": {"length": 5, "shape": ()}, "obs": {"length": 3, "shape": (2,)}}
)


@pytest.fixture
def mem() -> Iterator[MemoryHandler]:
    handler = MemoryHandler(name="history.mem")
    gg.attach(handler, scopes=["global"])
    yield handler


@pytest.fixture(params=["shift", "ring"])
def history(request: pytest.FixtureRequest) -> Any:
    h = create_history(SPEC, 4, layout=request.param)
    h = update_history(h, {"reward": jnp.arange(4.0)[:, None], "obs": jnp.ones((4, 1, 2))})
    return update_history(h, {"reward": jnp.arange(4.0)[:, None] * 10})


def logger() -> Any:
    return gg.get_logger("history.test", with_metrics=True)


class TestLogHistory:
    def test_summary_is_one_scalar(self, mem: MemoryHandler, history: Any) -> None:
        """summary='mean' logs the mean of the newest entries as field/mean."""
        log_history(logger(), history, "reward", step=7, summary="mean")
        gg.flush()

        assert [("reward/mean", 15.0, 7)] == mem.metrics()

    def test_summary_list_is_one_push(self, mem: MemoryHandler, history: Any) -> None:
        """A list of summaries logs one metric event holding all of them."""
        log_history(logger(), history, "reward", step=1, summary=["min", "max"])
        gg.flush()

        assert [("reward/min", 0.0, 1), ("reward/max", 30.0, 1)] == mem.metrics()

    def test_latest_values_are_a_histogram(self, mem: MemoryHandler, history: Any) -> None:
        """Without a summary the newest entry of every row goes out as a histogram."""
        log_history(logger(), history, "reward", step=2)
        gg.flush()

        [event] = mem.of_kind("histogram")
        np.testing.assert_array_equal([0.0, 10.0, 20.0, 30.0], event.payload)

    def test_single_value_is_a_scalar(self, mem: MemoryHandler) -> None:
        """A field with one value in all (B=1, shape ()) is logged as a scalar."""
        h = update_history(create_history(SPEC, 1), {"reward": jnp.full((1, 1), 2.5)})

        log_history(logger(), h, "reward", step=3, name="r")
        gg.flush()

        assert [("r", 2.5, 3)] == mem.metrics()

    def test_name_overrides_field(self, mem: MemoryHandler, history: Any) -> None:
        """name= replaces the field name in the metric names."""
        log_history(logger(), history, "obs", step=4, summary="sum", name="o")
        gg.flush()

        assert [("o/sum", 8.0, 4)] == mem.metrics()

    @pytest.mark.parametrize("summary", [None, "mean", ["min", "max"]])
    def test_no_implicit_transfer(self, mem: MemoryHandler, history: Any, summary: Any) -> None:
        """Under transfer_guard('disallow') it still logs: its one explicit device_get is all."""
        log_history(logger(), history, "reward", step=0, summary=summary)  # compile first

        with jax.transfer_guard("disallow"):
            log_history(logger(), history, "reward", step=1, summary=summary)
        gg.flush()

        assert 2 == len(mem.events)

    def test_empty_summary_list_is_rejected(self, history: Any) -> None:
        """An empty list of summaries raises instead of logging nothing."""
        with pytest.raises(ConfigurationError, match="non-empty list"):
            log_history(logger(), history, "reward", step=0, summary=[])

    def test_unknown_summary_is_named(self, history: Any) -> None:
        """An unknown summary raises a ConfigurationError naming it."""
        with pytest.raises(ConfigurationError, match="'median'"):
            log_history(logger(), history, "reward", step=0, summary="median")
