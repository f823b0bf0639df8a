"""What TensorBoard's writer methods take, turned into what goggles_io's logger takes.

Scripts hand the writer torch tensors, numpy arrays and Python numbers in TensorBoard's layouts
(``CHW`` images, ``NTCHW`` videos, float pixels in [0, 1]); the logger takes numpy arrays in
``HWC`` / ``THWC`` with uint8 pixels. Nothing here imports torch: a tensor is anything with
``detach``/``cpu``/``numpy`` (or ``item`` for a scalar).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from goggles_io.exceptions import InvalidPayloadError

__all__ = ["figure_pixels", "grid", "image_hwc", "to_array", "to_float", "to_step", "video_thwc"]

_IMAGE_FORMATS = ("CHW", "HWC", "HW", "WH", "NCHW", "NHWC")


def to_array(value: Any) -> np.ndarray:
    """A numpy array of ``value`` (a torch tensor on any device, a list, an array)."""
    for method in ("detach", "cpu", "numpy"):
        convert = getattr(value, method, None)
        if callable(convert) and not isinstance(value, np.ndarray):
            value = convert()
    return np.asarray(value)


def to_float(value: Any) -> float:
    """A scalar value as a float (a 0-d or 1-element tensor, a numpy scalar, a number)."""
    item = getattr(value, "item", None)
    if callable(item):
        value = item()
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value)
    try:
        return float(value)
    except (TypeError, ValueError):
        msg = f"scalar_value must be a real number or a one-element tensor (got {value!r})."
        raise InvalidPayloadError(msg, value=value) from None


def to_step(global_step: Any) -> int | None:
    """``global_step`` as an int (a tensor or numpy integer too), ``None`` when not given."""
    if global_step is None:
        return None
    item = getattr(global_step, "item", None)
    value = item() if callable(item) else global_step
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool):
        msg = f"global_step must be an int >= 0 or None (got {global_step!r})."
        raise InvalidPayloadError(msg, value=global_step)
    return value


def _pixels(arr: np.ndarray) -> np.ndarray:
    """uint8 pixels: float images are in [0, 1] as TensorBoard takes them (scaled by 255)."""
    if arr.dtype == np.uint8:
        return arr
    if np.issubdtype(arr.dtype, np.floating):
        return np.asarray((np.clip(np.nan_to_num(arr), 0.0, 1.0) * 255.0 + 0.5).astype(np.uint8))
    return np.asarray(np.clip(arr, 0, 255).astype(np.uint8))


def image_hwc(img: Any, dataformats: str) -> np.ndarray:
    """One image as ``(H, W[, C])`` uint8 from TensorBoard's ``dataformats`` (``CHW`` ...);
    a batch (``NCHW``, ``NHWC``) becomes one grid image, as TensorBoard shows it."""
    fmt = str(dataformats).upper()
    arr = to_array(img)
    if fmt not in _IMAGE_FORMATS or arr.ndim != len(fmt):
        msg = (
            f"dataformats must be one of {_IMAGE_FORMATS} and match the image's "
            f"{arr.ndim} dimensions (got {dataformats!r} for shape {arr.shape})."
        )
        raise InvalidPayloadError(msg, value=dataformats)
    if fmt == "WH":
        arr, fmt = arr.T, "HW"
    if fmt.startswith("N"):
        order = [fmt.index(c) for c in "NHWC"]
        return grid(_pixels(np.transpose(arr, order)))
    order = [fmt.index(c) for c in "HWC" if c in fmt]
    out = _pixels(np.transpose(arr, order))
    if out.ndim == 3 and out.shape[2] == 1:
        out = out[:, :, 0]
    return out


def grid(batch: np.ndarray) -> np.ndarray:
    """``(N, H, W, C)`` images side by side in rows of ``ceil(sqrt(N))`` (TensorBoard's grid)."""
    n, h, w = batch.shape[:3]
    if batch.shape[3] == 1:
        batch = np.repeat(batch, 3, axis=3)
    cols = max(1, math.ceil(math.sqrt(n)))
    rows = math.ceil(n / cols)
    out = np.zeros((rows * h, cols * w, batch.shape[3]), dtype=batch.dtype)
    for i in range(n):
        r, c = divmod(i, cols)
        out[r * h : (r + 1) * h, c * w : (c + 1) * w] = batch[i]
    return out


def video_thwc(vid: Any) -> np.ndarray:
    """TensorBoard's ``(N, T, C, H, W)`` video as ``(T, H, W, C)`` uint8 frames, the N clips
    of each frame in a grid."""
    arr = to_array(vid)
    if arr.ndim != 5:
        msg = f"vid_tensor must be (N, T, C, H, W) (got shape {arr.shape})."
        raise InvalidPayloadError(msg, value=arr.shape)
    frames = _pixels(np.transpose(arr, (1, 0, 3, 4, 2)))  # T, N, H, W, C
    if frames.shape[1] == 1:
        return frames[:, 0]
    return np.stack([grid(frame) for frame in frames])


def figure_pixels(figure: Any, close: bool) -> np.ndarray:
    """A matplotlib figure drawn to ``(H, W, 3)`` uint8 pixels (closed after, if ``close``)."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas: Any = FigureCanvasAgg(figure)  # any figure, whatever backend; matplotlib is untyped
    canvas.draw()
    pixels: np.ndarray = np.asarray(canvas.buffer_rgba())[:, :, :3].copy()
    if close:
        import matplotlib.pyplot as plt

        plt.close(figure)
    return pixels
