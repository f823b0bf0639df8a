"""goggles_io.media.yaml_dump: numpy-laden data as YAML any safe loader reads back."""

from __future__ import annotations

import subprocess
import sys
from typing import Any

import numpy as np
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from goggles_io.exceptions import InvalidPayloadError
from goggles_io.media import yaml_dump

_ints = hnp.arrays(
    hnp.integer_dtypes(endianness="="), hnp.array_shapes(min_dims=0, max_dims=3, max_side=3)
)
_floats = hnp.arrays(
    hnp.floating_dtypes(endianness="=", sizes=(32, 64)),
    hnp.array_shapes(min_dims=0, max_dims=2, max_side=3),
    elements=st.floats(allow_nan=False, allow_infinity=False, width=32),
)


def _load(text: str) -> Any:
    return yaml.safe_load(text)


class TestYamlDump:
    @given(array=_ints | _floats)
    def test_arrays_load_back_as_their_tolist(self, array: np.ndarray) -> None:
        """Any int/float array (0-d included) reads back equal to array.tolist()."""
        assert array.tolist() == _load(yaml_dump({"a": array}))["a"]

    def test_scalars_and_bools_become_python_values(self) -> None:
        """numpy scalars of every kind are written as plain YAML scalars."""
        data = {"i": np.uint8(7), "f": np.float16(0.5), "b": np.bool_(False), "s": np.str_("x")}

        assert {"i": 7, "f": 0.5, "b": False, "s": "x"} == _load(yaml_dump(data))

    def test_numpy_keys_and_number_keys_are_kept(self) -> None:
        """Keys may be numbers (numpy ones converted), bools or None, unlike config files."""
        data = {np.int32(3): "a", 1.5: "b", None: "c", True: "d"}

        assert {3: "a", 1.5: "b", None: "c", True: "d"} == _load(yaml_dump(data))

    def test_object_arrays_and_tuples_are_lists(self) -> None:
        """Object arrays and tuples become lists whose elements are converted too."""
        data = (np.array([np.float64(1.0), (np.int8(2),), None], dtype=object), "t")

        assert [[1.0, [2], None], "t"] == _load(yaml_dump(data))

    def test_text_has_no_python_tags(self) -> None:
        """The output is plain YAML: no !!python tags a safe loader would reject."""
        assert "!!" not in yaml_dump({"a": np.arange(3), "b": (np.float32(1),)})

    def test_order_is_kept(self) -> None:
        """Mappings are written in insertion order, not sorted."""
        assert "z: 1\na: 2\n" == yaml_dump({"z": 1, "a": 2})

    @pytest.mark.parametrize(
        "value", [object(), b"raw", np.complex128(1j), np.array([b"x"]), {(1, 2): "tuple key"}]
    )
    def test_value_without_plain_form_is_refused_with_its_path(self, value: object) -> None:
        """Objects, bytes, complex numbers and tuple keys raise InvalidPayloadError naming the path."""
        with pytest.raises(InvalidPayloadError, match=r"outer\.inner") as info:
            yaml_dump({"outer": {"inner": value}})

        assert isinstance(info.value, ValueError)

    def test_import_loads_no_image_libraries(self) -> None:
        """Importing goggles_io.media pulls in neither pillow, imageio, matplotlib nor pyyaml."""
        code = (
            "import sys, goggles_io.media; "
            "print(sorted(m for m in ('PIL', 'imageio', 'matplotlib', 'yaml') if m in sys.modules))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout

        assert "[]" == out.strip()
