"""goggles_io.history.spec: building specs from config, and errors that name the field."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jnp = pytest.importorskip("jax.numpy")

from goggles_io.exceptions import ConfigurationError  # noqa: E402
from goggles_io.history import HistoryFieldSpec, HistorySpec  # noqa: E402

README_CONFIG = {
    "states": {"length": 100, "shape": (64, 64, 2), "dtype": jnp.float32},
    "actions": {"length": 50, "shape": (8,), "dtype": jnp.float32},
    "rewards": {"length": 100, "shape": (), "dtype": jnp.float32},
}


class TestHistorySpec:
    def test_readme_config_builds_field_specs(self) -> None:
        """The README's from_config call gives one HistoryFieldSpec per field."""
        spec = HistorySpec.from_config(README_CONFIG)

        assert HistoryFieldSpec(50, (8,), np.float32) == spec.fields["actions"]

    def test_defaults(self) -> None:
        """shape defaults to (), dtype to float32 and init to zeros."""
        assert HistoryFieldSpec(3, (), np.float32, "zeros") == HistoryFieldSpec(3)

    def test_int_shape_is_a_vector(self) -> None:
        """An int shape n means (n,)."""
        assert (4,) == HistoryFieldSpec(3, 4).shape

    def test_string_dtype_is_accepted(self) -> None:
        """A dtype name such as 'int32' is converted to a numpy dtype."""
        assert (
            np.dtype(np.int32)
            == HistorySpec.from_config({"a": {"length": 2, "dtype": "int32"}}).fields["a"].dtype
        )

    def test_field_spec_instances_pass_through(self) -> None:
        """from_config accepts HistoryFieldSpec values as they are."""
        field = HistoryFieldSpec(2)

        assert field == HistorySpec.from_config({"a": field}).fields["a"]

    @pytest.mark.parametrize(
        ("entry", "key"),
        [
            ({"length": 0}, "length"),
            ({"length": 2.5}, "length"),
            ({"length": 3, "shape": (-1,)}, "shape"),
            ({"length": 3, "shape": "abc"}, "shape"),
            ({"length": 3, "dtype": "str"}, "dtype"),
            ({"length": 3, "dtype": "no-such-dtype"}, "dtype"),
            ({"length": 3, "init": "random"}, "init"),
        ],
    )
    def test_bad_field_value_names_field_and_key(self, entry: dict[str, Any], key: str) -> None:
        """A bad length, shape, dtype or init raises a ConfigurationError naming the field and key."""
        with pytest.raises(ConfigurationError, match=f"history field 'obs': {key} must be") as info:
            HistorySpec.from_config({"obs": entry})

        assert "obs" == info.value.key

    def test_unknown_key_is_named(self) -> None:
        """A misspelt key raises, naming the field and the key."""
        with pytest.raises(ConfigurationError, match="'obs' has unknown key 'lenght'"):
            HistorySpec.from_config({"obs": {"lenght": 3}})

    def test_missing_length_is_named(self) -> None:
        """A field without length raises, naming the field."""
        with pytest.raises(ConfigurationError, match="'obs' is missing 'length'"):
            HistorySpec.from_config({"obs": {"shape": (2,)}})

    def test_non_mapping_field_is_named(self) -> None:
        """A field whose config is not a mapping raises, naming the field."""
        with pytest.raises(ConfigurationError, match="'obs' must be a mapping"):
            HistorySpec.from_config({"obs": 5})

    def test_empty_spec_is_rejected(self) -> None:
        """A spec without fields raises."""
        with pytest.raises(ConfigurationError, match="at least one field"):
            HistorySpec.from_config({})

    def test_errors_are_value_errors(self) -> None:
        """Spec errors can be caught as ValueError."""
        with pytest.raises(ValueError):
            HistorySpec.from_config({"obs": {"length": -1}})
