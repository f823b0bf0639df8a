"""Configuration files (README "Configuration Management"): load, print, use as dict, save.

Then a typed config: a frozen dataclass on ``gg.config.PrettyConfig``, built from the loaded file.
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass
from pathlib import Path

import goggles_io as gg


@dataclass(frozen=True)
class ModelConfig(gg.config.PrettyConfig):
    """The model part of the file, with defaults and a check; `_`-fields stay out of files."""

    hidden: tuple[int, ...] = (64, 64)
    activation: str = "relu"
    _device: str = "cpu"

    def __post_init__(self) -> None:
        if self.activation not in {"relu", "tanh"}:
            raise ValueError(f"activation must be relu or tanh (got {self.activation!r})")


with tempfile.TemporaryDirectory(prefix="goggles-config-") as tmp:  # removed on exit
    workdir = Path(tmp)
    config_path = workdir / "config.yaml"
    config_path.write_text(
        "learning_rate: 0.0003\n"
        "batch_size: 256\n"
        "model:\n"
        "  hidden: [256, 256]\n"
        "  activation: relu\n"
        "env: HalfCheetah\n"
    )

    # Safe YAML loading, strictly: a duplicate or non-string key is an error naming key and file.
    config = gg.config.load_configuration(config_path)  # also gg.load_configuration
    print(config)  # pretty: indented YAML
    print("learning_rate =", config["learning_rate"])  # access as dict
    print("hidden layers =", config["model"]["hidden"])

    config["seed"] = 42
    gg.save_configuration(config, workdir / "output.yaml")
    assert config == gg.load_configuration(workdir / "output.yaml")
    print("saved and re-loaded output.yaml")

    # Typed: known keys are taken, unknown ones ignored, the dict holds the public fields.
    model = ModelConfig.from_config(config["model"])
    print(f"typed: {model!r}; as dict: {dict(model)}")
    model.to_yaml(workdir / "model.yaml")

    # A mistake in the file is reported with the key, the file and the lines.
    (workdir / "broken.yaml").write_text("lr: 0.1\nbatch_size: 32\nlr: 0.2\n")
    try:
        gg.load_configuration(workdir / "broken.yaml")
    except ValueError as exc:  # ConfigurationError is also a ValueError
        print(f"rejected: {exc}")
