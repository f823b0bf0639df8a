"""YAML plumbing shared by ``goggles_io.config`` and ``goggles_io.media``.

One normaliser turns numpy values, tuples and mappings into plain Python so that pyyaml's *safe*
dumper (which knows no numpy) can write them, and one atomic writer puts text files in place.
pyyaml is imported inside the functions so that ``import goggles_io`` stays cheap.
"""

from __future__ import annotations

import functools
import os
import sys
import tempfile
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from goggles_io.exceptions import InvalidPayloadError

__all__ = [
    "dump_plain",
    "import_yaml",
    "pretty_dumper_class",
    "to_plain",
    "write_text_atomic",
]

# Builds the exception to raise for a key or value with no plain form: (message, where, value).
Refuse = Callable[[str, str, Any], Exception]

_NUMPY_KINDS = "biufUO"  # bool, ints, floats, str and object arrays; elements are checked again
_KEY_TYPES = (str, int, float, bool, type(None))


def _refuse_payload(msg: str, where: str, value: Any) -> Exception:
    return InvalidPayloadError(msg, value=value)


def import_yaml() -> Any:
    """Import pyyaml, or say how to install it."""
    try:
        import yaml
    except ImportError as exc:  # pragma: no cover - pyyaml is a core dependency
        msg = "YAML needs pyyaml: pip install split-telemetry"
        raise ImportError(msg) from exc
    return yaml


def to_plain(
    value: Any,
    where: str = "<root>",
    *,
    string_keys: bool = True,
    refuse: Refuse = _refuse_payload,
) -> Any:
    """Return ``value`` as str/int/float/bool/None/list/dict only, or raise ``refuse(...)``.

    numpy scalars and arrays become Python numbers and (nested) lists; tuples become lists.
    ``string_keys`` refuses non-string mapping keys (config files); otherwise numbers, bools and
    None are kept as keys too. ``where`` is the key path shown in messages (``model.opt[2]``).
    """
    if value is None or isinstance(value, (str, bool, int, float)):
        return _plain_scalar(value)
    if isinstance(value, Mapping):
        out: dict[Any, Any] = {}
        for key, item in value.items():
            plain_key = _plain_key(key, where, string_keys, refuse)
            inner = str(plain_key) if where == "<root>" else f"{where}.{plain_key}"
            out[plain_key] = to_plain(item, inner, string_keys=string_keys, refuse=refuse)
        return out
    if isinstance(value, (list, tuple)):
        return [
            to_plain(item, f"{where}[{i}]", string_keys=string_keys, refuse=refuse)
            for i, item in enumerate(value)
        ]
    if _is_numpy(value) and value.dtype.kind in _NUMPY_KINDS:
        return to_plain(value.tolist(), where, string_keys=string_keys, refuse=refuse)
    msg = (
        f"{where!r} = {value!r:.80} (a {type(value).__name__}) has no plain YAML form: only str, "
        "int, float, bool, None, lists, tuples, mappings and numpy numbers, strings and object "
        "arrays of these are written."
    )
    raise refuse(msg, where, value)


def dump_plain(plain: Any) -> str:
    """Block-style YAML text of an already plain value, in insertion order."""
    yaml = import_yaml()
    # allow_unicode stays off: pyyaml would write U+0085 and U+2028 raw, and read them as line breaks
    text: str = yaml.safe_dump(plain, sort_keys=False)
    return text


@functools.cache
def pretty_dumper_class() -> type:
    """Build (once) a SafeDumper that indents mappings and inlines lists of scalars."""
    yaml = import_yaml()

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


def write_text_atomic(target: Path, text: str) -> None:
    """Write ``text`` (UTF-8) to ``target`` so a crash leaves the old file or the new one."""
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


def _is_numpy(value: Any) -> bool:
    numpy = sys.modules.get("numpy")  # a numpy value implies numpy is already imported
    return numpy is not None and isinstance(value, (numpy.generic, numpy.ndarray))


def _plain_key(key: Any, where: str, string_keys: bool, refuse: Refuse) -> Any:
    if _is_numpy(key) and key.ndim == 0:
        key = key.item()
    if string_keys and not isinstance(key, str):
        msg = (
            f"keys must be strings (got {key!r}, a {type(key).__name__}, under {where!r}); "
            "convert it with str() first."
        )
        raise refuse(msg, where, key)
    if not isinstance(key, _KEY_TYPES):
        msg = (
            f"keys must be str, int, float, bool or None (got {key!r}, a {type(key).__name__}, "
            f"under {where!r})."
        )
        raise refuse(msg, where, key)
    return _plain_scalar(key)


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
