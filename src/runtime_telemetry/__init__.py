"""Typed runtime telemetry over stdlib ``logging``: what runtime code imports, and nothing else.

Runtime code does ``telemetry = get_telemetry(__name__)`` and ``telemetry.emit(SomeEvent(...))``;
experiment code attaches ``Subscriber``s and sets levels with ``configure()``. Nothing is
delivered, and nearly nothing is spent, until both happen.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import lazy_loader

from runtime_telemetry._config import configure
from runtime_telemetry._emitter import (
    OFF,
    TRACE,
    TelemetryEmitter,
    get_telemetry,
    getTelemetry,
)
from runtime_telemetry._schema import (
    TelemetryEvent,
    TelemetrySchema,
    TelemetrySnapshot,
    array_eq_key,
)
from runtime_telemetry._subscriber import Subscriber, receives
from runtime_telemetry._threaded import ThreadedSubscriber

if TYPE_CHECKING:  # what the lazy names are, for type checkers (imported on first use)
    from runtime_telemetry._codec import (
        from_dict,
        from_json,
        read_jsonl,
        to_dict,
        to_json,
        write_jsonl,
    )

# The codec (cattrs) loads on first use: runtime code that only emits never pays for it.
__getattr__ = lazy_loader.attach(
    __name__,
    submod_attrs={
        "_codec": ["from_dict", "from_json", "read_jsonl", "to_dict", "to_json", "write_jsonl"]
    },
)[0]

__all__ = [
    "OFF",
    "TRACE",
    "Subscriber",
    "TelemetryEmitter",
    "TelemetryEvent",
    "TelemetrySchema",
    "TelemetrySnapshot",
    "ThreadedSubscriber",
    "array_eq_key",
    "configure",
    "from_dict",
    "from_json",
    "getTelemetry",
    "get_telemetry",
    "read_jsonl",
    "receives",
    "to_dict",
    "to_json",
    "write_jsonl",
]
