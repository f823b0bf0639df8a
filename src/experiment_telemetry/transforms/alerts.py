"""``WandbAlertTransform``: each ``MetricAlert`` as a W&B alert, rate-limited.

W&B alerts reach e-mail and Slack, so a flood is worse than a miss: one alert per (check,
source, metric) per ``min_interval_s`` and ``max_alerts`` per run; the rest are counted. The
alert travels through ``goggles_io.call_handler`` to the ``WandBHandler`` that owns the run
(in this process or in the dedicated host), so it runs on that handler's thread and never
blocks or fails the training loop; offline runs keep it in the run file.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable

import goggles_io
from experiment_telemetry._validate import check_int
from experiment_telemetry.exceptions import ExperimentValueError
from experiment_telemetry.stats import MetricAlert
from experiment_telemetry.transforms.base import Transform
from runtime_telemetry import receives

__all__ = ["WandbAlertTransform"]

_logger = logging.getLogger(__name__)
_LEVELS = {"warning": "WARN", "error": "ERROR"}


class WandbAlertTransform(Transform):
    """Send ``MetricAlert`` stats to ``wandb.alert`` through the handler named ``handler``.

    Args:
        handler: name the ``WandBHandler`` was attached under.
        scope: the goggles scope whose W&B run gets the alerts.
        min_interval_s: least time between two alerts of one (check, source, metric).
        max_alerts: alerts sent per transform (per run); later ones are only counted.
        clock: monotonic seconds (tests pass a fake one to step time).

    Raises:
        ExperimentValueError: ``handler`` is empty, ``min_interval_s`` < 0 or ``max_alerts`` < 0.
    """

    def __init__(
        self,
        handler: str,
        *,
        scope: str = "experiment",
        min_interval_s: float = 300.0,
        max_alerts: int = 20,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__()
        if not isinstance(handler, str) or not handler:
            msg = (
                f"handler must be the non-empty name of an attached WandBHandler (got {handler!r})."
            )
            raise ExperimentValueError(msg, handler)
        if (
            isinstance(min_interval_s, bool)
            or not isinstance(min_interval_s, (int, float))
            or min_interval_s < 0
        ):
            msg = f"min_interval_s must be a number >= 0 (got {min_interval_s!r})."
            raise ExperimentValueError(msg, min_interval_s)
        check_int("max_alerts", max_alerts, 0)
        self.handler = handler
        self.scope = scope
        self.min_interval_s = float(min_interval_s)
        self.max_alerts = max_alerts
        self._clock = clock
        self._last: dict[tuple[str, str, str], float] = {}
        self.sent = 0
        self.suppressed = 0
        self.errors = 0

    @receives(MetricAlert)
    def _on_alert(self, alert: MetricAlert) -> None:
        key = (alert.check, alert.source, alert.metric)
        now = self._clock()
        last = self._last.get(key)
        if self.sent >= self.max_alerts or (last is not None and now - last < self.min_interval_s):
            self.suppressed += 1
            return
        self._last[key] = now
        payload = {
            "scope": self.scope,
            "title": f"{alert.check}: {alert.source}/{alert.metric}",
            "text": alert.message,
            "level": _LEVELS.get(alert.severity, "WARN"),
            "wait_duration_s": self.min_interval_s,
        }
        try:
            goggles_io.call_handler(self.handler, "alert", payload)
        except Exception as exc:  # a detached handler must not stop the stats stream
            self.errors += 1
            if self.errors == 1:
                _logger.warning("W&B alert via handler %r failed: %r", self.handler, exc)
            return
        self.sent += 1

    def close(self) -> None:
        """Report suppressed alerts once, then detach."""
        if self.suppressed:
            _logger.info(
                "%d W&B alerts were rate-limited (sent %d); all are in alerts.jsonl",
                self.suppressed,
                self.sent,
            )
        super().close()
