"""``GogglesLogger``: text plus data (scalars, media, histograms, tables, artifacts).

Each data call validates and copies its input, resolves the metric's step (explicit, or the
metric's previous step + 1 in this scope) and emits one event. A custom x-axis declared with
:meth:`GogglesLogger.set_x_axis` travels in ``extra["x_axis"]`` with its value in ``extra["x"]``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from sys import _getframe
from time import time as _now
from typing import TYPE_CHECKING, Any

from goggles_io._api.loggers import TextLogger, _caller, _emit
from goggles_io._api.state import STATE, get_settings, get_transport
from goggles_io._event import validate as v
from goggles_io._event.records import Event, Kind
from goggles_io.exceptions import InvalidPayloadError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["GogglesLogger"]

_METRIC = Kind.METRIC
_INF = math.inf


def _owned(arr: np.ndarray, given: object) -> Any:
    """The log call's own copy of ``arr``: staged straight into shared memory when the transport
    can (one copy, no fresh heap pages), else a private heap copy. Later changes by the caller
    never reach the handlers either way."""
    stage = getattr(STATE.transport or get_transport(), "stage_array", None)
    if stage is not None:
        ref = stage(arr)
        if ref is not None:
            return ref
    return arr.copy() if arr is given or arr.base is not None else arr


def _wait() -> None:
    """Block until the handlers took everything logged so far (``async_mode=False``)."""
    (STATE.transport or get_transport()).flush(None)


class GogglesLogger(TextLogger):
    """A :class:`TextLogger` that also logs metrics and media."""

    __slots__ = ()

    # -- helpers ----------------------------------------------------------------------------
    def _step(self, name: str, step: object) -> int:
        key = (self.scope, name)
        if step is None:
            new = STATE.steps.get(key, -1) + 1
        else:
            new = step if type(step) is int and step >= 0 else v.check_step(step)
        STATE.steps[key] = new
        return new

    def _extra(self, name: str | None, x: Any, extra: Mapping[str, Any]) -> dict[str, Any]:
        ext: dict[str, Any] = {"bound": self._bound} if self._bound else {}
        if extra:
            ext.update(extra)
        if name is not None:
            ext["name"] = name
            axis = STATE.x_axes.get(name)
            if axis is not None:
                ext["x_axis"] = axis
        if x is not None:
            ext["x"] = x
            ext.setdefault("x_axis", "time")
        return ext

    def _send(
        self, kind: Kind, payload: Any, step: int, ext: dict[str, Any], async_mode: Any = None
    ) -> None:
        filepath, lineno = _caller(2)
        _emit(
            Event(
                kind=kind,
                scope=self.scope,
                payload=payload,
                step=step,
                timestamp=_now(),
                logger=self.name,
                pid=STATE.pid,
                filepath=filepath,
                lineno=lineno,
                extra=ext,
            )
        )
        if async_mode is False:
            _wait()

    # -- declarations -----------------------------------------------------------------------
    def set_x_axis(self, metric: str, axis: str = "time") -> None:
        """Declare that ``metric`` is plotted against ``axis`` (e.g. physical time), not step.

        Values for the axis are passed per call with ``x=`` (or robo-goggles' ``time=``);
        handlers that support it (W&B) plot the metric against them.
        """
        STATE.x_axes[v.check_name(metric, "metric")] = v.check_name(axis, "axis")

    # -- metrics ----------------------------------------------------------------------------
    def scalar(
        self,
        name: str,
        value: float,
        step: int | None = None,
        *,
        x: Any = None,
        time: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log one scalar; NaN and +-inf are kept and listed in ``extra["nonfinite"]``.

        Raises:
            InvalidNameError: ``name`` is not a non-empty str.
            InvalidPayloadError: ``value`` is not a real number, or ``step`` is not an int >= 0.
        """
        if type(name) is not str or not name:
            v.check_name(name)
        if type(value) is not float:
            value = v.to_scalar(name, value)
        key = (self.scope, name)
        if step is None:
            step = STATE.steps.get(key, -1) + 1
        elif type(step) is not int or step < 0:
            step = v.check_step(step)
        STATE.steps[key] = step
        ext: dict[str, Any] = {"bound": self._bound} if self._bound else {}
        if extra:
            ext.update(extra)
        if value != value or value == _INF or value == -_INF:
            ext["nonfinite"] = [name]
        if STATE.x_axes:
            axis = STATE.x_axes.get(name)
            if axis is not None:
                ext["x_axis"] = axis
        if x is not None or time is not None:
            ext["x"] = x if x is not None else time
            ext.setdefault("x_axis", "time")
        if (STATE.settings or get_settings()).caller_info:
            frame = _getframe(1)
            filepath, lineno = frame.f_code.co_filename, frame.f_lineno
        else:
            filepath = lineno = None
        # Positional: about twice as fast as keywords on this path.
        (STATE.transport or get_transport()).emit(
            Event(
                _METRIC,
                self.scope,
                {name: value},
                None,
                step,
                _now(),
                self.name,
                STATE.pid,
                filepath,
                lineno,
                ext,
            )
        )
        if async_mode is False:
            _wait()

    def push(
        self,
        metrics: Mapping[str, Any],
        step: int | None = None,
        *,
        x: Any = None,
        time: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log several values at once, routing each array by its shape as robo-goggles does.

        ``(H, W)`` and ``(H, W, C)`` arrays (C in 1/3/4) become image events named by their key;
        a 1-D array ``v`` becomes the scalars ``key/0 .. key/n-1`` (every handler can chart
        those); everything else must be a real number. Without ``step`` each metric takes its
        own next step, so metrics sharing a step travel in one event.
        """
        if not isinstance(metrics, Mapping):
            msg = f"metrics must be a mapping of name -> value (got {type(metrics).__name__})."
            raise InvalidPayloadError(msg, value=metrics)
        x = x if x is not None else time
        groups: dict[int, dict[str, int | float]] = {}
        images: list[tuple[str, np.ndarray]] = []
        for name, value in metrics.items():
            v.check_name(name)
            if v.is_image_like(value):
                images.append((name, _owned(v.to_image(value, copy=False), value)))
            elif v.is_vector_like(value):
                for i, item in enumerate(v.to_vector(name, value)):
                    element = f"{name}/{i}"
                    groups.setdefault(self._step(element, step), {})[element] = item
            else:
                scalar = v.to_scalar(name, value)
                groups.setdefault(self._step(name, step), {})[name] = scalar
        for at, payload in groups.items():
            ext = self._extra(None, x, extra)
            bad = sorted(n for n, val in payload.items() if not v.is_finite(val))
            if bad:
                ext["nonfinite"] = bad
            axes = {STATE.x_axes[n] for n in payload if n in STATE.x_axes}
            if len(axes) == 1:
                ext["x_axis"] = axes.pop()
            self._send(_METRIC, payload, at, ext)
        for name, image in images:
            ext = self._extra(name, x, extra)
            ext.setdefault("format", "png")
            self._send(Kind.IMAGE, image, self._step(name, step), ext)
        if async_mode is False:
            _wait()

    # -- media ------------------------------------------------------------------------------
    def image(
        self,
        image: Any,
        step: int | None = None,
        *,
        name: str = "image",
        format: str = "png",
        x: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log an ``(H, W)`` or ``(H, W, C)`` image (uint8, or float in [0, 1]); copied now."""
        arr = _owned(v.to_image(image, copy=False), image)
        ext = self._extra(v.check_name(name), x, extra)
        ext["format"] = format
        self._send(Kind.IMAGE, arr, self._step(name, step), ext, async_mode)

    def video(
        self,
        video: Any,
        step: int | None = None,
        *,
        name: str = "video",
        fps: float = 20,
        format: str | None = None,
        x: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log a video; stored as ``(T, C, H, W)``; copied now."""
        arr = _owned(v.to_video(video, copy=False), video)
        ext = self._extra(v.check_name(name), x, extra)
        ext["fps"] = v.check_fps(fps)
        if format is not None:  # otherwise each handler picks its own container
            ext["format"] = format
        self._send(Kind.VIDEO, arr, self._step(name, step), ext, async_mode)

    def histogram(
        self,
        values: Any,
        step: int | None = None,
        *,
        name: str = "histogram",
        bins: int | None = None,
        x: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log the raw values of a histogram (binned by the handler); copied now."""
        arr = _owned(v.to_histogram(values, copy=False), values)
        ext = self._extra(v.check_name(name), x, extra)
        if bins is not None:
            ext["bins"] = int(bins)
        self._send(Kind.HISTOGRAM, arr, self._step(name, step), ext, async_mode)

    def vector_field(
        self,
        vector_field: Any,
        step: int | None = None,
        *,
        name: str = "vector_field",
        x: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log a ``(..., 2)`` or ``(..., 3)`` vector field; copied now."""
        arr = _owned(v.to_vector_field(vector_field, copy=False), vector_field)
        ext = self._extra(v.check_name(name), x, extra)
        self._send(Kind.VECTOR_FIELD, arr, self._step(name, step), ext, async_mode)

    def artifact(
        self,
        data: Any,
        step: int | None = None,
        *,
        name: str | None = None,
        format: str = "bin",
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log an artifact: str content, bytes, a dict/list (JSON, or YAML by ``format``),
        a numpy array (``.npy``), or a :class:`pathlib.Path` of a file to copy."""
        payload = v.to_artifact(data, format)
        if name is None:
            name = payload.rsplit("/", 1)[-1] if isinstance(payload, str) else "artifact"
        ext = self._extra(v.check_name(name), None, extra)
        ext["format"] = format
        self._send(Kind.ARTIFACT, payload, self._step(name, step), ext, async_mode)

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
