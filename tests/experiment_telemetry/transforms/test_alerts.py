"""WandbAlertTransform: MetricAlert stats become real (offline) W&B alerts, rate-limited."""

from __future__ import annotations

from pathlib import Path

import pytest

import goggles_io
from experiment_telemetry.exceptions import ExperimentValueError
from experiment_telemetry.stats import MetricAlert
from experiment_telemetry.transforms import WandbAlertTransform
from runtime_telemetry import get_telemetry
from wandb_reader import read_offline_runs

stats_stream = get_telemetry("experiment_telemetry.stats")


def alert(metric: str = "mean_q", check: str = "value_explosion") -> MetricAlert:
    return MetricAlert(
        check=check, severity="error", source="sac", metric=metric, step=7, message=f"{metric} boom"
    )


class TestWandbAlertTransform:
    def test_rate_limited_per_metric_and_capped(self, tmp_path: Path) -> None:
        """Same metric within min_interval_s is suppressed; max_alerts caps the run; wandb has the rest."""
        pytest.importorskip("wandb")
        now = [0.0]
        handler = goggles_io.WandBHandler(
            project="t", run_name="r", dir=str(tmp_path), mode="offline", name="wb"
        )
        goggles_io.attach(handler, scopes=["experiment"])
        transform = WandbAlertTransform(
            "wb", min_interval_s=60.0, max_alerts=2, clock=lambda: now[0]
        ).attach()
        stats_stream.emit(alert())
        now[0] = 10.0
        stats_stream.emit(alert())  # same metric, 10 s later: suppressed
        stats_stream.emit(alert("critic_loss", "non_finite"))
        now[0] = 100.0
        stats_stream.emit(alert())  # past the interval, but the cap of 2 is reached
        transform.close()
        goggles_io.finish()

        (run,) = read_offline_runs(tmp_path).values()
        assert ["value_explosion: sac/mean_q", "non_finite: sac/critic_loss"] == [
            a["title"] for a in run["alerts"]
        ]
        assert (2, 2) == (transform.sent, transform.suppressed)

    def test_missing_handler_is_counted_not_raised(self) -> None:
        """No handler under that name: the alert is counted in errors and the stream goes on."""
        transform = WandbAlertTransform("nobody").attach()
        stats_stream.emit(alert())
        transform.close()

        assert (0, 1) == (transform.sent, transform.errors)

    @pytest.mark.parametrize(
        "kwargs",
        [
            {"handler": ""},
            {"handler": "x", "min_interval_s": -1},
            {"handler": "x", "max_alerts": -1},
        ],
    )
    def test_bad_arguments_raise(self, kwargs: dict[str, object]) -> None:
        """Empty handler name, negative interval or cap: ExperimentValueError."""
        with pytest.raises(ExperimentValueError):
            WandbAlertTransform(**kwargs)  # type: ignore[arg-type]
