"""``MetricLogger``: text plus numbers (``scalar``, ``push``, ``dictionary``), and the helpers
every data call shares (steps, extras, sending); ``GogglesLogger`` adds media on top.

Each data call validates and copies its input, resolves the metric's step (explicit, or the
metric's previous step + 1 in this scope) and emits one event. A custom x-axis declared with
:meth:`MetricLogger.set_x_axis` travels in ``extra["x_axis"]`` with its value in ``extra["x"]``;
robo-goggles' ``time=`` lands in :attr:`Event.time` (and, for numbers, is their x value).
"""

from __future__ import annotations

from collections.abc import Mapping
from sys import _getframe
from time import time as _now
from typing import TYPE_CHECKING, Any

from goggles_io._api.loggers import TextLogger, _caller
from goggles_io._api.state import STATE, get_settings, get_transport
from goggles_io._event import validate as v
from goggles_io._event.records import Kind, ShmRef
from goggles_io._event.rows import EVENT_OVERHEAD_BYTES, METRIC_ENTRY_BYTES, nbytes
from goggles_io.exceptions import InvalidPayloadError

if TYPE_CHECKING:
    import numpy as np

__all__ = ["MetricLogger", "owned", "wait"]

_METRIC = Kind.METRIC
_METRIC_VALUE = _METRIC.value
_SCALAR_BYTES = EVENT_OVERHEAD_BYTES + METRIC_ENTRY_BYTES  # rows.nbytes of a one-value metric
_MAX_NAME = v.MAX_NAME_CHARS


def owned(arr: np.ndarray, given: object) -> Any:
    """The log call's own copy of ``arr``: staged straight into shared memory when the transport
    can (one copy, no fresh heap pages), else a private heap copy. Later changes by the caller
    never reach the handlers either way."""
    ref = (STATE.transport or get_transport()).stage_array(arr)
    if ref is not None:
        return ref
    return arr.copy() if arr is given or arr.base is not None else arr


def wait() -> None:
    """Block until the handlers took everything logged so far (``async_mode=False``)."""
    (STATE.transport or get_transport()).flush(None)


class MetricLogger(TextLogger):
    """A :class:`TextLogger` that also logs numbers (the base of :class:`GogglesLogger`)."""

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
        self,
        kind: Kind,
        payload: Any,
        step: int,
        ext: dict[str, Any],
        async_mode: Any = None,
        when: float | None = None,
        depth: int = 2,
    ) -> None:
        filepath, lineno = _caller(depth)
        transport = STATE.transport or get_transport()
        # A row in rows.py's slot order (no Event at the log call: ADR 0071).
        row = (kind.value, self.scope, payload, None, step, _now(), self.name, STATE.pid,
               filepath, lineno, ext or None, when, None, "", 0)  # fmt: skip
        if not transport.put_row(row, nbytes(row)) and type(payload) is ShmRef:
            transport.release_staged(payload)  # dropped and counted: its slot goes back
        if async_mode is False:
            wait()

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
            InvalidNameError: ``name`` is not a non-empty str of at most 1024 characters.
            InvalidPayloadError: ``value`` is not a real number, or ``step`` is not an int >= 0.
        """
        if type(name) is not str or not name or len(name) > _MAX_NAME:
            v.check_name(name)
        if type(value) is not float:
            value = v.to_scalar(name, value)
        state = STATE
        key = (self.scope, name)
        if step is None:
            step = state.steps.get(key, -1) + 1
        elif type(step) is not int or step < 0:
            step = v.check_step(step)
        state.steps[key] = step
        # ``extra`` (from **extra) is a fresh dict of this call: it becomes the event's own.
        ext: dict[str, Any] = {"bound": self._bound, **extra} if self._bound else extra
        if value - value:  # NaN or +-inf: x - x is 0 for every finite x
            ext["nonfinite"] = [name]
        if state.x_axes:
            axis = state.x_axes.get(name)
            if axis is not None:
                ext["x_axis"] = axis
        if time is not None:
            time = v.check_time(time)
        if x is not None or time is not None:
            ext["x"] = x if x is not None else time
            ext.setdefault("x_axis", "time")
        filepath: str | None
        lineno: int | None
        if (state.settings or get_settings()).caller_info:
            frame = _getframe(1)
            filepath, lineno = frame.f_code.co_filename, frame.f_lineno
        else:
            filepath = lineno = None
        # A row of atomic values in rows.py's slot order: no Event, no dict (ADR 0071).
        (state.transport or get_transport()).put_scalar(
            (_METRIC_VALUE, self.scope, name, None, step, _now(), self.name, state.pid,
             filepath, lineno, ext or None, time, value, "", 0),
            _SCALAR_BYTES,
        )  # fmt: skip
        if async_mode is False:
            wait()

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
        items = [(v.check_name(name), value) for name, value in metrics.items()]
        self._spread(items, step, x, v.check_time(time), extra, "/", fields=False)
        if async_mode is False:
            wait()

    def dictionary(
        self,
        name: str,
        data: Mapping[str, Any],
        step: int | None = None,
        *,
        time: Any = None,
        async_mode: bool | None = None,
        **extra: Any,
    ) -> None:
        """Log a mapping of mixed values under ``name/<key>``, routed by type as robo-goggles does.

        Numbers (and 0-d arrays) become the metric ``name/key``; a 1-D array the metrics
        ``name/key_0 ..``; a 2-D array or ``(H, W, C)`` with C in 1/3/4 an image; an array whose
        last axis is 2 (3-D or more) a vector field. Every value is checked before anything is
        logged, so a bad one leaves nothing half-written.

        Raises:
            InvalidPayloadError: ``data`` is not a mapping, or a value fits none of the above
                (robo-goggles logs an ERROR line and skips it instead).
        """
        prefix = v.check_name(name)
        if not isinstance(data, Mapping):
            msg = f"data must be a mapping of key -> value (got {type(data).__name__})."
            raise InvalidPayloadError(msg, value=data)
        items = [
            (f"{prefix}/{v.check_name(str(key), 'key')}", value) for key, value in data.items()
        ]
        self._spread(items, step, None, v.check_time(time), extra, "_", fields=True)
        if async_mode is False:
            wait()

    def _spread(
        self,
        items: list[tuple[str, Any]],
        step: int | None,
        x: Any,
        when: float | None,
        extra: Mapping[str, Any],
        sep: str,
        fields: bool,
    ) -> None:
        """Route ``(name, value)`` pairs: numbers grouped by step, images, vector fields.

        Everything is checked and copied first (a bad value raises before anything is sent).
        ``sep`` joins a 1-D array's name and index; ``fields`` routes trailing-2 arrays to
        vector fields (``dictionary``) instead of refusing them (``push``).
        """
        numbers: list[tuple[str, int | float]] = []
        media: list[tuple[Kind, str, Any]] = []
        for name, value in items:
            if v.is_image_like(value):
                media.append((Kind.IMAGE, name, owned(v.to_image(value, copy=False), value)))
            elif fields and v.is_field_like(value):
                field = owned(v.to_vector_field(value, copy=False), value)
                media.append((Kind.VECTOR_FIELD, name, field))
            elif v.is_vector_like(value):
                vector = v.to_vector(name, value)
                numbers += [(f"{name}{sep}{i}", item) for i, item in enumerate(vector)]
            else:
                numbers.append((name, v.to_scalar(name, value)))
        groups: dict[int, dict[str, int | float]] = {}
        for name, number in numbers:
            groups.setdefault(self._step(name, step), {})[name] = number
        for at, payload in groups.items():
            ext = self._extra(None, x, extra)
            bad = sorted(n for n, val in payload.items() if not v.is_finite(val))
            if bad:
                ext["nonfinite"] = bad
            axes = {STATE.x_axes[n] for n in payload if n in STATE.x_axes}
            if len(axes) == 1:
                ext["x_axis"] = axes.pop()
            self._send(_METRIC, payload, at, ext, when=when, depth=3)
        for kind, name, array in media:
            ext = self._extra(name, x, extra)
            if kind is Kind.IMAGE:
                ext.setdefault("format", "png")
            self._send(kind, array, self._step(name, step), ext, when=when, depth=3)
