"""YAML configuration files: strict safe loading into a printable dict, and round-trippable saving.

pyyaml is imported inside the functions so that ``import goggles_io`` stays cheap.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from goggles_io.exceptions import (
    ConfigurationError,
    ConfigurationFileError,
    ConfigurationNotFoundError,
)

__all__ = [
    "ConfigurationFileError",
    "ConfigurationNotFoundError",
    "PrettyConfig",
    "load_configuration",
    "save_configuration",
]

StrPath = str | os.PathLike[str]


class PrettyConfig(dict):  # type: ignore[type-arg]
    """A plain ``dict`` whose ``str()`` is indented YAML, so ``print(config)`` is readable.

    Nested mappings stay plain dicts; equality, ``json.dumps`` and ``**config`` work as for any
    dict. A value YAML cannot show (an arbitrary object) makes ``str()`` fall back to the dict repr.
    """

    def __str__(self) -> str:
        yaml = _import_yaml()
        try:
            plain = _to_plain(self, "<root>", "<PrettyConfig>")
        except ConfigurationError:
            return dict.__repr__(self)  # printing must not fail on a value YAML cannot show
        text: str = yaml.dump(
            plain, Dumper=_pretty_dumper_class(), sort_keys=False, allow_unicode=True, width=100
        )
        return text.rstrip("\n")


def load_configuration(path: StrPath) -> PrettyConfig:
    """Load a YAML mapping from ``path`` with pyyaml's safe loader, strictly.

    Only plain YAML types are built (no arbitrary Python objects). Stricter than ``yaml.safe_load``:
    a key given twice in one mapping and a key that is not a string are errors, because both
    silently change what a run was configured with. An empty file loads as an empty config.

    Raises:
        ConfigurationNotFoundError: ``path`` does not exist.
        ConfigurationFileError: the file is not valid YAML, its top level is not a mapping, or a
            mapping has a duplicate or non-string key; the message names the key, file and line.
    """
    yaml = _import_yaml()
    file = os.fspath(path)
    try:
        text = Path(file).read_text(encoding="utf-8")
    except FileNotFoundError:
        msg = f"configuration file not found: path={file!r}; check the path or create the file."
        raise ConfigurationNotFoundError(msg, path=file) from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        msg = f"cannot read configuration file {file!r}: {exc}; pass a UTF-8 YAML file."
        raise ConfigurationFileError(msg, path=file) from exc
    loader = _strict_loader_class()(text)
    loader.name = file  # shown in pyyaml's own error marks
    try:
        data = loader.get_single_data()
    except ConfigurationFileError:
        raise
    except yaml.YAMLError as exc:
        msg = f"invalid YAML in configuration file {file!r}: {exc}"
        raise ConfigurationFileError(msg, path=file) from exc
    finally:
        loader.dispose()
    if data is None:
        return PrettyConfig()
    if not isinstance(data, dict):
        msg = (
            f"configuration file {file!r} must hold a mapping at the top level "
            f"(got a {type(data).__name__}: {data!r:.80}); write `key: value` lines."
        )
        raise ConfigurationFileError(msg, path=file)
    return PrettyConfig(data)


def save_configuration(config: Mapping[str, Any], path: StrPath) -> None:
    """Write ``config`` to ``path`` as YAML that :func:`load_configuration` reads back equal.

    numpy scalars become Python numbers and numpy arrays and tuples become lists, so the file
    holds only plain YAML; NaN and infinities are written as ``.nan``/``.inf`` and load back as
    floats. Anything else (objects, bytes, non-string keys) is refused before the file is
    touched. The write is atomic: a crash leaves the old file or the new one, never half.

    Raises:
        ConfigurationFileError: ``config`` holds a key or value YAML cannot round-trip; the message
            names the key path and the value.
    """
    yaml = _import_yaml()
    file = os.fspath(path)
    if not isinstance(config, Mapping):
        msg = f"config must be a mapping (got a {type(config).__name__}: {config!r:.80})."
        raise ConfigurationFileError(msg, path=file)
    # allow_unicode stays off: pyyaml would write U+0085 and U+2028 raw, and read them as line breaks
    text = yaml.safe_dump(_to_plain(config, "<root>", file), sort_keys=False)
    target = Path(file)
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".tmp", dir=target.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _import_yaml() -> Any:
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - pyyaml is a core dependency
        msg = "YAML configuration needs pyyaml: pip install split-telemetry"
        raise ImportError(msg) from exc
    return yaml


@functools.cache
def _strict_loader_class() -> type:
    """Build (once) a SafeLoader subclass that rejects duplicate and non-string keys."""
    yaml = _import_yaml()

    class _StrictSafeLoader(yaml.SafeLoader):  # type: ignore[misc, name-defined]
        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            if isinstance(node, yaml.MappingNode):
                seen: dict[str, int] = {}
                for key_node, _ in node.value:
                    if key_node.tag == "tag:yaml.org,2002:merge":
                        continue  # `<<: *anchor` merges may override; that is YAML, not a typo
                    line = key_node.start_mark.line + 1
                    key = self.construct_object(key_node, deep=True)
                    if not isinstance(key, str):
                        msg = (
                            f"configuration keys must be strings (got {key!r}, a "
                            f"{type(key).__name__}) in {self.name!r} line {line}; quote the key."
                        )
                        raise ConfigurationFileError(msg, path=self.name, value=key)
                    if key in seen:
                        msg = (
                            f"duplicate key {key!r} in {self.name!r} at line {line} "
                            f"(first at line {seen[key]}); keep one of them."
                        )
                        raise ConfigurationFileError(msg, path=self.name, key=key)
                    seen[key] = line
            return super().construct_mapping(node, deep=deep)

    return _StrictSafeLoader


@functools.cache
def _pretty_dumper_class() -> type:
    """Build (once) a SafeDumper that indents mappings and inlines lists of scalars."""
    yaml = _import_yaml()

    class _PrettyDumper(yaml.SafeDumper):  # type: ignore[misc, name-defined]
        pass

    def mapping(dumper: Any, data: dict[str, Any]) -> Any:
        return dumper.represent_mapping("tag:yaml.org,2002:map", data, flow_style=False)

    def sequence(dumper: Any, data: list[Any]) -> Any:
        flat = all(not isinstance(item, (list, dict)) for item in data)
        return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flat)

    _PrettyDumper.add_representer(dict, mapping)
    _PrettyDumper.add_representer(list, sequence)
    return _PrettyDumper


def _to_plain(value: Any, where: str, file: str) -> Any:
    """Return ``value`` as str/int/float/bool/None/list/dict only, or raise naming ``where``."""
    if value is None or isinstance(value, (str, bool, int, float)):
        return _plain_scalar(value)
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                msg = (
                    f"configuration keys must be strings (got {key!r} under {where!r}); "
                    f"convert it with str() before saving to {file!r}."
                )
                raise ConfigurationFileError(msg, path=file, key=where, value=key)
            out[key] = _to_plain(item, key if where == "<root>" else f"{where}.{key}", file)
        return out
    if isinstance(value, (list, tuple)):
        return [_to_plain(item, f"{where}[{i}]", file) for i, item in enumerate(value)]
    numpy = sys.modules.get("numpy")  # a numpy value implies numpy is already imported
    if numpy is not None and isinstance(value, (numpy.generic, numpy.ndarray)):
        if value.dtype.kind in "biuf":
            return _to_plain(value.tolist(), where, file)
    msg = (
        f"cannot save {where!r} = {value!r:.80} (a {type(value).__name__}) to {file!r}: "
        "only str, int, float, bool, None, lists, mappings and numeric numpy values round-trip."
    )
    raise ConfigurationFileError(msg, path=file, key=where, value=value)


def _plain_scalar(value: Any) -> Any:
    # bool/int/float subclasses (IntEnum, numpy.float64) would make safe_dump fail or lose type
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    return value
