"""File writers for ``LocalStorageHandler``: images, GIF/MP4, ``.npy``, pictures and artifacts.

The encoders are :mod:`goggles_io.media`'s (pillow, imageio-ffmpeg, matplotlib, each imported
only when a file of its kind is written); this module adds what a run directory needs on top:
fresh file names that never overwrite (but for the orphan a killed writer left, which its
redelivered event takes over), and the event payload layouts.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

from goggles_io._util.extras import install_hint
from goggles_io.media import (
    create_numpy_trajectories_visualization,
    create_numpy_vector_field_visualization,
    save_numpy_gif,
    save_numpy_image,
    save_numpy_mp4,
)
from goggles_io.media._files import IMAGE_ENCODERS, has_mp4

__all__ = [
    "IMAGE_FORMATS",
    "MEDIA_INSTALL",
    "artifact_ext",
    "claim",
    "has_mp4",
    "tchw_to_frames",
    "write_artifact",
    "write_image",
    "write_npy",
    "write_trajectories_png",
    "write_vector_field_png",
    "write_video",
]

MEDIA_INSTALL = install_hint("media")
IMAGE_FORMATS = frozenset(IMAGE_ENCODERS)
_EXT = re.compile(r"[A-Za-z0-9]{1,10}")


def claim(folder: Path, stem: str, ext: str) -> Path:
    """Create and return a new, empty file ``folder/stem[-n].ext``; never reuse one."""
    suffix = f".{ext}" if ext else ""
    for n in range(10_000):
        target = folder / (f"{stem}{suffix}" if n == 0 else f"{stem}-{n}{suffix}")
        try:
            with open(target, "xb"):
                pass
        except FileExistsError:
            continue
        return target
    msg = f"too many files named {stem!r}{suffix} in {str(folder)!r}"
    raise FileExistsError(msg)


def orphan(
    folder: Path,
    stem: str,
    ext: str,
    after: float,
    before: float,
    *,
    named: Callable[[Path], bool],
) -> Path | None:
    """The first file of :func:`claim`'s ``stem[-n].ext`` series last written between ``after``
    and ``before`` that no line names (``named``): one a killed writer made for an event whose
    line it never wrote whole. The redelivered event writes over it, not beside it as ``-1``.
    """
    suffix = f".{ext}" if ext else ""
    for n in range(10_000):
        target = folder / (f"{stem}{suffix}" if n == 0 else f"{stem}-{n}{suffix}")
        try:
            info = target.stat()
        except FileNotFoundError:
            return None
        if stat.S_ISREG(info.st_mode) and after < info.st_mtime < before and not named(target):
            return target
    return None


def artifact_ext(payload: Any, fmt: Any) -> str:
    """The file extension of an artifact: its ``format``, else its source's suffix, else bin."""
    source = payload.get("path") if isinstance(payload, dict) else payload
    if isinstance(source, (str, os.PathLike)) and os.path.isdir(source):
        return ""  # a directory is copied as one
    if isinstance(fmt, str) and fmt != "bin" and _EXT.fullmatch(fmt):
        return fmt
    if isinstance(source, (str, os.PathLike)):
        suffix = Path(source).suffix.lstrip(".")
        if _EXT.fullmatch(suffix):
            return suffix
    return "bin"


def write_artifact(payload: Any, target: Path) -> None:
    """Write an artifact's bytes, or copy the file (or directory) it names, to ``target``."""
    if isinstance(payload, (bytes, bytearray)):
        target.write_bytes(payload)
        return
    source = payload["path"] if isinstance(payload, dict) else payload
    if os.path.isdir(source):
        target.unlink(missing_ok=True)  # claim() made a placeholder file
        shutil.copytree(os.fspath(source), target)
    else:
        shutil.copyfile(os.fspath(source), target)


def write_npy(array: Any, target: Path) -> None:
    import numpy as np

    with open(target, "wb") as handle:
        np.save(handle, np.asarray(array), allow_pickle=False)


def write_image(image: Any, target: Path, fmt: str) -> None:
    save_numpy_image(image, target, fmt)


def tchw_to_frames(video: Any) -> Any:
    """An event's ``(T, C, H, W)`` video as channels-last frames for the encoders."""
    return video.transpose(0, 2, 3, 1)


def write_video(video: Any, target: Path, fmt: str, fps: float) -> None:
    frames = tchw_to_frames(video)
    if fmt == "mp4":
        save_numpy_mp4(frames, target, fps=fps)
    else:
        save_numpy_gif(frames, target, fps=fps)


def write_vector_field_png(field: Any, target: Path, extra: Any) -> None:
    """The picture of a field as robo-goggles' storage draws it (no colour bar by default)."""
    options: dict[str, Any] = {
        "mode": extra.get("mode") or "magnitude",
        "add_colorbar": bool(extra.get("add_colorbar", False)),
    }
    for key in ("arrow_stride", "dpi"):
        if isinstance(extra.get(key), int) and not isinstance(extra.get(key), bool):
            options[key] = extra[key]
    picture = create_numpy_vector_field_visualization(_as_2d_field(field), **options)
    save_numpy_image(picture, target, "png")


def write_trajectories_png(trajectories: Any, target: Path, extra: Any) -> None:
    dpi = extra.get("dpi")
    options = {"dpi": dpi} if isinstance(dpi, int) and not isinstance(dpi, bool) else {}
    save_numpy_image(
        create_numpy_trajectories_visualization(trajectories, **options), target, "png"
    )


def _as_2d_field(field: Any) -> Any:
    """A field to draw: ``(H, W, C)`` as is; deeper fields drawn by their first slices."""
    while field.ndim > 3:
        field = field[0]
    if field.ndim == 2:  # (N, 2): one row of vectors
        field = field[None]
    return field
