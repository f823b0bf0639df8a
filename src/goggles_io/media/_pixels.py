"""Arrays made into pixels: one conversion for every image, frame and W&B picture.

uint8 is kept; bool becomes 0/255; floats whose finite values all lie in [0, 1] are scaled by
255 (rounded); any other number range (floats, int64, uint16, ...) is min-max scaled to 0-255,
a constant image to 0. NaN becomes 0, +-inf the ends of the range.
"""

from __future__ import annotations

from typing import Any

__all__ = ["to_frames", "to_uint8"]

_CHANNELS = (1, 3, 4)


def to_uint8(array: Any) -> Any:
    """``array`` as uint8 pixels by the rules in the module docstring (same shape)."""
    import numpy as np

    arr = np.asarray(array)
    if arr.dtype == np.uint8:
        return arr
    if arr.dtype == np.bool_:
        return arr.astype(np.uint8) * np.uint8(255)
    if arr.dtype.kind not in "iuf":
        msg = f"pixels must be numeric (got dtype {arr.dtype})."
        raise TypeError(msg)
    values = arr.astype(np.float64)
    finite = np.isfinite(values)
    if not finite.any():
        return np.zeros(arr.shape, np.uint8)
    low, high = float(values[finite].min()), float(values[finite].max())
    if arr.dtype.kind == "f" and low >= 0.0 and high <= 1.0:
        scaled = values * 255.0
    elif high > low:
        scaled = (values - low) * (255.0 / (high - low))
    else:
        scaled = np.zeros_like(values)
    scaled = np.nan_to_num(scaled, nan=0.0, posinf=255.0, neginf=0.0)
    return np.clip(scaled + 0.5, 0, 255).astype(np.uint8)


def to_frames(frames: Any) -> Any:
    """Video frames as uint8 ``(T, H, W)`` or ``(T, H, W, C)``, C in 1/3/4.

    Takes ``(T, H, W)``, ``(T, H, W, C)`` and, when the layout is unambiguous, ``(T, C, H, W)``.

    Raises:
        ValueError: any other shape.
    """
    import numpy as np

    arr = np.asarray(frames)
    if arr.ndim == 4 and arr.shape[-1] not in _CHANNELS and arr.shape[1] in _CHANNELS:
        arr = arr.transpose(0, 2, 3, 1)
    if arr.ndim not in (3, 4) or (arr.ndim == 4 and arr.shape[-1] not in _CHANNELS):
        msg = (
            "frames must have shape (T, H, W), (T, H, W, C) or (T, C, H, W) with C in "
            f"{_CHANNELS} (got {arr.shape})."
        )
        raise ValueError(msg)
    if arr.shape[0] == 0:
        msg = f"frames must hold at least one frame (got {arr.shape})."
        raise ValueError(msg)
    pixels = to_uint8(arr)
    return pixels[..., 0] if pixels.ndim == 4 and pixels.shape[-1] == 1 else pixels
