"""``GogglesLogger``: a :class:`MetricLogger` that also logs media, histograms, tables, artifacts.

Names, parameters and defaults are robo-goggles 0.3.6's (``name=None``, videos at 30 fps as
GIF, ``histogram(histogram, static=)``, ``time=`` on every call); each array is checked and
copied at the call, so a bad one raises here and a later change by the caller is never seen.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from goggles_io._api.data import MetricLogger, owned
from goggles_io._event import artifacts
from goggles_io._event import validate as v
from goggles_io._event.records import Kind

__all__ = ["GogglesLogger"]


def _name(name: str | None) -> str | None:
    return None if name is None else v.check_name(name)


class GogglesLogger(MetricLogger):
    """A :class:`TextLogger` that also logs metrics and media.

    An unnamed media event (``name=None``) carries no ``extra["name"]``; its step counter and
    its W&B key are the kind's name (``image``, ``video``, ...).
    """

    __slots__ = ()

    def image(
        self,
        image: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        format: str = "png",
        time: Any = None,
        x: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log an ``(H, W)`` or ``(H, W, C)`` image (C in 1/3/4; uint8 ideally); copied now.

        ``format`` is the file format ``LocalStorageHandler`` writes (``png``, ``jpg``, ...).
        """
        pixels = v.to_image(image, copy=False)
        fmt = v.check_image_format(format, pixels)
        arr = owned(pixels, image)
        ext = self._extra(_name(name), x, extra)
        ext["format"] = fmt
        at = self._step(name or "image", step)
        self._send(Kind.IMAGE, arr, at, ext, async_mode, v.check_time(time))

    def video(
        self,
        video: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        fps: float = 30,
        format: str = "gif",
        time: Any = None,
        x: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log a video (``(T, H, W[, C])`` or ``(T, C, H, W)``; stored as ``(T, C, H, W)``)."""
        arr = owned(v.to_video(video, copy=False), video)
        ext = self._extra(_name(name), x, extra)
        ext["fps"] = v.check_fps(fps)
        ext["format"] = v.check_video_format(format)
        at = self._step(name or "video", step)
        self._send(Kind.VIDEO, arr, at, ext, async_mode, v.check_time(time))

    def histogram(
        self,
        histogram: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        time: Any = None,
        static: bool = False,
        bins: int | None = None,
        x: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log the raw samples of a histogram (binned by the handler); copied now.

        ``static=True`` asks W&B for a fixed custom chart of the samples (robo-goggles'
        ``wandb.plot.histogram``) instead of a histogram series over steps.
        """
        arr = owned(v.to_histogram(histogram, copy=False), histogram)
        ext = self._extra(_name(name), x, extra)
        ext["static"] = bool(static)
        if bins is not None:
            ext["bins"] = int(bins)
        at = self._step(name or "histogram", step)
        self._send(Kind.HISTOGRAM, arr, at, ext, async_mode, v.check_time(time))

    def vector_field(
        self,
        vector_field: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        time: Any = None,
        x: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log a ``(..., 2)`` or ``(..., 3)`` vector field; copied now.

        robo-goggles' extras shape its picture: ``store_visualization=True`` makes
        ``LocalStorageHandler`` also write a PNG, drawn with ``mode`` (``"magnitude"`` or
        ``"vorticity"``) and ``add_colorbar``.
        """
        arr = owned(v.to_vector_field(vector_field, copy=False), vector_field)
        ext = self._extra(_name(name), x, extra)
        at = self._step(name or "vector_field", step)
        self._send(Kind.VECTOR_FIELD, arr, at, ext, async_mode, v.check_time(time))

    def trajectories(
        self,
        trajectories: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        time: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log ``(N, L, dim)`` trajectories (or one ``(L, dim)``), dim 2 or 3; copied now.

        W&B shows them as an interactive plotly figure; ``store_visualization=True`` makes
        ``LocalStorageHandler`` also write a PNG beside the ``.npy``.
        """
        arr = owned(v.to_trajectories(trajectories, copy=False), trajectories)
        ext = self._extra(_name(name), None, extra)
        at = self._step(name or "trajectories", step)
        self._send(Kind.TRAJECTORIES, arr, at, ext, async_mode, v.check_time(time))

    def artifact(
        self,
        data: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        format: str = "bin",
        time: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log an artifact: str content, bytes, a dict/list (JSON, or YAML by ``format``), a
        numpy array (``.npy``), a :class:`pathlib.Path` of a file to copy, or robo-goggles'
        W&B reference ``{"path": file_or_dir, "name"?, "type"?, "aliases"?}``."""
        payload = artifacts.to_artifact(data, format)
        if name is None:
            if isinstance(payload, dict):
                name = payload.get("name") or None
            elif isinstance(payload, str):
                name = payload.rsplit("/", 1)[-1]
        ext = self._extra(_name(name), None, extra)
        ext["format"] = format
        at = self._step(name or "artifact", step)
        self._send(Kind.ARTIFACT, payload, at, ext, async_mode, v.check_time(time))

    def table(
        self,
        columns: Sequence[str],
        data: Sequence[Sequence[Any]],
        step: int | None = None,
        *,
        name: str = "table",
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log a table of rows (W&B shows it as a ``wandb.Table``)."""
        payload = v.to_table(columns, data)
        ext = self._extra(v.check_name(name), None, extra)
        self._send(Kind.TABLE, payload, self._step(name, step), ext, async_mode)

    def text(
        self,
        text: str,
        step: int | None = None,
        *,
        name: str = "text",
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log a named block of text at a step (not a log message)."""
        ext = self._extra(v.check_name(name), None, extra)
        self._send(Kind.TEXT, str(text), self._step(name, step), ext, async_mode)
