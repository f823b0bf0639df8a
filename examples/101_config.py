"""Configuration files (README "Configuration Management"): load, print, use as dict, save."""

from __future__ import annotations

import tempfile
from pathlib import Path

import goggles_io as gg

workdir = Path(tempfile.mkdtemp(prefix="goggles-config-"))
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
config = gg.load_configuration(config_path)
print(config)  # pretty: indented YAML
print("learning_rate =", config["learning_rate"])  # access as dict
print("hidden layers =", config["model"]["hidden"])

config["seed"] = 42
gg.save_configuration(config, workdir / "output.yaml")
assert config == gg.load_configuration(workdir / "output.yaml")
print(f"saved and re-loaded {workdir / 'output.yaml'}")

# A mistake in the file is reported with the key, the file and the lines.
(workdir / "broken.yaml").write_text("lr: 0.1\nbatch_size: 32\nlr: 0.2\n")
try:
    gg.load_configuration(workdir / "broken.yaml")
except ValueError as exc:  # ConfigurationError is also a ValueError
    print(f"rejected: {exc}")
