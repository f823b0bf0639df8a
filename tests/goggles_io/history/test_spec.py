"""goggles_io.history.spec: specs are plain records, checked by from_config and validate_spec."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

jnp = pytest.importorskip("jax.numpy")

from goggles_io.exceptions import ConfigurationError, ConfigurationTypeError  # noqa: E402
from goggles_io.history import HistoryFieldSpec, HistorySpec  # noqa: E402
from goggles_io.history.spec import validate_spec  # noqa: E402

README_CONFIG = {
    "states": {"length": 100, "shape": (64, 64, 2), "dtype": jnp.float32},
    "actions": {"length": 50, "shape": (8,), "dtype": jnp.float32},
    "rewards": {"length": 100, "shape": (), "dtype": jnp.float32},
}


class TestFromConfig:
    def test_readme_config_builds_field_specs(self) -> None:
        """The README's from_config call gives one HistoryFieldSpec per field."""
        spec = HistorySpec.from_config(README_CONFIG)

        assert HistoryFieldSpec(50, (8,), np.dtype(np.float32), "zeros") == spec.fields["actions"]

    def test_defaults(self) -> None:
        """dtype defaults to float32 and init to zeros."""
        field = HistorySpec.from_config({"a": {"length": 3, "shape": ()}}).fields["a"]

        assert (np.dtype(np.float32), "zeros") == (field.dtype, field.init)

    def test_string_dtype_and_list_shape_are_normalised(self) -> None:
        """A dtype name becomes a numpy dtype and a list shape a tuple."""
        field = HistorySpec.from_config({"a": {"length": 2, "shape": [3], "dtype": "int32"}})

        assert ((3,), np.dtype(np.int32)) == (field.fields["a"].shape, field.fields["a"].dtype)

    def test_field_spec_instances_are_checked_too(self) -> None:
        """A HistoryFieldSpec value is accepted, and a bad one raises like a bad mapping."""
        good = HistoryFieldSpec(2, (1,))

        assert good == HistorySpec.from_config({"a": good}).fields["a"]
        with pytest.raises(ConfigurationError, match="length must be an int >= 1"):
            HistorySpec.from_config({"a": HistoryFieldSpec(0, (1,))})

    @pytest.mark.parametrize(
        ("entry", "error", "match"),
        [
            ({"length": 0, "shape": ()}, ConfigurationError, "length must be an int >= 1"),
            ({"length": 2.5, "shape": ()}, ConfigurationError, "length must be an int >= 1"),
            ({"length": 3, "shape": (-1,)}, ConfigurationError, "non-negative ints"),
            ({"length": 3, "shape": "abc"}, ConfigurationTypeError, "shape must be a tuple/list"),
            (
                {"length": 3, "shape": (), "dtype": "str"},
                ConfigurationTypeError,
                "not a valid JAX dtype",
            ),
            (
                {"length": 3, "shape": (), "dtype": "nope"},
                ConfigurationTypeError,
                "not a valid JAX dtype",
            ),
            (
                {"length": 3, "shape": (), "init": "random"},
                ConfigurationError,
                "init must be one of",
            ),
            ({"length": 3, "shape": (), "init": 1}, ConfigurationError, "init must be one of"),
            (
                {"length": 3, "shape": (), "dtype": "int32", "init": "randn"},
                ConfigurationError,
                "floating",
            ),
        ],
    )
    def test_bad_value_names_field_and_key(
        self, entry: dict[str, Any], error: type, match: str
    ) -> None:
        """A bad length, shape, dtype or init raises naming the field, with the value shown."""
        with pytest.raises(error, match=match) as info:
            HistorySpec.from_config({"obs": entry})

        assert ("'obs'" in str(info.value)) and ("obs" == info.value.key)

    def test_type_errors_are_configuration_errors(self) -> None:
        """A wrong-type value can be caught as TypeError or as the project's ConfigurationError."""
        with pytest.raises(ConfigurationError) as info:
            HistorySpec.from_config({"obs": {"length": 2, "shape": 5}})

        assert isinstance(info.value, TypeError)

    @pytest.mark.parametrize("config", [None, 3, ["a"]])
    def test_config_must_be_a_mapping(self, config: Any) -> None:
        """A config that is not a mapping raises a TypeError."""
        with pytest.raises(ConfigurationTypeError, match="must be a Mapping"):
            HistorySpec.from_config(config)

    def test_non_mapping_field_is_a_type_error(self) -> None:
        """A field whose config is neither a mapping nor a HistoryFieldSpec raises TypeError."""
        with pytest.raises(TypeError, match="'obs' must be a Mapping or HistoryFieldSpec"):
            HistorySpec.from_config({"obs": 5})

    @pytest.mark.parametrize("entry", [{"shape": (2,)}, {"length": 2}])
    def test_length_and_shape_are_required(self, entry: dict[str, Any]) -> None:
        """A field without length or without shape raises, naming the field."""
        with pytest.raises(ConfigurationError, match="'obs' must define 'length' and 'shape'"):
            HistorySpec.from_config({"obs": entry})

    def test_unknown_key_is_named(self) -> None:
        """A misspelt key raises, naming the field and the key."""
        with pytest.raises(ConfigurationError, match="'obs' has unknown key 'lenght'"):
            HistorySpec.from_config({"obs": {"lenght": 3, "shape": ()}})

    def test_empty_spec_is_rejected(self) -> None:
        """A spec without fields raises."""
        with pytest.raises(ConfigurationError, match="at least one field"):
            HistorySpec.from_config({})


class TestRecords:
    def test_building_never_checks(self) -> None:
        """HistoryFieldSpec and HistorySpec accept any values; checks happen where they are used."""
        spec = HistorySpec({"a": HistoryFieldSpec(0, (-1,), "nope", "bad")})

        with pytest.raises(ConfigurationError, match="Invalid history length"):
            validate_spec(spec)

    def test_validate_spec_needs_a_history_spec(self) -> None:
        """validate_spec on a plain mapping raises a TypeError pointing to from_config."""
        with pytest.raises(ConfigurationTypeError, match="from_config"):
            validate_spec({"a": {"length": 2, "shape": ()}})  # type: ignore[arg-type]
