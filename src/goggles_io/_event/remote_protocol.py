"""The remote protocol's request checks and JSON rules, independent of any HTTP server.

Over 400 lines, one piece: it is docs/remote-protocol.md's executable form, one file so the two
read side by side.

``docs/remote-protocol.md`` is the contract; this module is its executable form. The collector
(``goggles_io/server/``) and the remote sink (``handlers/remote.py``) both use it: the functions
take bytes, header values and parsed bodies, never a server object.
Every failure is a :class:`ProtocolError` carrying the HTTP status and a JSON-ready body, so
whichever server runs answers alike.

Rules enforced here (see ADR 0021): bodies are strict JSON (UTF-8, no ``NaN``/``Infinity``; a
point's number that overflows a float is refused); numbers are numbers (never ``true``, never a string); ``seq`` is
an int in ``[0, 2**63)``; ``step`` is ``null`` or a 64-bit int; ``value`` is ``null`` (NaN/inf on
the client) or a finite number; names are non-empty UTF-8 text. A point may say who numbered it
(ADR 0069): ``producer`` (1-128 characters), ``pseq`` (an int in ``[1, 2**63)``) and ``part``
(an int in ``[0, 2**31)``, default 0), all or none. A batch with points that break these is
refused whole with **422** and the list of those points (index, seq, reason), so the client can
drop exactly them and resend the rest.
"""

from __future__ import annotations

import json
import math
import operator
from collections.abc import Mapping
from http import HTTPStatus
from typing import Any
from urllib.parse import quote

import nonfinite_json
from goggles_io.exceptions import InvalidNameError, InvalidPayloadError

__all__ = [
    "INT64_MAX",
    "INT64_MIN",
    "MAX_BODY_BYTES",
    "MAX_NAME_CHARS",
    "MAX_PART",
    "MAX_PRODUCER_CHARS",
    "PointRow",
    "ProtocolError",
    "check_finish",
    "check_point_name",
    "check_point_step",
    "check_points",
    "check_register",
    "dump_json",
    "parse_content_length",
    "parse_json",
    "point_problem",
    "register_body",
    "run_path",
]

MAX_BODY_BYTES = 16 * 1024 * 1024
"""Largest request body a collector accepts (bigger: 413)."""
MAX_NAME_CHARS = 1024
"""Longest metric name, run id or run name."""
MAX_PRODUCER_CHARS = 128
"""Longest producer id a point may carry."""
MAX_PART = 2**31 - 1
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
_STATUS_CHARS = 64

# (seq, name, value, step, time, producer, pseq, part): what a collector stores for one point;
# ``producer`` is ``None`` for a point that does not say who numbered it (then pseq = part = 0).
PointRow = tuple[int, str, float | None, int | None, float | None, str | None, int, int]


class ProtocolError(Exception):
    """A request the protocol refuses: ``status`` and a JSON ``body`` with at least ``error``."""

    def __init__(self, status: HTTPStatus, message: str, **details: Any) -> None:
        super().__init__(message)
        self.status = status
        self.body: dict[str, Any] = {"error": message, **details}


def parse_content_length(values: list[str], limit: int = MAX_BODY_BYTES) -> int:
    """The body length from every ``Content-Length`` header value of one request.

    Raises:
        ProtocolError: 400 for anything but one run of ASCII digits (``-1``, ``1e3``, two
            differing values), 413 when it exceeds ``limit``.
    """
    if not values:
        return 0
    distinct = {v.strip() for v in values}
    if len(distinct) != 1:
        msg = f"conflicting Content-Length headers {sorted(distinct)!r}"
        raise ProtocolError(HTTPStatus.BAD_REQUEST, msg)
    text = distinct.pop()
    if not text.isascii() or not text.isdigit() or len(text) > 20:
        msg = f"Content-Length must be a non-negative decimal integer (got {text[:40]!r})"
        raise ProtocolError(HTTPStatus.BAD_REQUEST, msg)
    length = int(text)
    if length > limit:
        msg = f"body of {length} bytes is over the limit of {limit} bytes; send smaller batches"
        raise ProtocolError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, msg, limit=limit)
    return length


def _no_constant(name: str) -> Any:
    msg = f"{name} is not JSON (send null for a non-finite value)"
    raise ValueError(msg)


def parse_json(raw: bytes) -> Any:
    """Decode a request body as strict JSON; an empty body is ``{}``. Non-finite numbers in the
    one convention (strings listed under ``_nonfinite``, :mod:`nonfinite_json`) are restored.

    Raises:
        ProtocolError: 400 naming what is wrong (not UTF-8, not JSON, NaN/Infinity, overflow).
    """
    if not raw.strip():
        return {}
    try:
        text = raw.decode("utf-8")
        # No parse_float hook (it would cost a Python call per number): a literal that
        # overflows to inf (1e999) is refused where it matters, in check_points, and written
        # back by dump_json in the non-finite convention everywhere else.
        return nonfinite_json.restore(json.loads(text, parse_constant=_no_constant))
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError, JSONDecodeError subclass it
        raise ProtocolError(HTTPStatus.BAD_REQUEST, f"body is not strict JSON: {exc}") from None


def dump_json(obj: Any) -> bytes:
    """Encode an answer (or a stored value) as strict JSON.

    A non-finite float follows the one convention (:mod:`nonfinite_json`): the string
    ``"NaN"``/``"Infinity"``/``"-Infinity"``, listed under the answer's ``_nonfinite``.
    A bare list (an export's rows) has nowhere to list them: its non-finite floats are ``null``.
    """
    try:
        return json.dumps(obj, allow_nan=False, separators=(",", ":")).encode()
    except ValueError:
        if isinstance(obj, Mapping):
            return nonfinite_json.dumps(obj, separators=(",", ":")).encode()
        return json.dumps(_clean(obj), allow_nan=False, separators=(",", ":")).encode()


def _clean(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _text_problem(what: str, value: Any) -> str | None:
    if type(value) is not str or not value:
        return f"{what} must be a non-empty string (got {value!r:.60})"
    if len(value) > MAX_NAME_CHARS:
        return f"{what} is longer than {MAX_NAME_CHARS} characters"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return f"{what} {value!r:.60} is not valid UTF-8 (a lone surrogate)"
    return None


def _number(value: Any) -> float | None:
    """``value`` as a finite float, or ``None`` when it is not a number (bools are not)."""
    kind = type(value)
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is int:
        try:
            return float(value)
        except OverflowError:
            return None
    return None


def point_problem(point: Any) -> str | None:
    """Why one point cannot be stored, or ``None`` when it can."""
    if type(point) is not dict:
        return f"a point must be an object (got {point!r:.60})"
    seq = point.get("seq")
    if type(seq) is not int or not 0 <= seq <= INT64_MAX:
        return f"seq must be an int in [0, 2**63) (got {seq!r:.60})"
    problem = _text_problem("name", point.get("name"))
    if problem:
        return problem
    value = point.get("value")
    if value is not None and _number(value) is None:
        return f"value must be a finite number or null (got {value!r:.60})"
    step = point.get("step")
    if step is not None and (type(step) is not int or not INT64_MIN <= step <= INT64_MAX):
        return f"step must be null or an int in [-2**63, 2**63) (got {step!r:.60})"
    when = point.get("time")
    if when is not None and _number(when) is None:
        return f"time must be a finite number or null (got {when!r:.60})"
    return _origin_problem(point)


def _origin_problem(point: dict[str, Any]) -> str | None:
    """Why a point's ``producer``/``pseq``/``part`` cannot be read, or ``None``."""
    producer, pseq, part = point.get("producer"), point.get("pseq"), point.get("part")
    if producer is None:
        if pseq is not None or part is not None:
            return "pseq and part need a producer"
        return None
    if type(producer) is not str or not 0 < len(producer) <= MAX_PRODUCER_CHARS:
        return f"producer must be a string of 1 to {MAX_PRODUCER_CHARS} characters"
    if type(pseq) is not int or not 0 < pseq <= INT64_MAX:
        return f"pseq must be an int in [1, 2**63) (got {pseq!r:.60})"
    if part is not None and (type(part) is not int or not 0 <= part <= MAX_PART):
        return f"part must be an int in [0, 2**31) (got {part!r:.60})"
    if not producer.isascii():
        try:
            producer.encode("utf-8")
        except UnicodeEncodeError:
            return "producer is not valid UTF-8 (a lone surrogate)"
    return None


def _origin(point: dict[str, Any]) -> tuple[str | None, int, int]:
    """A checked point's ``(producer, pseq, part)``; ``(None, 0, 0)`` when it has none."""
    producer = point.get("producer")
    if producer is None:
        return None, 0, 0
    return producer, point["pseq"], point.get("part") or 0


def check_points(body: Any) -> list[PointRow]:
    """The rows of a ``POST /runs/{id}/points`` body, all valid, or a 422 naming the bad ones.

    Raises:
        ProtocolError: 400 when ``points`` is not a list; 422 with ``invalid``: a list of
            ``{"index", "seq", "error"}`` for every point that cannot be stored (none is).
    """
    points = body.get("points") if type(body) is dict else None
    if type(points) is not list:
        raise ProtocolError(HTTPStatus.BAD_REQUEST, "body must be an object with a points list")
    rows: list[PointRow] = []
    invalid: list[dict[str, Any]] = []
    append = rows.append
    for index, point in enumerate(points):
        # The common case first, cheaply: exact types, ASCII names, floats or null values.
        if type(point) is dict:
            seq, name, value = point.get("seq"), point.get("name"), point.get("value")
            step, when = point.get("step"), point.get("time")
            producer, pseq, part = point.get("producer"), point.get("pseq"), point.get("part")
            if (
                type(seq) is int
                and 0 <= seq <= INT64_MAX
                and type(name) is str
                and name
                and name.isascii()
                and len(name) <= MAX_NAME_CHARS
                and (value is None or (type(value) is float and value - value == 0.0))
                and (step is None or (type(step) is int and INT64_MIN <= step <= INT64_MAX))
                and (when is None or (type(when) is float and when - when == 0.0))
            ):
                if producer is None and pseq is None and part is None:
                    append((seq, name, value, step, when, None, 0, 0))
                    continue
                if (
                    type(producer) is str
                    and producer.isascii()
                    and 0 < len(producer) <= MAX_PRODUCER_CHARS
                    and type(pseq) is int
                    and 0 < pseq <= INT64_MAX
                    and (part is None or (type(part) is int and 0 <= part <= MAX_PART))
                ):
                    append((seq, name, value, step, when, producer, pseq, part or 0))
                    continue
        problem = point_problem(point)
        if problem is None:  # valid, but needed the slow path (an int value, a non-ASCII name)
            append(
                (point["seq"], point["name"], _number(point.get("value")), point.get("step"),
                 _number(point.get("time")), *_origin(point))
            )  # fmt: skip
            continue
        seq = point.get("seq") if type(point) is dict else None
        invalid.append({"index": index, "seq": seq if type(seq) is int else None, "error": problem})
    if invalid:
        first = invalid[0]
        msg = (
            f"{len(invalid)} of {len(points)} points cannot be stored (nothing of this batch was); "
            f"first: point {first['index']}: {first['error']}"
        )
        raise ProtocolError(HTTPStatus.UNPROCESSABLE_ENTITY, msg, invalid=invalid)
    return rows


def check_register(body: Any) -> dict[str, Any]:
    """A valid ``POST /runs`` body: ``run_id``, ``name``, ``config``, ``info``, ``heartbeat_s``,
    ``process`` (the sending process, optional: an object, or ``None``).

    Raises:
        ProtocolError: 400 naming the field that is wrong.
    """
    if type(body) is not dict:
        raise ProtocolError(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
    run_id = body.get("run_id")
    problem = _text_problem("run_id", run_id)
    if problem:
        raise ProtocolError(HTTPStatus.BAD_REQUEST, problem)
    name = body.get("name") or run_id
    problem = _text_problem("name", name)
    if problem:
        raise ProtocolError(HTTPStatus.BAD_REQUEST, problem)
    config, info = body.get("config") or {}, body.get("info") or {}
    for what, value in (("config", config), ("info", info)):
        if type(value) is not dict:
            raise ProtocolError(HTTPStatus.BAD_REQUEST, f"{what} must be a JSON object")
    process = body.get("process")
    if process is not None and type(process) is not dict:
        raise ProtocolError(HTTPStatus.BAD_REQUEST, "process must be a JSON object or null")
    heartbeat = body.get("heartbeat_s")
    if heartbeat is not None and not ((_number(heartbeat) or 0.0) > 0):
        msg = f"heartbeat_s must be a positive number (got {heartbeat!r:.60})"
        raise ProtocolError(HTTPStatus.BAD_REQUEST, msg)
    return {
        "run_id": run_id,
        "name": name,
        "config": config,
        "info": info,
        "heartbeat_s": None if heartbeat is None else float(heartbeat),
        "process": process,
    }


def check_finish(body: Any) -> tuple[str, dict[str, Any]]:
    """The ``(status, summary)`` of a ``POST /runs/{id}/finish`` body.

    Raises:
        ProtocolError: 400 when ``status`` is not a short string or ``summary`` not an object.
    """
    if type(body) is not dict:
        raise ProtocolError(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
    status = body.get("status") or "done"
    summary = body.get("summary") or {}
    if type(status) is not str or len(status) > _STATUS_CHARS:
        msg = f"status must be a string of at most {_STATUS_CHARS} characters"
        raise ProtocolError(HTTPStatus.BAD_REQUEST, msg)
    if type(summary) is not dict:
        raise ProtocolError(HTTPStatus.BAD_REQUEST, "summary must be a JSON object")
    return status, summary


# -- the sender's side: what a log call may hand to the remote sink ---------------------------
def check_point_name(name: Any) -> str:
    """``name`` if the protocol can carry it: non-empty UTF-8 text of bounded length."""
    if not isinstance(name, str) or not name or len(name) > MAX_NAME_CHARS:
        msg = f"metric name must be a non-empty str of at most {MAX_NAME_CHARS} characters (got {name!r:.80})."
        raise InvalidNameError(msg, name=name)
    if not name.isascii():
        try:
            name.encode("utf-8")
        except UnicodeEncodeError:
            msg = f"metric name {name!r:.80} is not valid UTF-8 (it holds a lone surrogate)."
            raise InvalidNameError(msg, name=name) from None
    return name


def check_point_step(name: str, step: Any) -> int | None:
    """``step`` as a 64-bit int (or ``None``); the protocol carries nothing else."""
    if step is None:
        return None
    if isinstance(step, float):
        if not math.isfinite(step) or not step.is_integer():
            msg = f"step of metric {name!r} must be a whole number (got {step!r})."
            raise InvalidPayloadError(msg, value=step)
        step = int(step)
    else:
        try:
            step = operator.index(step)
        except TypeError:
            msg = f"step of metric {name!r} must be an int or None (got {step!r:.80})."
            raise InvalidPayloadError(msg, value=step) from None
    if not INT64_MIN <= step <= INT64_MAX:
        msg = f"step of metric {name!r} must fit in 64 bits (got {step!r})."
        raise InvalidPayloadError(msg, value=step)
    return int(step)


def run_path(run_id: str, action: str) -> str:
    """The path of one run's ``action`` (``points``, ``heartbeat``, ``finish``), id quoted."""
    return f"/runs/{quote(run_id, safe='')}/{action}"


def register_body(
    run_id: str,
    name: str,
    config: Mapping[str, Any],
    info: Mapping[str, Any],
    heartbeat_s: float,
    process: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The body of ``POST /runs`` (:func:`check_register` is its collector side).

    ``process`` names the process that sends the run's points (host name, machine, pid, start
    time): a collector on the same machine sees at once that it died.
    """
    return {
        **({"process": dict(process)} if process is not None else {}),
        "run_id": run_id,
        "name": name,
        "config": dict(config),
        "info": dict(info),
        "heartbeat_s": heartbeat_s,
    }
