"""Configuration: YAML files loaded strictly into a printable dict, and typed configs on top of it.

``PrettyConfig`` is a plain ``dict`` (so ``config["lr"]``, ``**config`` and ``json.dumps`` work)
whose ``str()`` is indented YAML. Decorated as a ``dataclass`` it becomes a typed config: fields
with defaults and validation, the public ones mirrored into the dict, built from a loaded file
with :meth:`PrettyConfig.from_config`. pyyaml is imported on first use, keeping the import cheap.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from goggles_io._util.plain_yaml import (
    dump_plain,
    import_yaml,
    pretty_dumper_class,
    to_plain,
    write_text_atomic,
)
from goggles_io.exceptions import (
    ConfigurationError,
    ConfigurationFileError,
    ConfigurationNotFoundError,
    InvalidPayloadError,
)

__all__ = [
    "ConfigurationFileError",
    "ConfigurationNotFoundError",
    "PrettyConfig",
    "load_configuration",
    "save_configuration",
]

StrPath = str | os.PathLike[str]
_C = TypeVar("_C", bound="PrettyConfig")


class PrettyConfig(dict[str, Any]):
    """A plain ``dict`` whose ``str()`` is indented YAML, so ``print(config)`` is readable.

    Nested mappings stay plain dicts; equality, ``json.dumps`` and ``**config`` work as for any
    dict. A value YAML cannot show (an arbitrary object) makes ``str()`` fall back to the dict repr.

    A ``@dataclass`` subclass is a typed config: after ``__init__`` (and the subclass's own
    ``__post_init__`` validation) its fields whose names do not start with ``_`` are copied into
    the dict, so ``dict(config)``, ``to_yaml`` and ``to_json`` hold exactly those. The copy is
    taken at construction: change a frozen config with ``dataclasses.replace``.
    """

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        own = cls.__dict__.get("__post_init__")
        if own is not None and not getattr(own, "_mirrors_fields", False):
            # The dataclass __init__ calls __post_init__; an override that skips super() must
            # still leave the dict mirroring the fields, after its validation has passed.
            cls.__post_init__ = _then_mirror(own)  # type: ignore[method-assign]

    def __post_init__(self, *_init_vars: Any) -> None:
        _mirror_fields(self)

    def __str__(self) -> str:
        yaml = import_yaml()
        try:
            plain = to_plain(self, string_keys=False)
        except InvalidPayloadError:
            return dict.__repr__(self)  # printing must not fail on a value YAML cannot show
        text: str = yaml.dump(
            plain, Dumper=pretty_dumper_class(), sort_keys=False, allow_unicode=True, width=100
        )
        return text.rstrip("\n")

    @classmethod
    def from_config(cls: type[_C], config: Mapping[str, Any]) -> _C:
        """Build a config from a mapping, e.g. a loaded file.

        For a dataclass subclass, keys naming its ``__init__`` fields are passed to it and any
        other key is ignored, so one file can feed several typed configs. A key naming a declared
        ``_``-prefixed (private) field is refused: private state is not for files to set. For
        ``PrettyConfig`` itself every key is kept.

        Raises:
            ConfigurationError: ``config`` sets a declared private field (also a ``ValueError``).
        """
        if not dataclasses.is_dataclass(cls):
            return cls(config)
        declared = {field.name: field for field in dataclasses.fields(cls)}
        private = [k for k in config if isinstance(k, str) and k.startswith("_") and k in declared]
        if private:
            msg = (
                f"Private fields cannot be overridden from a config: {private} are private fields "
                f"of {cls.__name__}; remove these keys."
            )
            raise ConfigurationError(msg, key=private[0], value=config[private[0]])
        known = {k: v for k, v in config.items() if k in declared and declared[k].init}
        return cls(**known)

    def to_dict(self) -> dict[str, Any]:
        """A plain ``dict`` copy of the public content; nested ``PrettyConfig`` become dicts too."""
        return {
            key: value.to_dict() if isinstance(value, PrettyConfig) else value
            for key, value in self.items()
        }

    def to_yaml(self, file_path: StrPath) -> None:
        """Save as YAML with :func:`save_configuration` (same checks, atomic write)."""
        save_configuration(self, file_path)

    def to_json(self, file_path: StrPath, *, indent: int = 2) -> None:
        """Save as strict JSON (indented by ``indent``, UTF-8), atomically.

        Values are converted as for YAML; NaN and infinities are refused because JSON has no
        spelling for them that other readers accept.

        Raises:
            ConfigurationFileError: a key or value JSON cannot hold; the message names the key path.
        """
        file = os.fspath(file_path)
        plain = to_plain(self, string_keys=True, refuse=_refuse_for(file))
        try:
            text = json.dumps(plain, indent=indent, ensure_ascii=False, allow_nan=False)
        except ValueError as exc:
            msg = f"cannot save to {file!r} as JSON: {exc}; save as YAML (.nan/.inf) instead."
            raise ConfigurationFileError(msg, path=file) from exc
        write_text_atomic(Path(file), text + "\n")


def load_configuration(file_path: StrPath) -> PrettyConfig:
    """Load a YAML mapping from ``file_path`` with pyyaml's safe loader, strictly.

    Only plain YAML types are built (no arbitrary Python objects). Stricter than ``yaml.safe_load``:
    a key given twice in one mapping and a key that is not a string are errors, because both
    silently change what a run was configured with. An empty file loads as an empty config.

    Raises:
        ConfigurationNotFoundError: ``file_path`` does not exist.
        ConfigurationFileError: the file is not valid YAML, its top level is not a mapping, or a
            mapping has a duplicate or non-string key; the message names the key, file and line.
    """
    yaml = import_yaml()
    file = os.fspath(file_path)
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


def save_configuration(config: Mapping[str, Any], file_path: StrPath) -> None:
    """Write ``config`` to ``file_path`` as YAML that :func:`load_configuration` reads back equal.

    numpy scalars become Python numbers and numpy arrays and tuples become lists, so the file
    holds only plain YAML; NaN and infinities are written as ``.nan``/``.inf`` and load back as
    floats. Anything else (objects, bytes, non-string keys) is refused before the file is
    touched. The write is atomic: a crash leaves the old file or the new one, never half.

    Raises:
        ConfigurationFileError: ``config`` holds a key or value YAML cannot round-trip; the message
            names the key path and the value.
    """
    file = os.fspath(file_path)
    if not isinstance(config, Mapping):
        msg = f"config must be a mapping (got a {type(config).__name__}: {config!r:.80})."
        raise ConfigurationFileError(msg, path=file)
    text = dump_plain(to_plain(config, string_keys=True, refuse=_refuse_for(file)))
    write_text_atomic(Path(file), text)


def _refuse_for(file: str) -> Callable[[str, str, Any], Exception]:
    """The error for a key or value that cannot be saved to ``file``."""

    def refuse(msg: str, where: str, value: Any) -> Exception:
        return ConfigurationFileError(
            f"cannot save to {file!r}: {msg}", path=file, key=where, value=value
        )

    return refuse


def _then_mirror(post_init: Callable[..., None]) -> Callable[..., None]:
    @functools.wraps(post_init)
    def wrapper(self: PrettyConfig, *init_vars: Any) -> None:
        post_init(self, *init_vars)
        _mirror_fields(self)

    wrapper._mirrors_fields = True  # type: ignore[attr-defined]
    return wrapper


def _mirror_fields(config: PrettyConfig) -> None:
    """Make the dict hold exactly the public dataclass fields of ``config``, in field order."""
    if not dataclasses.is_dataclass(config):
        return
    public = {}
    for field in dataclasses.fields(config):
        if not field.name.startswith("_") and hasattr(config, field.name):
            public[field.name] = getattr(config, field.name)
    dict.clear(config)
    dict.update(config, public)


@functools.cache
def _strict_loader_class() -> type:
    """Build (once) a SafeLoader subclass that rejects duplicate and non-string keys."""
    yaml = import_yaml()

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
