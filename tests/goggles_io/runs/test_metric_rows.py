"""Metric lines read a block at a time equal the per-point reading (issue 35's fast indexer).

The oracle reads each payload value by the documented rule (``number``: ints, floats, bools and
the non-finite marker strings are points; anything else is skipped), line after line; the parser
under test gathers same-shaped lines and converts them with numpy. They must agree point for
point, in order, however the lines are cut into chunks.
"""

from __future__ import annotations

import itertools
import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import nonfinite_json
from goggles_io.runs.lines import Parsed, json_lines, number
from strategies import metric_line_values

KEYS = st.sampled_from(["loss", "lr", "acc", "q", "x"])
VALUES = metric_line_values
LINE = st.fixed_dictionaries(
    {
        "step": st.one_of(st.integers(0, 10**6), st.none()),
        "timestamp": st.floats(0, 2e9),
        "payload": st.dictionaries(KEYS, VALUES, max_size=4),
        "layout": st.sampled_from(["events", "log"]),
        "x": st.one_of(st.none(), st.floats(-1e6, 1e6)),
    }
)


def _line(spec: dict[str, Any]) -> bytes:
    obj: dict[str, Any] = {"kind": "metric", "step": spec["step"],
                           "timestamp": spec["timestamp"], "payload": spec["payload"]}  # fmt: skip
    if spec["layout"] == "events":
        obj["extra"] = {} if spec["x"] is None else {"x_axis": "epoch", "x": spec["x"]}
    elif spec["x"] is not None:
        obj["extra.x_axis"], obj["extra.x"] = "epoch", spec["x"]
    return nonfinite_json.dumps(obj).encode()


def _expected(specs: list[dict[str, Any]]) -> dict[str, list[tuple[float, ...]]]:
    """The per-point reading, line after line."""
    out: dict[str, list[tuple[float, ...]]] = {}
    for spec in specs:
        step = float(spec["step"]) if spec["step"] is not None else math.nan
        x = spec["x"] if spec["x"] is not None else math.nan
        for name, raw in spec["payload"].items():
            value = number(raw)
            if value is not None:
                out.setdefault(name, []).append((step, spec["timestamp"], x, value))
    return out


def _points(parsed: Parsed) -> dict[str, list[tuple[float, ...]]]:
    return {
        name: list(zip(cols.step, cols.time, cols.x, cols.value, strict=True))
        for name, cols in parsed.metrics.items()
        if len(cols)
    }


def _same(a: dict[str, list[tuple[float, ...]]], b: dict[str, list[tuple[float, ...]]]) -> bool:
    """Equal, NaN equal to NaN (``json.dumps`` writes both as ``NaN``)."""
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


@settings(max_examples=300, deadline=None)
@given(specs=st.lists(LINE, max_size=40), cuts=st.lists(st.integers(0, 40), max_size=4))
def test_block_reading_equals_the_per_point_reading(
    specs: list[dict[str, Any]], cuts: list[int]
) -> None:
    lines = [_line(spec) for spec in specs]
    whole = json_lines(lines)
    assert _same(_points(whole), _expected(specs))
    chunked = Parsed()
    bounds = sorted({0, len(lines), *(c for c in cuts if c <= len(lines))})
    for start, end in itertools.pairwise(bounds):
        json_lines(lines[start:end], into=chunked)
    assert _same(_points(chunked), _points(whole))


def test_a_custom_axis_is_kept_per_metric() -> None:
    lines = [_line({"step": i, "timestamp": 1.0, "payload": {"loss": 0.5}, "layout": "log",
                    "x": float(i) / 10}) for i in range(3)]  # fmt: skip
    parsed = json_lines(lines)
    assert parsed.metrics["loss"].x_axis == "epoch"
    assert list(parsed.metrics["loss"].x) == [0.0, 0.1, 0.2]


def test_interleaved_shapes_keep_each_metrics_order() -> None:
    payloads = [{"loss": 1.0}, {"loss": 2.0, "lr": 0.1}, {"loss": 3.0}, {"lr": 0.2}]
    lines = [_line({"step": i, "timestamp": 0.0, "payload": p, "layout": "events", "x": None})
             for i, p in enumerate(payloads)]  # fmt: skip
    parsed = json_lines(lines)
    assert list(parsed.metrics["loss"].value) == [1.0, 2.0, 3.0]
    assert list(parsed.metrics["loss"].step) == [0.0, 1.0, 2.0]
    assert list(parsed.metrics["lr"].value) == [0.1, 0.2]
