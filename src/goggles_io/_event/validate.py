"""Checks and copies done at the log call, so bad input fails where it was written.

Every array is copied here: the event owns its data and later mutation by the caller never
changes what a handler writes.
"""

from __future__ import annotations

import logging
import math
import numbers
import reprlib
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from goggles_io._event.remote_protocol import MAX_NAME_CHARS
from goggles_io.exceptions import InvalidLevelError, InvalidNameError, InvalidPayloadError

if TYPE_CHECKING:
    import numpy as np

_SHORT = reprlib.Repr()
_SHORT.maxstring = _SHORT.maxother = _SHORT.maxlong = 120


def short_repr(value: object) -> str:
    """``repr(value)`` cut to a readable length: an error about a 70 MB string stays small."""
    return _SHORT.repr(value)


# numpy is imported on first use: it costs more than the rest of ``import goggles_io``.

__all__ = [
    "MAX_NAME_CHARS",
    "check_image_format",
    "check_level",
    "check_message_payload",
    "check_name",
    "check_step",
    "check_time",
    "check_video_format",
    "is_field_like",
    "is_image_like",
    "ndarray_type",
    "plain_copy",
    "short_repr",
    "to_histogram",
    "to_image",
    "to_scalar",
    "to_table",
    "to_trajectories",
    "to_vector_field",
    "to_video",
]

_LEVELS = {
    "NOTSET": logging.NOTSET,
    "DEBUG": logging.DEBUG,
    "INFO": logging.INFO,
    "WARNING": logging.WARNING,
    "WARN": logging.WARNING,
    "ERROR": logging.ERROR,
    "CRITICAL": logging.CRITICAL,
    "FATAL": logging.CRITICAL,
}
_CHANNELS = (1, 3, 4)
_PLAIN = (str, int, float, bool, type(None))
_MAX_DEPTH = 32


def check_level(level: object, param: str = "level") -> int:
    """Return ``level`` as an int; accept ints >= 0 and the stdlib level names."""
    if isinstance(level, str) and level.upper() in _LEVELS:
        return _LEVELS[level.upper()]
    if isinstance(level, numbers.Integral) and not isinstance(level, bool) and int(level) >= 0:
        return int(level)
    msg = (
        f"{param} must be an int >= 0 or one of {sorted(_LEVELS)!r} (got {short_repr(level)}); "
        "use goggles_io.INFO and friends."
    )
    raise InvalidLevelError(msg, level=level)


def check_name(name: object, param: str = "name") -> str:
    """Return ``name`` if it is a non-empty str of at most ``MAX_NAME_CHARS`` characters: one
    limit for every name, the remote protocol's (a name becomes a CSV header, a W&B key...)."""
    if type(name) is str and name and len(name) <= MAX_NAME_CHARS:
        return name
    if type(name) is str and name:
        msg = (
            f"{param} is {len(name)} characters long; names are at most {MAX_NAME_CHARS} "
            f"characters (got {short_repr(name)})."
        )
        raise InvalidNameError(msg, name=name[:MAX_NAME_CHARS])
    msg = (
        f"{param} must be a non-empty str (got {short_repr(name)}); pass e.g. {param}='train/loss'."
    )
    raise InvalidNameError(msg, name=name)


def check_step(step: object) -> int:
    """Return ``step`` as an int >= 0."""
    if isinstance(step, numbers.Integral) and not isinstance(step, bool) and int(step) >= 0:
        return int(step)
    msg = f"step must be an int >= 0 or None for the metric's next step (got {short_repr(step)})."
    raise InvalidPayloadError(msg, value=step)


def check_time(value: object) -> float | None:
    """Return a caller-given event time (``Event.time``, e.g. simulated seconds) as a float."""
    if value is None:
        return None
    if isinstance(value, numbers.Real) and not isinstance(value, bool) and math.isfinite(value):
        return float(value)
    if hasattr(value, "__array__"):  # a numpy or jax scalar
        import numpy as np

        arr = np.asarray(value)
        if arr.size == 1 and arr.dtype.kind in "iuf" and math.isfinite(arr.reshape(()).item()):
            return float(arr.reshape(()).item())
    msg = f"time must be a finite real number or None (got {short_repr(value)})."
    raise InvalidPayloadError(msg, value=value)


def to_scalar(name: str, value: object) -> int | float:
    """Return ``value`` as a Python int/float; NaN and +-inf pass (the caller flags them)."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    if hasattr(value, "__array__"):
        import numpy as np

        arr = np.asarray(value)
        if arr.size == 1 and arr.dtype.kind in "biuf":
            item = arr.reshape(()).item()
            return int(item) if arr.dtype.kind in "biu" else float(item)
    msg = (
        f"scalar {short_repr(name)} must be a real number (int, float, numpy scalar or 1-element array); "
        f"got {short_repr(value)} of type {type(value).__name__}."
    )
    raise InvalidPayloadError(msg, value=value)


def is_finite(value: int | float) -> bool:
    """Return whether a coerced scalar is finite (ints always are)."""
    return type(value) is int or math.isfinite(value)


def _array(value: object, what: str, copy: bool = True) -> np.ndarray:
    import numpy as np

    try:
        arr = np.array(value, copy=True) if copy else np.asarray(value)
    except Exception as exc:
        msg = f"{what} must be array-like (got {type(value).__name__}: {exc})."
        raise InvalidPayloadError(msg, value=value) from exc
    return arr


def _check_pixels(arr: np.ndarray, what: str, value: object) -> None:
    # uint8 is kept, floats in [0, 1] scaled, bool and other numbers min-max scaled when written
    if arr.dtype.kind not in "biuf":
        msg = f"{what} must have a numeric dtype, ideally uint8 (got dtype {arr.dtype})."
        raise InvalidPayloadError(msg, value=value)


def ndarray_type() -> type[np.ndarray] | None:
    """numpy's ``ndarray`` if numpy is loaded, else ``None``; never imports numpy.

    Read with ``getattr``, never ``np.ndarray``: another thread (the socket client's sender
    imports the codec in the background) may be half-way through ``import numpy``, and that
    half-made module may have no ``ndarray`` yet. No value can be an array of a numpy that nobody
    finished importing, so ``None`` is then the right answer.
    """
    return getattr(sys.modules.get("numpy"), "ndarray", None)


def is_image_like(value: object) -> bool:
    """Return whether ``push`` should promote ``value`` to an image event."""
    ndarray = ndarray_type()
    if ndarray is None or not isinstance(value, ndarray):
        return False
    return value.ndim == 2 or (value.ndim == 3 and value.shape[-1] in _CHANNELS)


def is_vector_like(value: object) -> bool:
    """Return whether ``push`` should spread ``value`` (a 1-D numeric array) into scalars."""
    ndarray = ndarray_type()
    return ndarray is not None and isinstance(value, ndarray) and value.ndim == 1


def is_field_like(value: object) -> bool:
    """Return whether ``dictionary`` should log ``value`` as a vector field (last axis 2, 3-D+)."""
    ndarray = ndarray_type()
    return (
        ndarray is not None
        and isinstance(value, ndarray)
        and value.ndim >= 3
        and value.shape[-1] == 2
    )


def to_vector(name: str, value: np.ndarray) -> list[int | float]:
    """Return a 1-D array's elements as Python numbers (each checked like a scalar)."""
    return [to_scalar(f"{name}/{i}", item) for i, item in enumerate(value.tolist())]


def to_image(image: object, copy: bool = True) -> np.ndarray:
    """Return a private copy of an ``(H, W)`` or ``(H, W, C)`` image, C in 1/3/4."""
    arr = _array(image, "image", copy)
    ok = arr.ndim == 2 or (arr.ndim == 3 and arr.shape[-1] in _CHANNELS)
    if not ok or arr.size == 0:
        hint = "; transpose CHW images with image.transpose(1, 2, 0)"
        raise _bad_shape("image", "(H, W) or (H, W, C)", arr.shape, image, hint)
    _check_pixels(arr, "image", image)
    return arr


def to_video(video: object, copy: bool = True) -> np.ndarray:
    """Return a private ``(T, C, H, W)`` copy; accepts ``(T, H, W)`` and ``(T, H, W, C)`` too."""
    arr = _array(video, "video", copy)
    if arr.ndim == 3:
        arr = arr[:, None, :, :]
    elif arr.ndim == 4 and arr.shape[1] not in _CHANNELS and arr.shape[-1] in _CHANNELS:
        arr = arr.transpose(0, 3, 1, 2).copy()
    if arr.ndim != 4 or arr.shape[1] not in _CHANNELS or arr.size == 0:
        got = getattr(video, "shape", arr.shape)
        raise _bad_shape("video", "(T, C, H, W), (T, H, W, C) or (T, H, W)", got, video)
    _check_pixels(arr, "video", video)
    return arr


def _bad_shape(
    name: str, shapes: str, got: object, value: object, hint: str = ""
) -> InvalidPayloadError:
    """The error for pixels of the wrong shape: what ``name`` accepts, and what it got."""
    msg = f"{name} must have shape {shapes} with C in {_CHANNELS} (got shape {got}){hint}."
    return InvalidPayloadError(msg, value=value)


IMAGE_FORMATS = ("png", "jpg", "jpeg", "bmp", "gif", "tiff", "webp")
VIDEO_FORMATS = ("gif", "mp4")


def check_image_format(fmt: object, image: np.ndarray) -> str:
    """Return ``fmt`` (lower case) if an image file can be written in it; JPEG holds no alpha."""
    name = fmt.lower() if isinstance(fmt, str) else fmt
    if name not in IMAGE_FORMATS:
        msg = f"format must be one of {IMAGE_FORMATS!r} for an image (got {short_repr(fmt)})."
        raise InvalidPayloadError(msg, value=fmt)
    if name in ("jpg", "jpeg") and image.ndim == 3 and image.shape[-1] == 4:
        msg = (
            f"format={fmt!r} cannot hold the alpha channel of a (H, W, 4) image; "
            "pass format='png', or drop alpha with image[..., :3]."
        )
        raise InvalidPayloadError(msg, value=fmt)
    return str(name)


def check_video_format(fmt: object) -> str:
    """Return ``fmt`` (lower case) if it is a video container goggles_io writes."""
    name = fmt.lower() if isinstance(fmt, str) else fmt
    if name not in VIDEO_FORMATS:
        msg = f"format must be one of {VIDEO_FORMATS!r} for a video (got {short_repr(fmt)})."
        raise InvalidPayloadError(msg, value=fmt)
    return str(name)


def check_fps(fps: object) -> float:
    """Return ``fps`` as a positive number (an int stays an int, as robo-goggles writes it)."""
    if isinstance(fps, numbers.Real) and not isinstance(fps, bool) and 0 < float(fps) < math.inf:
        return int(fps) if isinstance(fps, numbers.Integral) else float(fps)
    msg = f"fps must be a positive number (got {short_repr(fps)})."
    raise InvalidPayloadError(msg, value=fps)


def to_histogram(values: object, copy: bool = True) -> np.ndarray:
    """Return the raw values as a private flat numeric copy."""
    arr = _array(values, "histogram values", copy)
    if arr.dtype.kind not in "biuf":
        msg = f"histogram values must be numeric (got dtype {arr.dtype} from {short_repr(values)})."
        raise InvalidPayloadError(msg, value=values)
    return arr.reshape(-1)


def to_vector_field(field: object, copy: bool = True) -> np.ndarray:
    """Return a private copy of a ``(..., 2)`` or ``(..., 3)`` numeric field."""
    arr = _array(field, "vector_field", copy)
    if arr.ndim < 2 or arr.shape[-1] not in (2, 3) or arr.dtype.kind not in "biuf":
        msg = (
            f"vector_field must be numeric with shape (..., 2) or (..., 3) "
            f"(got shape {arr.shape}, dtype {arr.dtype})."
        )
        raise InvalidPayloadError(msg, value=field)
    return arr


def to_trajectories(value: object, copy: bool = True) -> np.ndarray:
    """Return a private copy of ``(N, L, dim)`` trajectories (or one ``(L, dim)``), dim 2 or 3."""
    arr = _array(value, "trajectories", copy)
    if arr.ndim not in (2, 3) or arr.shape[-1] not in (2, 3) or arr.dtype.kind not in "biuf":
        msg = (
            "trajectories must be numeric with shape (N, L, dim) or (L, dim), dim 2 or 3 "
            f"(got shape {arr.shape}, dtype {arr.dtype})."
        )
        raise InvalidPayloadError(msg, value=value)
    if arr.shape[-2] < 2:
        msg = f"trajectories need at least 2 points each (got shape {arr.shape})."
        raise InvalidPayloadError(msg, value=value)
    return arr


def to_table(columns: Sequence[str], data: Sequence[Sequence[Any]]) -> dict[str, Any]:
    """Return ``{"columns", "data"}`` as fresh lists, each row as long as ``columns``."""
    if isinstance(columns, str) or not all(isinstance(c, str) for c in columns):
        msg = f"columns must be a sequence of str (got {short_repr(columns)})."
        raise InvalidPayloadError(msg, value=columns)
    cols = list(columns)
    rows = [list(row) for row in data]
    for i, row in enumerate(rows):
        if len(row) != len(cols):
            msg = f"table row {i} has {len(row)} cells but there are {len(cols)} columns."
            raise InvalidPayloadError(msg, value=row)
    return {"columns": cols, "data": rows}


def plain_copy(value: object, depth: int) -> Any:
    if type(value) in _PLAIN:
        return value
    if depth < _MAX_DEPTH and isinstance(value, (list, tuple)) and type(value) in (list, tuple):
        return [plain_copy(v, depth + 1) for v in value]
    if depth < _MAX_DEPTH and isinstance(value, dict) and type(value) is dict:
        out = {}
        for k, v in value.items():
            if type(k) is not str:
                raise TypeError(k)
            out[k] = plain_copy(v, depth + 1)
        return out
    raise TypeError(value)


def check_message_payload(payload: object, param: str = "payload") -> Any:
    """Return a copy of ``payload`` made of msgpack-safe builtins, or raise naming ``param``.

    Allowed: str, int, float, bool, None, lists/tuples of those and str-keyed dicts, nested at
    most 32 deep. Copying means the caller may change its mapping afterwards.
    """
    try:
        return plain_copy(payload, 0)
    except TypeError as exc:
        bad = exc.args[0] if exc.args else payload
        msg = (
            f"{param} must hold only str, int, float, bool, None, lists and str-keyed dicts, "
            f"nested at most {_MAX_DEPTH} deep (got {short_repr(bad)} of type {type(bad).__name__} in {short_repr(payload)})."
        )
        raise InvalidPayloadError(msg, value=payload) from None
