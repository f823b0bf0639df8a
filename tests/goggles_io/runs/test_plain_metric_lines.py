"""Plain metric lines read as whole columns equal the line-by-line reading (issue 35).

``json_lines`` reads a chunk of plain metric lines (no custom x axis, no caller-given time)
with a few list passes and numpy, and falls back to the per-line rules for anything else. The
reference is the same function with ``by_line=True``: every line through ``_metric``, ``_media``
and the skipped count. Random chunks mix plain lines with odd steps and stamps (None, strings,
bools, ints beyond 64 bits), values of every kind (``"NaN"`` markers, strings, lists, None),
custom axes, media and log lines, damaged lines, bare ``NaN`` literals and duplicate keys.
"""

from __future__ import annotations

import itertools
import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import nonfinite_json
from goggles_io.runs.lines import Parsed, json_lines, number
from strategies import metric_line_values

KEYS = st.sampled_from(["loss", "lr", "acc", "q"])
VALUES = metric_line_values
ODD = st.one_of(
    st.none(), st.booleans(), st.sampled_from(["NaN", "7", "Infinity"]),
    st.integers(-(2**70), 2**70), st.floats(allow_nan=True, allow_infinity=True),
)  # fmt: skip
PAYLOAD = st.dictionaries(KEYS, VALUES, max_size=4)
SAME = st.fixed_dictionaries({"loss": st.floats(-1e6, 1e6), "lr": st.floats(0, 1)})


@st.composite
def metric_line(draw: st.DrawFn) -> bytes:
    """A metric line: usually plain (our writer's shape), sometimes odd in one field."""
    obj: dict[str, Any] = {"kind": "metric", "scope": "global"}
    obj["step"] = draw(st.one_of(st.integers(0, 10**6), st.integers(0, 10**6), ODD))
    obj["timestamp"] = draw(st.one_of(st.floats(0, 2e9), ODD))
    obj["payload"] = draw(st.one_of(SAME, SAME, PAYLOAD, st.sampled_from([None, [1.0], "x"])))
    layout = draw(st.sampled_from(["events", "log", "odd"]))
    if layout == "events":
        obj["extra"] = draw(st.sampled_from([{}, {"note": 1}, {"x_axis": "epoch", "x": 2.5},
                                             {"x_axis": 3}, {"x_axis": "epoch"}]))  # fmt: skip
    elif layout == "log" and draw(st.booleans()):
        obj["extra.x_axis"], obj["extra.x"] = "epoch", draw(ODD)
    elif layout == "odd":
        obj["extra"] = draw(st.sampled_from([None, [1], "x"]))
    if draw(st.integers(0, 9)) == 0:
        obj["time"] = draw(ODD)
    for key in [k for k in obj if draw(st.integers(0, 19)) == 0]:
        del obj[key]  # a missing key
    return nonfinite_json.dumps(obj).encode()


OTHER = st.sampled_from(
    [
        b"", b"   ", b"not json", b"[1, 2]", b"1", b'"text"', b"{", b'{"kind": "metric", "payload"',
        b'{"kind": "metric", "step": 1, "timestamp": 1.0, "payload": {"loss": NaN}}',
        b'{"kind": "metric", "step": 2, "timestamp": 1.0, "payload": {"loss": 1, "loss": 2.5}}',
        b'{"kind": "metric", "step": 3, "timestamp": 1.0, "payload": {"lr": 1e400}}',
        b'{"kind": "metric", "step": 18446744073709551617, "timestamp": 1.0, "payload": {"lr": 1}}',
        b'{"kind": "image", "step": 4, "file": "images/a.png", "timestamp": 2.0}',
        b'{"kind": "log", "payload": "hello"}',
        b'{"kind": "scalar", "payload": {"loss": 1.0}}',
    ]
)  # fmt: skip
LINES = st.lists(st.one_of(metric_line(), metric_line(), metric_line(), OTHER), max_size=40)


def _reading(parsed: Parsed) -> str:
    """Everything a chunk yields, NaN equal to NaN (``json.dumps`` writes both as ``NaN``)."""
    metrics = {
        name: [cols.x_axis, list(zip(cols.step, cols.time, cols.x, cols.value, strict=True))]
        for name, cols in parsed.metrics.items()
        if len(cols)
    }
    return json.dumps([metrics, parsed.media, parsed.logs, parsed.skipped], sort_keys=True)


@settings(max_examples=400, deadline=None)
@given(lines=LINES, cuts=st.lists(st.integers(0, 40), max_size=4))
def test_column_reading_equals_the_line_by_line_reading(
    lines: list[bytes], cuts: list[int]
) -> None:
    reference = json_lines(lines, by_line=True)
    assert _reading(json_lines(lines)) == _reading(reference)
    chunked = Parsed()
    bounds = sorted({0, len(lines), *(c for c in cuts if c <= len(lines))})
    for start, end in itertools.pairwise(bounds):
        json_lines(lines[start:end], into=chunked)
    assert _reading(chunked) == _reading(reference)


@settings(max_examples=100, deadline=None)
@given(payloads=st.lists(SAME, min_size=1, max_size=30), steps=st.lists(st.integers(0, 99)))
def test_plain_lines_keep_every_point(payloads: list[dict[str, float]], steps: list[int]) -> None:
    lines = [
        nonfinite_json.dumps({"kind": "metric", "step": i, "timestamp": 1.5 + i, "extra": {},
                              "payload": p}).encode()
        for i, p in enumerate(payloads)
    ]  # fmt: skip
    parsed = json_lines(lines)
    assert list(parsed.metrics["loss"].value) == [p["loss"] for p in payloads]
    assert list(parsed.metrics["lr"].step) == [float(i) for i in range(len(payloads))]
    assert list(parsed.metrics["lr"].time) == [1.5 + i for i in range(len(payloads))]
    assert parsed.skipped == 0


@settings(max_examples=150, deadline=None)
@given(
    turns=st.lists(st.tuples(st.sampled_from(["m0", "m1", "m2"]), VALUES), min_size=1, max_size=60),
    cuts=st.lists(st.integers(0, 60), max_size=3),
)
def test_one_metric_a_line_taking_turns(turns: list[tuple[str, Any]], cuts: list[int]) -> None:
    """``logger.scalar``'s lines (issue 44): shapes that share no metric are gathered a shape at
    a time, each metric's points in line order, equal to json.loads line by line."""
    lines = [
        nonfinite_json.dumps({"kind": "metric", "scope": "global", "payload": {name: value},
                              "filepath": "t.py", "lineno": 1, "step": i, "timestamp": 0.5 + i,
                              "logger": "train", "pid": 1}).encode()
        for i, (name, value) in enumerate(turns)
    ]  # fmt: skip
    reference = json_lines(lines, by_line=True)
    assert _reading(json_lines(lines)) == _reading(reference)
    chunked = Parsed()
    bounds = sorted({0, len(lines), *(c for c in cuts if c <= len(lines))})
    for start, end in itertools.pairwise(bounds):
        json_lines(lines[start:end], into=chunked)
    assert _reading(chunked) == _reading(reference)
    for name in {name for name, _ in turns}:  # the oracle: json.loads and the documented rule
        expected = [
            (float(i), value)
            for i, line in enumerate(lines)
            if name in (obj := json.loads(line))["payload"]
            and (value := number(obj["payload"][name])) is not None
        ]
        cols = chunked.metrics.get(name)
        got = [] if cols is None else list(zip(cols.step, cols.value, strict=True))
        assert json.dumps(got) == json.dumps(expected)
