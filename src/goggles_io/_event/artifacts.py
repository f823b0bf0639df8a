"""Artifact payloads checked at the log call: content, files to copy, W&B references.

An artifact is the one kind whose payload takes several forms (robo-goggles' ``artifact``
accepts all of them); turning each into what crosses the bus is one concept, kept here.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any, cast

from goggles_io._event.validate import (
    check_message_payload,
    ndarray_type,
    plain_copy,
    short_repr,
)
from goggles_io.exceptions import InvalidPayloadError

__all__ = ["is_reference", "to_artifact", "to_reference"]


def to_reference(data: Mapping[str, Any]) -> dict[str, Any]:
    """Return a W&B-style artifact reference ``{"path": <absolute>, ...}`` checked and copied.

    The path is made absolute here: the handler may run in a host with another working
    directory. ``name``/``type`` must be str and ``aliases`` a list of str when given.
    """
    raw = data.get("path")
    if not isinstance(raw, (str, os.PathLike)) or not os.path.exists(raw):
        msg = f"artifact 'path' must name an existing file or directory (got {short_repr(raw)})."
        raise InvalidPayloadError(msg, value=raw)
    ref: dict[str, Any] = check_message_payload(
        {k: v for k, v in data.items() if k != "path"}, "artifact"
    )
    for key in ("name", "type"):
        if key in ref and not (isinstance(ref[key], str) and ref[key]):
            msg = f"artifact {key!r} must be a non-empty str (got {short_repr(ref[key])})."
            raise InvalidPayloadError(msg, value=ref[key])
    aliases = ref.get("aliases")
    if aliases is not None and not (
        isinstance(aliases, list) and all(isinstance(a, str) for a in aliases)
    ):
        msg = f"artifact 'aliases' must be a list of str (got {short_repr(aliases)})."
        raise InvalidPayloadError(msg, value=aliases)
    ref["path"] = os.path.abspath(os.fspath(raw))
    return ref


def is_reference(data: object, fmt: object) -> bool:
    """Whether an artifact is a reference to upload (a mapping with ``path``, default format)."""
    return isinstance(data, Mapping) and "path" in data and fmt == "bin"


def to_artifact(data: object, fmt: object = "bin") -> bytes | str | dict[str, Any]:
    """Return an artifact's bytes, or the path of a file to copy (as str), robo-goggles style.

    A ``str`` is the artifact's *content* (UTF-8), a mapping or list is serialised by ``fmt``
    (``yaml``/``yml`` as YAML, anything else as JSON), a numpy array is stored as ``.npy`` bytes,
    bytes are kept, and a :class:`pathlib.Path` (any ``os.PathLike``) names a file to copy. A
    mapping with a ``"path"`` under the default ``format="bin"`` is robo-goggles' W&B artifact
    reference (see :func:`to_reference`).
    """
    if is_reference(data, fmt):
        return to_reference(cast("Mapping[str, Any]", data))  # is_reference checked it
    if isinstance(data, bytes | bytearray | memoryview):
        return bytes(data)
    if isinstance(data, str):
        return data.encode("utf-8", "surrogatepass")
    if isinstance(data, os.PathLike):
        path: str | bytes = os.fspath(data)
        return path
    if isinstance(data, Mapping | list | tuple):
        return _serialise(data, fmt)
    ndarray = ndarray_type()
    if ndarray is not None and isinstance(data, ndarray):
        import io

        import numpy as np

        buffer = io.BytesIO()
        np.save(buffer, data, allow_pickle=False)
        return buffer.getvalue()
    msg = (
        "artifact must be str content, bytes, a mapping/list (serialised by format), a numpy "
        f"array, or a pathlib.Path of a file to copy (got {type(data).__name__})."
    )
    raise InvalidPayloadError(msg, value=data)


def _serialise(data: object, fmt: object) -> bytes:
    """Serialise a mapping or list for :func:`to_artifact`; refuse what JSON/YAML cannot hold."""
    import yaml

    import nonfinite_json

    try:
        if isinstance(fmt, str) and fmt.lower() in {"yaml", "yml"}:
            return yaml.safe_dump(plain_copy(data, 0), sort_keys=False).encode("utf-8")
        return nonfinite_json.dumps(data, indent=2, default=_json_default).encode("utf-8")
    except (TypeError, ValueError, yaml.YAMLError) as exc:
        msg = f"artifact data cannot be serialised as {fmt!r}: {exc}"
        raise InvalidPayloadError(msg, value=data) from exc


def _json_default(value: object) -> Any:
    if ndarray_type() is not None:  # numpy is loaded (never half-way: see ndarray_type)
        import numpy as np

        if isinstance(value, np.ndarray):
            return value.tolist()
        if isinstance(value, np.generic):
            return value.item()
    msg = f"{type(value).__name__} is not JSON serialisable"
    raise TypeError(msg)
