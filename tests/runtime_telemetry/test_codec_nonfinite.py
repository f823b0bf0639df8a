"""``to_json`` writes strict JSON whatever the floats; ``from_json`` gives back the same NaN/inf."""

from __future__ import annotations

import io
import json
import math
from typing import Any

import attrs

from runtime_telemetry import TelemetryEvent, from_json, read_jsonl, to_json


def _nan_key(values: tuple[float, ...]) -> tuple[Any, ...]:
    return tuple("nan" if math.isnan(v) else v for v in values)


@attrs.frozen(kw_only=True)
class CodecNonFinite(TelemetryEvent):
    value: float = attrs.field(eq=lambda v: "nan" if math.isnan(v) else v)
    window: tuple[float, ...] = attrs.field(eq=_nan_key)
    note: str = ""


def refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class TestNonFinite:
    def test_line_is_strict_json_and_decodes_to_the_same_values(self) -> None:
        """NaN and ±inf are the convention's strings in the line and floats again after decoding."""
        event = CodecNonFinite(value=math.nan, window=(math.inf, 1.0, -math.inf), note="NaN")
        line = to_json(event)
        data = json.loads(line, parse_constant=refuse)

        assert ("NaN", ["Infinity", 1.0, "-Infinity"], "NaN") == (
            data["value"],
            data["window"],
            data["note"],
        )
        assert [["value"], ["window", 0], ["window", 2]] == data["_nonfinite"]
        assert event == from_json(line)
        assert "NaN" == from_json(line).note  # a logged string stays a string

    def test_lines_written_before_the_convention_still_decode(self) -> None:
        """A line with Python's bare NaN/Infinity (what to_json wrote before) reads as floats."""
        old = json.dumps(
            {"kind": CodecNonFinite.kind, "version": CodecNonFinite.version,
             "timestamp": 1.0, "value": math.nan, "window": [math.inf], "note": ""}
        )  # fmt: skip
        assert "NaN" in old

        [event] = read_jsonl(io.StringIO(old + "\n"))

        assert math.isnan(event.value) and (math.inf,) == event.window
