"""The one non-finite convention (``nonfinite_json``): strict JSON out, exact floats back in."""

from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import nonfinite_json


def strict(text: str) -> Any:
    """Python's json refusing NaN/Infinity: what RFC 8259 (and a browser's JSON.parse) accepts."""

    def refuse(name: str) -> Any:
        raise ValueError(f"{name} is not JSON")

    return json.loads(text, parse_constant=refuse)


def same(a: Any, b: Any) -> bool:
    """Equal, NaN equal to NaN, floats kept floats."""
    if isinstance(a, float) and isinstance(b, float):
        return (math.isnan(a) and math.isnan(b)) or a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(same(x, y) for x, y in zip(a, b, strict=True))
    return type(a) is type(b) and a == b


values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.sampled_from(["NaN", "x"]),
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(
            st.text(max_size=4).filter(lambda k: k != "_nonfinite"), inner, max_size=4
        )
    ),
    max_leaves=20,
)


class TestConvention:
    def test_nonfinite_floats_are_strings_listed_by_path(self) -> None:
        """NaN, inf and -inf become their strings; ``_nonfinite`` (the last key) says where."""
        text = nonfinite_json.dumps({"a": math.nan, "b": [1.0, math.inf], "c": {"d": -math.inf}})

        assert {"a": "NaN", "b": [1.0, "Infinity"], "c": {"d": "-Infinity"},
                "_nonfinite": [["a"], ["b", 1], ["c", "d"]]} == strict(text)  # fmt: skip
        assert text.endswith('"_nonfinite": [["a"], ["b", 1], ["c", "d"]]}')

    @given(st.dictionaries(st.text(max_size=4).filter(lambda k: k != "_nonfinite"), values))
    def test_round_trip_is_exact_and_strict(self, document: dict[str, Any]) -> None:
        """Any document comes back equal (a logged string "NaN" stays a string), via strict JSON."""
        text = nonfinite_json.dumps(document)

        strict(text)
        assert same(document, nonfinite_json.loads(text))

    def test_a_document_without_nonfinite_numbers_is_plain_json(self) -> None:
        """Nothing is added when there is nothing to list: the text is json.dumps's."""
        assert json.dumps({"a": 1.5, "b": "NaN"}) == nonfinite_json.dumps({"a": 1.5, "b": "NaN"})

    def test_older_lines_with_bare_literals_are_read(self) -> None:
        """Files written before the convention hold Python's NaN/Infinity literals: read as floats."""
        found = nonfinite_json.loads(b'{"observed": NaN, "window": [Infinity, -Infinity, 1]}')

        assert same({"observed": math.nan, "window": [math.inf, -math.inf, 1]}, found)

    def test_a_top_level_list_gets_the_strings(self) -> None:
        """A list has no key to list paths under: the strings alone, still strict JSON."""
        assert ["NaN", 1.0] == strict(nonfinite_json.dumps([math.nan, 1.0]))

    def test_a_hand_edited_path_is_ignored(self) -> None:
        """A path to nowhere, or to something that is not a marker string, changes nothing."""
        text = '{"a": "x", "b": [1], "_nonfinite": [["a"], ["b", 5], ["zz", "y"], "bad", []]}'

        assert {"a": "x", "b": [1]} == nonfinite_json.loads(text)

    def test_a_document_holding_the_key_is_refused(self) -> None:
        """A caller's own ``_nonfinite`` key would be ambiguous: a clear error, not a bad file."""
        with pytest.raises(ValueError, match="_nonfinite"):
            nonfinite_json.dumps({"_nonfinite": 1})

    def test_unknown_objects_need_a_default(self) -> None:
        """As json.dumps: a TypeError without ``default``; with it, the converted value."""
        with pytest.raises(TypeError, match="set"):
            nonfinite_json.dumps({"a": {1}})
        assert {"a": [1]} == strict(nonfinite_json.dumps({"a": {1}}, default=sorted))
