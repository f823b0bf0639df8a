"""A JSON artifact is strict JSON: NaN and infinities in the one convention, restored on reading."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest

import nonfinite_json
from goggles_io._event.artifacts import to_artifact
from goggles_io.exceptions import InvalidPayloadError


def refuse(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


class TestJsonArtifact:
    def test_mapping_with_nan_is_strict_and_round_trips(self) -> None:
        """A mapping (numpy values too) is written strictly and reads back to the same floats."""
        data = {"score": math.nan, "curve": np.array([1.0, np.inf]), "best": np.float32(-np.inf)}
        text = to_artifact(data, "json")
        assert isinstance(text, bytes)

        strict = json.loads(text, parse_constant=refuse)
        back = nonfinite_json.loads(text)

        assert [["score"], ["curve", 1], ["best"]] == strict["_nonfinite"]
        assert math.isnan(back["score"]) and [1.0, math.inf] == back["curve"]
        assert -math.inf == back["best"]

    def test_list_with_nan_gets_the_strings(self) -> None:
        """A top-level list has nowhere to list paths: strict JSON with the strings alone."""
        assert ["NaN", 2] == json.loads(to_artifact([math.nan, 2], "json"), parse_constant=refuse)

    def test_mapping_holding_the_conventions_key_is_refused(self) -> None:
        """A mapping with its own ``_nonfinite`` key would read back wrongly: a clear error."""
        with pytest.raises(InvalidPayloadError, match="_nonfinite"):
            to_artifact({"_nonfinite": [["a"]], "a": "NaN"}, "json")
