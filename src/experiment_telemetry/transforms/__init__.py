"""Transforms: stat events in, goggles_io calls (or files) out; they never aggregate."""

from __future__ import annotations

from experiment_telemetry.transforms.alerts import WandbAlertTransform
from experiment_telemetry.transforms.base import Transform
from experiment_telemetry.transforms.console import ConsoleTransform, PlainTextHandler
from experiment_telemetry.transforms.csv import CsvTransform
from experiment_telemetry.transforms.goggles import GogglesTransform, WandbTransform

__all__ = [
    "ConsoleTransform",
    "CsvTransform",
    "GogglesTransform",
    "PlainTextHandler",
    "Transform",
    "WandbAlertTransform",
    "WandbTransform",
]
