"""Typed configs: a dataclass on ``goggles_io.config.PrettyConfig`` mirrors its public fields."""

from __future__ import annotations

import dataclasses
import json
import math
import subprocess
import sys
from dataclasses import InitVar, dataclass, field
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

import goggles_io as gg
from goggles_io.config import PrettyConfig, load_configuration
from goggles_io.exceptions import ConfigurationError, ConfigurationFileError


@dataclass(frozen=True)
class Camera(PrettyConfig):
    """A frozen typed config with validation that does not call super().__post_init__."""

    device: str = "/dev/video0"
    fps: int = 30
    _token: str = "internal"

    def __post_init__(self) -> None:
        if self.fps <= 0:
            raise ValueError(f"fps must be > 0 (got {self.fps})")


@dataclass
class Plain(PrettyConfig):
    """A mutable typed config with no __post_init__ of its own."""

    lr: float = 0.1
    tags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Derived(PrettyConfig):
    """Uses an InitVar, a non-init field and a __post_init__ that calls super()."""

    width: int = 2
    scale: InitVar[int] = 1
    area: int = field(init=False, default=0)

    def __post_init__(self, scale: int) -> None:
        object.__setattr__(self, "area", self.width * self.width * scale)
        super().__post_init__(scale)


class TestMirroring:
    def test_public_fields_fill_the_dict_in_order(self) -> None:
        """dict(config) holds the fields without a leading underscore, in declaration order."""
        cam = Camera(fps=60)

        assert [("device", "/dev/video0"), ("fps", 60)] == list(cam.items())
        assert "internal" == cam._token

    def test_own_post_init_validates_before_mirroring(self) -> None:
        """A subclass's __post_init__ still runs and can refuse the values."""
        with pytest.raises(ValueError, match="fps must be > 0"):
            Camera(fps=0)

    def test_subclass_without_post_init_is_mirrored(self) -> None:
        """A dataclass that defines no __post_init__ is mirrored by the base's."""
        assert {"lr": 0.5, "tags": ["a"]} == dict(Plain(lr=0.5, tags=["a"]))

    def test_init_var_and_non_init_field(self) -> None:
        """InitVars reach __post_init__; a field it computes is in the dict with its final value."""
        assert {"width": 3, "area": 18} == dict(Derived(width=3, scale=2))

    def test_replace_builds_a_new_mirrored_config(self) -> None:
        """dataclasses.replace is how a frozen config changes; the copy's dict follows."""
        cam = dataclasses.replace(Camera(), device="/dev/video1")

        assert "/dev/video1" == cam["device"]

    def test_str_is_yaml_of_public_fields(self) -> None:
        """print(config) shows the public fields as YAML, not the dataclass repr."""
        assert "device: /dev/video0\nfps: 30" == str(Camera())


class TestFromConfig:
    def test_unknown_keys_are_ignored(self) -> None:
        """Keys that name no field are dropped: neither in the dict nor attributes."""
        cam = Camera.from_config({"fps": 15, "exposure": 3})

        assert {"device": "/dev/video0", "fps": 15} == dict(cam)
        assert not hasattr(cam, "exposure")

    def test_declared_private_field_is_refused(self) -> None:
        """Setting a declared _-field from a mapping raises ConfigurationError naming it."""
        with pytest.raises(ConfigurationError, match="_token") as info:
            Camera.from_config({"_token": "x", "fps": 1})

        assert isinstance(info.value, ValueError)
        assert "_token" == info.value.key

    def test_undeclared_underscore_key_is_just_unknown(self) -> None:
        """A _-key that is not a field is ignored like any unknown key."""
        assert "internal" == Camera.from_config({"_other": 1})._token

    def test_non_init_field_is_not_settable(self) -> None:
        """A field with init=False is computed, so a key naming it is ignored."""
        assert 4 == Derived.from_config({"area": 99})["area"]

    def test_plain_pretty_config_keeps_every_key(self) -> None:
        """PrettyConfig.from_config on the base class copies the whole mapping."""
        cfg = PrettyConfig.from_config({"a": 1, "_b": 2})

        assert type(cfg) is PrettyConfig
        assert {"a": 1, "_b": 2} == cfg

    @given(device=st.text(max_size=20), fps=st.integers(min_value=1))
    def test_to_dict_from_config_round_trips(self, device: str, fps: int) -> None:
        """from_config(to_dict()) rebuilds an equal config for any valid field values."""
        cam = Camera(device=device, fps=fps)

        assert cam == Camera.from_config(cam.to_dict())


class TestSerialising:
    def test_to_dict_is_plain_and_converts_nested_configs(self) -> None:
        """to_dict returns a dict (not a PrettyConfig), nested PrettyConfigs included."""
        cfg = PrettyConfig(cam=Camera(), n=1)

        out = cfg.to_dict()

        assert type(out) is dict
        assert type(out["cam"]) is dict
        assert {"cam": {"device": "/dev/video0", "fps": 30}, "n": 1} == out

    def test_to_yaml_writes_public_fields_only(self, tmp_path: Path) -> None:
        """to_yaml writes what load_configuration reads back as the public fields."""
        Camera(fps=5).to_yaml(tmp_path / "cam.yaml")

        assert {"device": "/dev/video0", "fps": 5} == load_configuration(tmp_path / "cam.yaml")

    def test_to_json_writes_public_fields_only(self, tmp_path: Path) -> None:
        """to_json writes strict JSON of the public fields."""
        Plain(tags=["x"]).to_json(tmp_path / "p.json")

        loaded = json.loads((tmp_path / "p.json").read_text(encoding="utf-8"))
        assert {"lr": 0.1, "tags": ["x"]} == loaded

    def test_to_json_refuses_nan_and_writes_nothing(self, tmp_path: Path) -> None:
        """NaN has no strict-JSON spelling: ConfigurationFileError, and no file appears."""
        with pytest.raises(ConfigurationFileError, match="JSON") as info:
            Plain(lr=math.nan).to_json(tmp_path / "nan.json")

        assert str(tmp_path / "nan.json") == info.value.path
        assert [] == list(tmp_path.iterdir())

    def test_to_json_refuses_objects_naming_the_key(self, tmp_path: Path) -> None:
        """A value with no plain form is refused with its key path."""
        with pytest.raises(ConfigurationFileError, match=r"tags\[0\]"):
            Plain(tags=[object()]).to_json(tmp_path / "o.json")  # type: ignore[list-item]


class TestSubmoduleAttribute:
    def test_config_is_an_attribute_loaded_on_first_use(self) -> None:
        """gg.config works after a bare `import goggles_io`, which itself does not load it."""
        code = (
            "import sys, goggles_io as gg; "
            "before = 'goggles_io.config' in sys.modules; "
            "print(before, gg.config.load_configuration is gg.load_configuration, "
            "gg.config is sys.modules['goggles_io.config'])"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout

        assert "False True True" == out.strip()

    def test_config_is_the_home_of_the_top_level_names(self) -> None:
        """The top-level names are the config module's own objects, not copies."""
        assert gg.PrettyConfig is gg.config.PrettyConfig
        assert gg.save_configuration is gg.config.save_configuration
