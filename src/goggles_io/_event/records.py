"""The records that cross the bus: :class:`Event` and its :class:`Kind`.

Contract for handler authors and for the transport:

* ``Event`` is frozen; handlers must not mutate ``payload`` or ``extra`` (they are shared by every
  handler the event is routed to). Arrays in ``payload`` are private copies made at log time, so
  a caller mutating its own array later never changes what a handler sees.
* ``payload`` by kind:

  ==================  ======================================================================
  ``LOG``             ``str``: the formatted message (``%``-args already applied)
  ``METRIC``          ``dict[str, int | float]``: metric name -> value (one or many)
  ``IMAGE``           ``np.ndarray`` ``(H, W)`` or ``(H, W, C)`` with ``C`` in 1, 3, 4;
                      uint8, or float in [0, 1]
  ``VIDEO``           ``np.ndarray`` ``(T, C, H, W)`` with ``C`` in 1, 3, 4 (the W&B layout)
  ``HISTOGRAM``       ``np.ndarray`` 1-D: the raw values (not yet binned)
  ``VECTOR``          ``np.ndarray`` 1-D (robo-goggles' kind; stored in the JSONL only)
  ``VECTOR_FIELD``    ``np.ndarray`` ``(..., 2)`` or ``(..., 3)``
  ``TRAJECTORIES``    ``np.ndarray`` ``(N, L, dim)`` or ``(L, dim)``, ``dim`` in 2, 3
  ``ARTIFACT``        ``bytes`` (contents), ``str`` (a path to a file) or a W&B-style
                      reference ``{"path": <absolute path>, "name"?, "type"?, "aliases"?}``
  ``TABLE``           ``{"columns": list[str], "data": list[list[scalar | str]]}``
  ``TEXT``            ``str``
  ==================  ======================================================================

* ``extra`` holds msgpack-safe builtins only. Reserved keys: ``name`` (media / text / table
  name), ``format`` (``"png"``, ``"gif"``, ``"mp4"``, ``"bin"``...), ``fps`` (video), ``bins``
  (histogram), ``static`` (histogram: W&B custom chart), ``store_visualization`` / ``mode`` /
  ``add_colorbar`` (vector fields, trajectories: the PNG LocalStorageHandler renders), ``nonfinite`` (METRIC: sorted list of names whose value is NaN or +-inf),
  ``x_axis`` / ``x`` (the declared custom x-axis name and its value), ``exc_text`` (LOG: the
  formatted traceback), ``bound`` (the logger's bound fields, a dict). Any other key is a
  user-supplied routing field.
* ``level`` is set for ``LOG`` events only (``None`` otherwise); handlers filter on it.
* ``timestamp`` is the emission time (``time.time()`` in the producer), never the handling time;
  ``time`` is robo-goggles' caller-given time of the event (e.g. simulated seconds), or ``None``.
* ``filepath`` / ``lineno`` are the caller's, or ``None`` when caller info is disabled.
* ``producer`` / ``seq`` say where a sink may have this event already (ADR 0057): the socket
  host stamps every event a client sent with the client's producer id and the event's sequence
  in that producer's stream, the same on every redelivery and increasing in the order the
  producer logged. ``""`` / ``0`` for an event that no host numbered (in-process, left-overs).
  A sink that skips an event whose ``seq`` is not above the last it kept from ``producer``
  holds each event once however often it is sent (:class:`goggles_io.handlers.Sequences`).
  Not part of the event's value: left out of ``==``, ``repr`` and :meth:`Event.to_dict`.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar, Protocol

if TYPE_CHECKING:
    import numpy as np

import attrs

__all__ = ["ArrayPool", "ArrayReader", "Event", "Kind", "ShmRef"]


class Kind(str, enum.Enum):
    """What an event carries; a ``str`` enum so ``event.kind == "metric"`` also works."""

    LOG = "log"
    METRIC = "metric"
    IMAGE = "image"
    VIDEO = "video"
    HISTOGRAM = "histogram"
    VECTOR = "vector"
    VECTOR_FIELD = "vector_field"
    TRAJECTORIES = "trajectories"
    ARTIFACT = "artifact"
    TABLE = "table"
    TEXT = "text"

    def __str__(self) -> str:
        return self.value


@attrs.frozen(slots=True)
class ShmRef:
    """Where an array lives in shared memory, as it travels on the wire."""

    segment: str
    offset: int
    nbytes: int
    dtype: str
    shape: tuple[int, ...]

    # Byte budgets skip what lives here: the pool's own budget already bounds it.
    shm_resident: ClassVar[bool] = True


class ArrayPool(Protocol):
    """Where the encoder puts big arrays (the transport's shared-memory pool)."""

    def put(self, array: np.ndarray) -> ShmRef | None:
        """Copy ``array`` in and say where it is; ``None`` when there is no room."""


class ArrayReader(Protocol):
    """How the decoder reads an array another process put in shared memory."""

    def read(self, ref: ShmRef) -> np.ndarray:
        """The array at ``ref``, copied out or lent read-only (:class:`FrameError` for a bad
        reference)."""


def _payload_eq(a: Any, b: Any) -> bool:
    if hasattr(a, "__array__") or hasattr(b, "__array__"):
        import numpy as np

        return (
            isinstance(a, np.ndarray)
            and isinstance(b, np.ndarray)
            and a.dtype == b.dtype
            and np.array_equal(a, b, equal_nan=a.dtype.kind in "fc")
        )
    return bool(a == b)


@attrs.define(slots=True)
class Event:
    """One thing that was logged, as every handler sees it.

    Slotted and read-only by contract: it is created on the hot path of every log call and shared
    by all handlers it is routed to. It is not ``frozen`` because attrs' frozen ``__init__`` costs
    about 1 us more per event (ADR 0004); derive a changed copy with ``attrs.evolve`` or
    ``Event.from_dict``. See the module docstring for the payload of each kind. Inside goggles_io
    an event travels as a row and is built by :func:`goggles_io._event.rows.events_of` alone,
    where a handler reads it (ADR 0071); code outside goggles_io builds it with keywords.
    """

    kind: Kind
    scope: str
    payload: Any = attrs.field(eq=attrs.cmp_using(eq=_payload_eq))
    level: int | None = None
    step: int | None = None
    timestamp: float = 0.0
    logger: str = ""
    pid: int = 0
    filepath: str | None = None
    lineno: int | None = None
    extra: Mapping[str, Any] = attrs.field(factory=dict)
    time: float | None = None
    producer: str = attrs.field(default="", eq=False, repr=False)
    seq: int = attrs.field(default=0, eq=False, repr=False)

    def to_dict(self) -> dict[str, Any]:
        """Return a plain dict (``kind`` as its string value; arrays left as arrays)."""
        return {
            "kind": Kind(self.kind).value,
            "scope": self.scope,
            "payload": self.payload,
            "level": self.level,
            "step": self.step,
            "timestamp": self.timestamp,
            "logger": self.logger,
            "pid": self.pid,
            "filepath": self.filepath,
            "lineno": self.lineno,
            "extra": dict(self.extra),
            "time": self.time,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Event:
        """Rebuild an event from :meth:`to_dict` output.

        Also accepts robo-goggles' layout (flat ``extra.<key>`` entries, a plain-string
        ``kind``), so handlers written against its README keep working.
        """
        extra = dict(data.get("extra") or {})
        for key, value in data.items():
            if key.startswith("extra."):
                extra[key[6:]] = value
        timestamp = data.get("timestamp")
        when = data.get("time")
        return cls(
            kind=Kind(data["kind"]),
            scope=data.get("scope", "global"),
            payload=data.get("payload"),
            level=data.get("level"),
            step=data.get("step"),
            timestamp=0.0 if timestamp is None else float(timestamp),
            logger=data.get("logger", ""),
            pid=data.get("pid", 0),
            filepath=data.get("filepath"),
            lineno=data.get("lineno"),
            extra=extra,
            time=None if when is None else float(when),
        )
