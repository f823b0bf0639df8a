"""load_configuration / save_configuration (goggles_io.config): strict safe YAML, exact round trips."""

from __future__ import annotations

import math
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goggles_io.config import PrettyConfig, load_configuration, save_configuration
from goggles_io.exceptions import (
    ConfigurationError,
    ConfigurationFileError,
    ConfigurationNotFoundError,
    GogglesIOError,
)

_scalars = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20)
)
_values = st.recursive(
    _scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=12,
)
_configs = st.dictionaries(st.text(max_size=10), _values, max_size=6)


def _write(tmp_path: Path, text: str, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


class TestLoadConfiguration:
    def test_mapping_loads_as_pretty_config_usable_as_dict(self, tmp_path: Path) -> None:
        """A YAML mapping loads into a PrettyConfig that indexes and compares like a dict."""
        path = _write(tmp_path, "learning_rate: 0.001\nmodel:\n  layers: [64, 64]\n")

        config = load_configuration(path)

        assert isinstance(config, PrettyConfig)
        assert {"learning_rate": 0.001, "model": {"layers": [64, 64]}} == config
        assert 0.001 == config["learning_rate"]

    def test_str_is_indented_yaml(self, tmp_path: Path) -> None:
        """str() of a config is block-style YAML, one key per line, in file order."""
        config = load_configuration(_write(tmp_path, "b: 1\na:\n  c: x\n"))

        assert "b: 1\na:\n  c: x" == str(config)

    def test_str_puts_lists_of_scalars_on_one_line(self) -> None:
        """A list of scalars prints inline, as it is usually written by hand."""
        assert "model:\n  hidden: [64, 64]" == str(PrettyConfig({"model": {"hidden": [64, 64]}}))

    def test_str_falls_back_to_repr_for_unrepresentable_values(self) -> None:
        """Printing a config holding an arbitrary object never raises."""
        marker = object()

        assert repr({"x": marker}) == str(PrettyConfig({"x": marker}))

    def test_empty_file_loads_as_empty_config(self, tmp_path: Path) -> None:
        """An empty file is an empty configuration, not an error."""
        assert {} == load_configuration(_write(tmp_path, ""))

    def test_missing_file_raises_not_found_naming_the_path(self, tmp_path: Path) -> None:
        """A missing file raises ConfigurationNotFoundError, also a FileNotFoundError."""
        path = tmp_path / "nope.yaml"

        with pytest.raises(ConfigurationNotFoundError, match=r"nope\.yaml") as info:
            load_configuration(path)

        assert isinstance(info.value, FileNotFoundError)
        assert isinstance(info.value, GogglesIOError)
        assert str(path) == info.value.path

    def test_duplicate_key_names_key_file_and_lines(self, tmp_path: Path) -> None:
        """A key given twice in one mapping is an error naming the key, file and both lines."""
        path = _write(tmp_path, "model:\n  lr: 1\n  depth: 2\n  lr: 3\n")

        with pytest.raises(ConfigurationFileError) as info:
            load_configuration(path)

        assert "'lr'" in str(info.value)
        assert str(path) in str(info.value)
        assert "line 4" in str(info.value) and "line 2" in str(info.value)
        assert ("lr", str(path)) == (info.value.key, info.value.path)

    def test_merge_key_override_is_not_a_duplicate(self, tmp_path: Path) -> None:
        """Overriding a key merged in with ``<<: *anchor`` is valid YAML and loads."""
        text = "base: &b\n  lr: 1\n  depth: 2\nrun:\n  <<: *b\n  lr: 5\n"

        config = load_configuration(_write(tmp_path, text))

        assert {"lr": 5, "depth": 2} == config["run"]

    @pytest.mark.parametrize(
        "text", ["1: a\n", "true: a\n", "null: a\n", "x:\n  ? [1, 2]\n  : a\n"]
    )
    def test_non_string_key_is_an_error_naming_the_file(self, tmp_path: Path, text: str) -> None:
        """Keys that YAML reads as int, bool, null or a list are refused, naming the file."""
        path = _write(tmp_path, text)

        with pytest.raises(ConfigurationFileError, match="keys must be strings") as info:
            load_configuration(path)

        assert str(path) in str(info.value)

    @pytest.mark.parametrize("text", ["- a\n- b\n", "just a string\n", "42\n"])
    def test_top_level_not_a_mapping_is_an_error(self, tmp_path: Path, text: str) -> None:
        """A list or scalar at the top level raises ConfigurationError naming the file."""
        path = _write(tmp_path, text)

        with pytest.raises(ConfigurationError, match="must hold a mapping"):
            load_configuration(path)

    def test_invalid_yaml_is_a_configuration_error(self, tmp_path: Path) -> None:
        """Broken YAML raises ConfigurationFileError carrying pyyaml's line information."""
        path = _write(tmp_path, "a: [1, 2\nb: 3\n")

        with pytest.raises(ConfigurationFileError, match="invalid YAML") as info:
            load_configuration(path)

        assert "line" in str(info.value)

    def test_python_object_tags_are_refused(self, tmp_path: Path) -> None:
        """Safe loading only: a ``!!python/object`` tag is an error and runs nothing."""
        path = _write(tmp_path, "x: !!python/object/apply:os.system ['true']\n")

        with pytest.raises(ConfigurationFileError, match="invalid YAML"):
            load_configuration(path)


class TestSaveConfiguration:
    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(config=_configs)
    def test_save_then_load_round_trips(
        self, tmp_path_factory: Any, config: dict[str, Any]
    ) -> None:
        """Any nested dict of str/int/float/bool/None/list loads back equal after saving."""
        path = tmp_path_factory.mktemp("cfg") / "out.yaml"

        save_configuration(config, path)

        assert config == load_configuration(path)

    def test_pretty_config_round_trips(self, tmp_path: Path) -> None:
        """A loaded config saves and loads back equal, as the README's example does."""
        source = _write(tmp_path, "lr: 0.1\nnested:\n  tags: [a, b]\n")
        config = load_configuration(source)

        save_configuration(config, tmp_path / "out.yaml")

        assert config == load_configuration(tmp_path / "out.yaml")

    def test_non_finite_floats_round_trip(self, tmp_path: Path) -> None:
        """NaN and infinities are written as .nan/.inf and load back as floats."""
        save_configuration({"a": math.nan, "b": math.inf, "c": -math.inf}, tmp_path / "f.yaml")

        loaded = load_configuration(tmp_path / "f.yaml")

        assert math.isnan(loaded["a"])
        assert (math.inf, -math.inf) == (loaded["b"], loaded["c"])

    def test_numpy_values_are_saved_as_plain_numbers(self, tmp_path: Path) -> None:
        """numpy scalars and arrays are written as Python numbers and lists."""
        config = {"n": np.int64(3), "x": np.float32(0.5), "flag": np.bool_(True)}
        config["arr"] = np.arange(3)

        save_configuration(config, tmp_path / "np.yaml")

        assert {"n": 3, "x": 0.5, "flag": True, "arr": [0, 1, 2]} == load_configuration(
            tmp_path / "np.yaml"
        )

    def test_tuples_are_saved_as_lists(self, tmp_path: Path) -> None:
        """A tuple value is written as a YAML list."""
        save_configuration({"shape": (64, 64)}, tmp_path / "t.yaml")

        assert {"shape": [64, 64]} == load_configuration(tmp_path / "t.yaml")

    @pytest.mark.parametrize(
        "value", [object(), b"bytes", np.array([b"a"]), {1.5: "x"}, np.complex64(1j)]
    )
    def test_unsupported_value_is_refused_and_file_untouched(
        self, tmp_path: Path, value: object
    ) -> None:
        """A value YAML cannot round-trip raises naming its key path; no file is written."""
        path = tmp_path / "bad.yaml"

        with pytest.raises(ConfigurationFileError, match=r"model\.opt") as info:
            save_configuration({"model": {"opt": value}}, path)

        assert str(path) == info.value.path
        assert [] == list(tmp_path.iterdir())

    def test_non_mapping_config_is_refused(self, tmp_path: Path) -> None:
        """Saving a list instead of a mapping raises ConfigurationError naming ``config``."""
        with pytest.raises(ConfigurationError, match="config must be a mapping"):
            save_configuration([1, 2], tmp_path / "l.yaml")  # type: ignore[arg-type]

    def test_failed_save_keeps_the_previous_file(self, tmp_path: Path) -> None:
        """A refused save leaves an existing file exactly as it was."""
        path = tmp_path / "keep.yaml"
        save_configuration({"a": 1}, path)

        with pytest.raises(ConfigurationFileError):
            save_configuration({"a": object()}, path)

        assert {"a": 1} == load_configuration(path)


class TestExample:
    def test_example_101_runs_and_leaves_the_temp_dir_empty(self, tmp_path: Path) -> None:
        """examples/101_config.py exits 0 and removes every file it made in the temp dir."""
        example = Path(__file__).resolve().parents[3] / "examples" / "101_config.py"
        env = {**os.environ, "TMPDIR": str(tmp_path)}

        done = subprocess.run(
            [sys.executable, str(example)], env=env, capture_output=True, text=True, timeout=60
        )

        assert 0 == done.returncode, done.stderr
        assert "rejected: duplicate key 'lr'" in done.stdout
        assert [] == list(tmp_path.iterdir())
