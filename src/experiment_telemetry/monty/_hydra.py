"""A Monty run's Hydra config as the flat ``key: scalar`` settings a run records.

``telemetry diff`` and the dashboard's "Compare config" compare recorded settings key by key, so
the composed config Hydra saved for the job (``<output dir>/.hydra/config.yaml``) is flattened to
dotted keys (``experiment.config.seed``), lists of scalars kept, anything else as text. The
config groups chosen (``hydra.choices.experiment``...) and the command line's overrides
(``hydra.overrides``) come with it. Outside a Hydra job (Monty driven from Python) there is none.
"""

from __future__ import annotations

import logging
import math
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["flatten", "hydra_settings"]

_logger = logging.getLogger(__name__)
_BAD_KEY = re.compile(r"[^A-Za-z0-9_.\-/]")
_SCALARS = (str, int, float, bool, type(None))


def _key(parts: list[str]) -> str:
    return ".".join(_BAD_KEY.sub("_", p) or "_" for p in parts)


def _scalar(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def flatten(tree: Any, prefix: tuple[str, ...] = ()) -> dict[str, Any]:
    """``{"a": {"b": 1, "c": [1, 2], "d": [{"e": 3}]}}`` -> ``{"a.b": 1, "a.c": [1, 2], "a.d.0.e": 3}``."""
    found: dict[str, Any] = {}
    if isinstance(tree, Mapping):
        if not tree and prefix:
            found[_key(list(prefix))] = "{}"
        for name, value in tree.items():
            found.update(flatten(value, (*prefix, str(name))))
    elif isinstance(tree, (list, tuple)):
        if all(isinstance(v, _SCALARS) for v in tree):
            found[_key(list(prefix))] = [_scalar(v) for v in tree]
        else:
            for index, value in enumerate(tree):
                found.update(flatten(value, (*prefix, str(index))))
    elif isinstance(tree, _SCALARS):
        found[_key(list(prefix))] = _scalar(tree)
    else:
        found[_key(list(prefix))] = str(tree)
    return found


_cache: dict[str, dict[str, Any]] = {}


def hydra_settings() -> dict[str, Any]:
    """The running Hydra job's config, choices and overrides, flat; empty outside a Hydra job.

    Read once per job (the pieces ask for it when Hydra builds them, before Monty's run starts,
    so the run does not pay for it in its first step).
    """
    try:
        from hydra.core.hydra_config import HydraConfig
    except ImportError:
        return {}
    if not HydraConfig.initialized():
        return {}
    hydra = HydraConfig.get()
    key = str(hydra.runtime.output_dir)
    cached = _cache.get(key)
    if cached is None:
        cached = _cache[key] = _read(hydra)
    return dict(cached)


def _read(hydra: Any) -> dict[str, Any]:
    from omegaconf import OmegaConf

    settings: dict[str, Any] = {}
    try:
        choices = OmegaConf.to_container(hydra.runtime.choices, resolve=False)
        overrides = OmegaConf.to_container(hydra.overrides.task, resolve=False)
    except Exception:  # an unusual Hydra: the choices are a nicety
        choices, overrides = {}, []
    if isinstance(choices, Mapping):
        settings.update(
            flatten(
                {k: v for k, v in choices.items() if not str(k).startswith("hydra/")},
                ("hydra", "choices"),
            )
        )
    settings["hydra.overrides"] = [str(o) for o in overrides or []]
    subdir = hydra.output_subdir
    if subdir is None:
        return settings
    saved = Path(hydra.runtime.output_dir) / str(subdir) / "config.yaml"
    try:
        config = OmegaConf.load(saved)
    except (OSError, ValueError) as exc:
        _logger.warning("Monty run: its Hydra config %s was not recorded (%s)", saved, exc)
        return settings
    try:
        tree = OmegaConf.to_container(config, resolve=True)
    except Exception:  # a resolver that needs the live job: keep the interpolations as text
        tree = OmegaConf.to_container(config, resolve=False)
    settings.update(flatten(tree))
    return settings
