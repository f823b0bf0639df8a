"""Image, GIF and MP4 files from numpy arrays (robo-goggles' ``save_numpy_*``).

pillow writes images and GIFs, imageio-ffmpeg MP4s; both are imported inside the function that
needs them (``pip install 'split-telemetry[media]'``), so ``import goggles_io.media`` stays cheap.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from goggles_io._util.extras import import_extra
from goggles_io.media._pixels import to_frames, to_uint8

__all__ = ["IMAGE_ENCODERS", "has_mp4", "save_numpy_gif", "save_numpy_image", "save_numpy_mp4"]

# format name -> pillow's encoder
IMAGE_ENCODERS = {
    "png": "PNG",
    "jpg": "JPEG",
    "jpeg": "JPEG",
    "bmp": "BMP",
    "gif": "GIF",
    "tiff": "TIFF",
    "webp": "WEBP",
}


def _pil() -> Any:
    return import_extra("PIL.Image", purpose="writing image files", extra="media")


def _image_pixels(image: Any) -> Any:
    import numpy as np

    arr = np.asarray(image)
    if arr.ndim == 3 and arr.shape[-1] == 1:
        arr = arr[..., 0]
    if arr.ndim != 2 and not (arr.ndim == 3 and arr.shape[-1] in (3, 4)):
        msg = f"image must have shape (H, W) or (H, W, C) with C in 1, 3, 4 (got {arr.shape})."
        raise ValueError(msg)
    return to_uint8(arr)


def save_numpy_image(image: Any, out_path: str | os.PathLike[str], format: str) -> None:
    """Write ``image`` to ``out_path`` encoded as ``format`` (``png``, ``jpg``, ``bmp``, ...).

    ``format`` picks the encoder, not the file name (robo-goggles' rule); pixel values follow
    :func:`to_uint8`. Nothing is left behind when encoding fails.

    Raises:
        ValueError: an unknown ``format``, a shape that is no image, or RGBA as JPEG.
        FileNotFoundError: the parent directory does not exist.
    """
    encoder = IMAGE_ENCODERS.get(str(format).lower())
    if encoder is None:
        msg = f"format must be one of {sorted(IMAGE_ENCODERS)!r} (got {format!r})."
        raise ValueError(msg)
    pixels = _image_pixels(image)
    if encoder == "JPEG" and pixels.ndim == 3 and pixels.shape[-1] == 4:
        msg = "JPEG holds no alpha channel: pass an (H, W, 3) image or format='png'."
        raise ValueError(msg)
    _write(out_path, lambda fh: _pil().fromarray(pixels).save(fh, format=encoder))


def save_numpy_gif(
    frames: Any, out_path: str | os.PathLike[str], fps: float = 10, loop: int = 0
) -> None:
    """Write ``frames`` (``(T, H, W[, C])``) as an animated GIF looping ``loop`` times (0: forever).

    Unlike robo-goggles, the frame delay (``1000 / fps`` ms) is written, so viewers play it at
    ``fps``.

    Raises:
        ValueError: a shape that is no video, or ``fps <= 0``.
    """
    if not fps > 0:
        msg = f"fps must be > 0 (got {fps!r})."
        raise ValueError(msg)
    pil = _pil()
    images = [pil.fromarray(frame) for frame in to_frames(frames)]
    duration_ms = max(1, round(1000.0 / fps))

    def write(fh: Any) -> None:
        images[0].save(
            fh, format="GIF", save_all=True, append_images=images[1:], duration=duration_ms,
            loop=int(loop),
        )  # fmt: skip

    _write(out_path, write)


def has_mp4() -> bool:
    """Whether MP4 files can be written here (imageio-ffmpeg, which ships ffmpeg, is installed)."""
    import importlib.util

    return importlib.util.find_spec("imageio_ffmpeg") is not None


def save_numpy_mp4(
    frames: Any,
    out_path: str | os.PathLike[str],
    fps: float = 30,
    codec: str = "libx264",
    pix_fmt: str = "yuv420p",
    bitrate: str | None = None,
    crf: int | None = 18,
    convert_gray_to_rgb: bool = True,
    preset: str | None = "medium",
) -> None:
    """Write ``frames`` (``(T, H, W[, C])``) as an MP4 through ffmpeg (imageio-ffmpeg).

    Alpha is dropped, grey frames become RGB (``convert_gray_to_rgb``; ffmpeg's default
    encoders want colour), and odd sizes are edge-padded to even for ``yuv420p``.

    Raises:
        ValueError: a shape that is no video, ``fps <= 0``, or an ffmpeg failure (an unknown
            codec, for instance); the partial file is removed.
    """
    import numpy as np

    iio = import_extra("imageio_ffmpeg", purpose="writing MP4 files", extra="media")
    if not fps > 0:
        msg = f"fps must be > 0 (got {fps!r})."
        raise ValueError(msg)
    video = to_frames(frames)
    if video.ndim == 3 and convert_gray_to_rgb:
        video = np.repeat(video[..., None], 3, axis=-1)
    if video.ndim == 4:
        video = video[..., :3]
    pad_h, pad_w = video.shape[1] % 2, video.shape[2] % 2
    if pad_h or pad_w:
        pad = ((0, 0), (0, pad_h), (0, pad_w)) + (((0, 0),) if video.ndim == 4 else ())
        video = np.pad(video, pad, mode="edge")
    params = [*(["-crf", str(crf)] if crf is not None else []),
              *(["-preset", preset] if preset else [])]  # fmt: skip
    target = Path(out_path)
    target.unlink(missing_ok=True)  # so a failed run cannot pass for an old file
    writer = iio.write_frames(
        str(target), (video.shape[2], video.shape[1]), fps=fps, codec=codec,
        pix_fmt_in="rgb24" if video.ndim == 4 else "gray", pix_fmt_out=pix_fmt,
        bitrate=bitrate, quality=None, macro_block_size=1, output_params=params,
        ffmpeg_log_level="error",
    )  # fmt: skip
    try:
        writer.send(None)
        for frame in video:
            writer.send(np.ascontiguousarray(frame))
        writer.close()
        if not target.is_file() or target.stat().st_size == 0:  # ffmpeg exited on its own
            raise OSError("ffmpeg wrote no file (see its message above)")
    except Exception as exc:
        target.unlink(missing_ok=True)
        msg = f"ffmpeg could not write {str(target)!r} with codec={codec!r}: {exc}"
        raise ValueError(msg) from exc


def _write(out_path: str | os.PathLike[str], write: Any) -> None:
    target = Path(out_path)
    with open(target, "wb") as fh:
        try:
            write(fh)
        except BaseException:
            fh.close()
            target.unlink(missing_ok=True)
            raise
