"""File writers for ``LocalStorageHandler``: PNG, GIF/MP4, ``.npy`` and artifacts.

pillow, imageio and PyAV are imported inside the writers, so ``import goggles_io`` never pays
for them; a missing one raises ``ImportError`` saying which extra to install.
"""

from __future__ import annotations

import functools
import os
import re
import shutil
from pathlib import Path
from typing import Any

from goggles_io._util.extras import import_extra, install_hint

__all__ = [
    "MEDIA_INSTALL",
    "artifact_ext",
    "claim",
    "has_pyav",
    "to_pixels",
    "write_artifact",
    "write_npy",
    "write_png",
    "write_video",
]

MEDIA_INSTALL = install_hint("media")
_EXT = re.compile(r"[A-Za-z0-9]{1,10}")


def claim(folder: Path, stem: str, ext: str) -> Path:
    """Create and return a new, empty file ``folder/stem[-n].ext``; never reuse one."""
    for n in range(10_000):
        target = folder / (f"{stem}.{ext}" if n == 0 else f"{stem}-{n}.{ext}")
        try:
            with open(target, "xb"):
                pass
        except FileExistsError:
            continue
        return target
    msg = f"too many files named {stem!r}.{ext} in {str(folder)!r}"
    raise FileExistsError(msg)


def artifact_ext(payload: Any, fmt: Any) -> str:
    if isinstance(fmt, str) and _EXT.fullmatch(fmt):
        return fmt
    if isinstance(payload, (str, os.PathLike)):
        suffix = Path(payload).suffix.lstrip(".")
        if _EXT.fullmatch(suffix):
            return suffix
    return "bin"


def write_artifact(payload: Any, target: Path) -> None:
    if isinstance(payload, (bytes, bytearray)):
        target.write_bytes(payload)
    else:
        shutil.copyfile(os.fspath(payload), target)


def write_npy(array: Any, target: Path) -> None:
    import numpy as np

    with open(target, "wb") as handle:
        np.save(handle, np.asarray(array), allow_pickle=False)


def _to_uint8(array: Any) -> Any:
    import numpy as np

    arr = np.asarray(array)
    if arr.dtype == np.uint8:
        return arr
    if arr.dtype.kind == "f":
        arr = np.nan_to_num(arr, nan=0.0, posinf=1.0, neginf=0.0) * 255.0 + 0.5
    return np.clip(arr, 0, 255).astype(np.uint8)


def _import_pil() -> Any:
    return import_extra("PIL.Image", purpose="writing PNG/GIF files", extra="media")


def to_pixels(image: Any) -> Any:
    """An image as uint8 ``(H, W)`` or ``(H, W, C)`` (floats in [0, 1] scaled, NaN black)."""
    pixels = _to_uint8(image)
    return pixels[..., 0] if pixels.ndim == 3 and pixels.shape[-1] == 1 else pixels


def write_png(image: Any, target: Path) -> None:
    _import_pil().fromarray(to_pixels(image)).save(target, format="PNG")


def _frames(video: Any) -> Any:
    """``(T, C, H, W)`` -> uint8 ``(T, H, W, C)``, or ``(T, H, W)`` for one channel."""
    frames = _to_uint8(video).transpose(0, 2, 3, 1)
    return frames[..., 0] if frames.shape[-1] == 1 else frames


def write_video(video: Any, target: Path, fmt: str, fps: float) -> None:
    frames = _frames(video)
    if fmt == "mp4":
        _write_mp4(frames, target, fps)
        return
    pil = _import_pil()
    images = [pil.fromarray(frame) for frame in frames]
    duration_ms = max(1, round(1000.0 / fps))
    images[0].save(
        target,
        format="GIF",
        save_all=True,
        append_images=images[1:],
        duration=duration_ms,
        loop=0,
    )


@functools.cache
def has_pyav() -> bool:
    """Whether PyAV (needed for MP4) is importable; checked once per process."""
    try:
        import av  # noqa: F401
    except ImportError:
        return False
    return True


def _write_mp4(frames: Any, target: Path, fps: float) -> None:
    iio = import_extra(
        "imageio.v3", purpose="writing MP4 files (with PyAV: pip install av)", extra="media"
    )
    import numpy as np

    if frames.ndim == 3:
        frames = frames[..., None].repeat(3, axis=-1)
    frames = frames[..., :3]  # H.264 in yuv420p: no alpha, and even height and width
    pad_h, pad_w = frames.shape[1] % 2, frames.shape[2] % 2
    if pad_h or pad_w:
        frames = np.pad(frames, ((0, 0), (0, pad_h), (0, pad_w), (0, 0)), mode="edge")
    iio.imwrite(target, frames, plugin="pyav", codec="libx264", fps=fps)
