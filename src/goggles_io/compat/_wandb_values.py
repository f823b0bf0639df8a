"""What ``wandb.log`` values become: nested dicts flattened, numbers, and the media holders.

``Image``, ``Histogram`` and ``Video`` only hold their data until the run logs them as
goggles_io image, histogram and video events; nothing is converted at construction beyond
taking the array (a tensor's ``.numpy()``, a PIL image's pixels).
"""

from __future__ import annotations

import numbers
from collections.abc import Mapping
from typing import Any

from goggles_io.exceptions import InvalidNameError, InvalidPayloadError, InvalidPayloadTypeError

__all__ = ["Histogram", "Image", "Video", "array_of", "flatten", "number_of"]


def flatten(data: Mapping[str, Any], sep: str = "/", prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` as ``{"a/b": 1}``; keys must be non-empty strings.

    Raises:
        InvalidNameError: a key is not a non-empty str (W&B refuses those too).
    """
    out: dict[str, Any] = {}
    for key, value in data.items():
        if type(key) is not str or not key:
            msg = f"wandb.log keys must be non-empty str (got {key!r} in {prefix or 'the dict'})."
            raise InvalidNameError(msg, name=key)
        name = f"{prefix}{sep}{key}" if prefix else key
        if isinstance(value, Mapping):
            out.update(flatten(value, sep, name))
        else:
            out[name] = value
    return out


def number_of(value: Any) -> int | float | None:
    """``value`` as a Python number when it is one (bool, numpy scalar, 0-d array or tensor)."""
    kind = type(value)
    if kind is float or kind is int:
        return value  # type: ignore[no-any-return]
    if kind is bool:
        return int(value)
    if isinstance(value, numbers.Real):
        return int(value) if isinstance(value, numbers.Integral) else float(value)
    if getattr(value, "ndim", None) == 0 or (
        getattr(value, "shape", None) == () and hasattr(value, "item")
    ):
        item = value.item()
        if isinstance(item, numbers.Real):
            return int(item) if isinstance(item, (bool, numbers.Integral)) else float(item)
    return None


def array_of(value: Any) -> Any:
    """``value`` as a numpy array: tensors through ``.numpy()``, PIL images by their pixels."""
    import numpy as np

    if hasattr(value, "detach") and hasattr(value, "cpu"):  # a torch tensor
        value = value.detach().cpu().numpy()
    return np.asarray(value)


class Image:
    """``wandb.Image(array)``: an ``(H, W)``, ``(H, W, C)`` or ``(C, H, W)`` image.

    Floats are taken as 0..1 (goggles_io's image convention, and W&B's). A file path is
    refused: read the file into an array first.

    Raises:
        InvalidPayloadTypeError: ``data_or_path`` is a path (or not array-like).
    """

    __slots__ = ("caption", "data")

    def __init__(self, data_or_path: Any, mode: str | None = None, caption: str | None = None,
                 **ignored: Any) -> None:  # fmt: skip
        if isinstance(data_or_path, str):
            msg = (
                f"Image({data_or_path!r}): goggles_io.compat.wandb takes arrays, not paths; "
                "read the file first (e.g. numpy.asarray(PIL.Image.open(path)))."
            )
            raise InvalidPayloadTypeError(msg, value=data_or_path)
        arr = array_of(data_or_path)
        if arr.ndim == 3 and arr.shape[0] in (1, 3, 4) and arr.shape[-1] not in (1, 3, 4):
            arr = arr.transpose(1, 2, 0)  # (C, H, W), as torch keeps images
        if arr.ndim == 3 and arr.shape[-1] == 1:
            arr = arr[..., 0]
        self.data = arr
        self.caption = caption


class Histogram:
    """``wandb.Histogram(sequence, num_bins=64)``: raw values, binned where they are shown.

    Raises:
        InvalidPayloadError: only ``np_histogram=`` was given (goggles_io keeps raw samples;
            pass ``sequence=``), or ``num_bins`` is not a positive int.
    """

    __slots__ = ("num_bins", "values")

    def __init__(self, sequence: Any = None, np_histogram: Any = None, num_bins: int = 64) -> None:
        if sequence is None:
            msg = (
                "Histogram(np_histogram=...) is not supported by goggles_io.compat.wandb: "
                "it keeps raw samples; pass Histogram(sequence=values) instead."
            )
            raise InvalidPayloadError(msg, value=np_histogram)
        if type(num_bins) is not int or num_bins < 1:
            msg = f"num_bins must be a positive int (got {num_bins!r})."
            raise InvalidPayloadError(msg, value=num_bins)
        self.values = array_of(sequence).reshape(-1)
        self.num_bins = num_bins


class Video:
    """``wandb.Video(array, fps=4, format="gif")``: ``(T, C, H, W)`` or ``(T, H, W, C)`` frames.

    Raises:
        InvalidPayloadTypeError: ``data_or_path`` is a path (read it into an array first).
    """

    __slots__ = ("data", "format", "fps")

    def __init__(self, data_or_path: Any, caption: str | None = None, fps: float = 4,
                 format: str | None = None, **ignored: Any) -> None:  # fmt: skip
        if isinstance(data_or_path, str):
            msg = f"Video({data_or_path!r}): goggles_io.compat.wandb takes arrays, not paths."
            raise InvalidPayloadTypeError(msg, value=data_or_path)
        self.data = array_of(data_or_path)
        self.fps = fps
        self.format = format or "gif"
