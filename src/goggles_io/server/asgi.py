"""The collector as one ASGI application: the remote protocol under ``/runs``, the UI elsewhere.

Bodies are read here chunk by chunk so the limits of ``docs/remote-protocol.md`` hold on any
ASGI server: a declared ``Content-Length`` over the limit is refused before reading (and the
body read away, up to a bound, so the client sees the 413); a chunked body is counted as it
arrives; a body that stops arriving gets 408 after ``read_timeout_s``. The API key is checked
before any body is read. Validation and storage run on a worker thread (SQLite blocks).
"""

from __future__ import annotations

import asyncio
import time
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, unquote

from goggles_io._event.remote_protocol import (
    MAX_BODY_BYTES,
    ProtocolError,
    dump_json,
    parse_content_length,
    parse_json,
)
from goggles_io.server.ingest import Ingest

__all__ = ["ALLOW", "CollectorApp", "send_json"]

ALLOW = "GET, POST"
_NOSNIFF = (b"x-content-type-options", b"nosniff")
_DRAIN_LIMIT = 4 * MAX_BODY_BYTES  # read away an oversize body up to this, so the 413 is seen


async def send_json(
    send: Any, status: int, reply: Any, *, close: bool = False, extra: list[Any] | None = None
) -> None:
    """Answer with a strict-JSON body (start and body in one loop turn: one write)."""
    data = dump_json(reply)
    headers = [(b"content-type", b"application/json"), (b"content-length", b"%d" % len(data))]
    if close:
        headers.append((b"connection", b"close"))
    headers += extra or []
    await send({"type": "http.response.start", "status": int(status), "headers": headers})
    await send({"type": "http.response.body", "body": data})


def _header_values(scope: dict[str, Any], name: bytes) -> list[str]:
    return [v.decode("latin-1") for k, v in scope["headers"] if k.lower() == name]


def _nosniff(send: Any) -> Any:
    """``send`` that adds ``X-Content-Type-Options: nosniff`` to every response: a browser
    takes each body as the type it is labelled, never as HTML it guessed."""

    async def sending(message: dict[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = [h for h in message.get("headers", []) if h[0].lower() != _NOSNIFF[0]]
            message = {**message, "headers": [*headers, _NOSNIFF]}
        await send(message)

    return sending


class CollectorApp:
    """ASGI callable: ingest endpoints and, for every other path, the dashboard app."""

    def __init__(self, ingest: Ingest, ui: Any) -> None:
        """``ui``: the dashboard's ASGI app, for every path outside ``/runs``."""
        self.ingest = ingest
        self.ui = ui

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] != "http":
            return
        send = _nosniff(send)
        ingest = self.ingest
        ingest.requests_received += 1
        method = scope["method"]
        if method not in ("GET", "POST"):
            msg = f"method {method} is not allowed; the collector answers {ALLOW}"
            allow = [(b"allow", ALLOW.encode())]
            await send_json(send, 405, {"error": msg}, close=True, extra=allow)
            return
        try:
            ingest.authorise_scope(scope)
        except ProtocolError as exc:  # never read a body for a stranger
            await send_json(send, exc.status, exc.body, close=True)
            return
        path = scope["path"]
        if path != "/runs" and not path.startswith("/runs/"):
            await self.ui(scope, receive, send)
            return
        await self._protocol(scope, receive, send, method, path)

    async def _protocol(
        self, scope: dict[str, Any], receive: Any, send: Any, method: str, path: str
    ) -> None:
        ingest = self.ingest
        close = False
        try:
            try:
                raw = await asyncio.wait_for(self._read_body(scope, receive), ingest.read_timeout_s)
            except ProtocolError:
                close = True
                raise
            except asyncio.TimeoutError:
                close = True
                msg = f"body not received within {ingest.read_timeout_s} s"
                raise ProtocolError(HTTPStatus.REQUEST_TIMEOUT, msg) from None
            await self._wait_delay()
            parts = [unquote(p) for p in path.strip("/").split("/") if p]
            query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
            status, reply = self._handle(method, parts, raw, query)
        except ProtocolError as exc:
            status, reply = exc.status, exc.body
        await send_json(send, status, reply, close=close)

    def _handle(
        self, method: str, parts: list[str], raw: bytes, query: dict[str, list[str]]
    ) -> tuple[HTTPStatus, Any]:
        return self.ingest.route(method, parts, parse_json(raw), query)

    async def _wait_delay(self) -> None:
        """Sit out ``response_delay_s`` (tests), re-reading it so lowering it releases us."""
        arrived = time.monotonic()
        while (left := self.ingest.response_delay_s - (time.monotonic() - arrived)) > 0:
            await asyncio.sleep(min(left, 0.02))

    async def _read_body(self, scope: dict[str, Any], receive: Any) -> bytes:
        limit = self.ingest.max_body_bytes
        encoding = _header_values(scope, b"transfer-encoding")
        lengths = _header_values(scope, b"content-length")
        if encoding:
            if lengths or [e.strip().lower() for e in encoding] != ["chunked"]:
                msg = "only Transfer-Encoding: chunked is accepted, without Content-Length"
                raise ProtocolError(HTTPStatus.BAD_REQUEST, msg)
            declared = None
        else:
            try:
                declared = parse_content_length(lengths, limit)
            except ProtocolError as exc:
                if exc.status is HTTPStatus.REQUEST_ENTITY_TOO_LARGE:
                    await self._discard(receive, int(lengths[0].strip()))
                raise
        parts: list[bytes] = []
        total = 0
        more = True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                raise ProtocolError(HTTPStatus.BAD_REQUEST, "client went away mid-body")
            chunk = message.get("body", b"")
            more = message.get("more_body", False)
            total += len(chunk)
            if total > limit:
                if more:
                    await self._discard(receive, _DRAIN_LIMIT)
                msg = f"chunked body over the limit of {limit} bytes; send smaller batches"
                raise ProtocolError(HTTPStatus.REQUEST_ENTITY_TOO_LARGE, msg, limit=limit)
            parts.append(chunk)
        raw = b"".join(parts)
        if declared is not None and len(raw) != declared:
            raise ProtocolError(HTTPStatus.BAD_REQUEST, "body shorter than Content-Length")
        return raw

    @staticmethod
    async def _discard(receive: Any, left: int) -> None:
        """Read an oversize body away (up to a bound) so the client gets to see the 413."""
        if left > _DRAIN_LIMIT:
            return
        while left > 0:
            message = await receive()
            if message["type"] != "http.request":
                return
            left -= len(message.get("body", b""))
            if not message.get("more_body", False):
                return
