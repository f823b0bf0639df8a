"""``Ingest``: who may talk to the collector, and which store call each request of the protocol is.

The ASGI app (:mod:`goggles_io.server.asgi`) reads bodies within the limits kept here and hands
them over; nothing in this module knows HTTP framing, and nothing in the store knows keys.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable
from http import HTTPStatus
from http.cookies import SimpleCookie
from typing import Any
from urllib.parse import parse_qs

from goggles_io._event.remote_protocol import MAX_BODY_BYTES, ProtocolError
from goggles_io.server.store import RunStore

__all__ = ["KEY_COOKIE", "Ingest"]

KEY_COOKIE = "telemetry_key"  # the dashboard keeps the API key in this HttpOnly cookie


class Ingest:
    """The remote protocol over a :class:`RunStore`, with the request limits the app enforces.

    ``response_delay_s`` is re-read while a request waits (tests lower it to release requests
    in flight); ``requests_received`` counts requests before any delay.
    """

    def __init__(
        self,
        store: RunStore,
        api_key: str | None = None,
        read_timeout_s: float = 30.0,
        max_body_bytes: int = MAX_BODY_BYTES,
        response_delay_s: float = 0.0,
    ) -> None:
        self.store = store
        self.api_key = api_key or None
        self.read_timeout_s = read_timeout_s
        self.max_body_bytes = max_body_bytes
        self.response_delay_s = response_delay_s
        self.requests_received = 0

    def authorise(self, header: str, cookie: str = "") -> None:
        """Accept ``Authorization: Bearer <key>`` or the dashboard's cookie; else 401."""
        if self.api_key is None:
            return
        scheme, _, token = header.partition(" ")
        key = self.api_key.encode()
        if scheme == "Bearer" and hmac.compare_digest(token.encode(), key):
            return
        if cookie:
            jar: SimpleCookie = SimpleCookie()
            try:
                jar.load(cookie)
            except Exception:  # a garbled Cookie header is just no key
                jar = SimpleCookie()
            morsel = jar.get(KEY_COOKIE)
            if morsel is not None and hmac.compare_digest(morsel.value.encode(), key):
                return
        raise ProtocolError(HTTPStatus.UNAUTHORIZED, "missing or invalid API key")

    def authorise_scope(self, scope: dict[str, Any]) -> None:
        """An ASGI request: Bearer header, the dashboard's cookie, or (the page only) ``/?key=``."""
        if self.api_key is None:
            return
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]}
        if scope["path"] == "/" and scope["method"] == "GET":
            given = parse_qs(scope.get("query_string", b"").decode("latin-1")).get("key", [""])
            if hmac.compare_digest(given[0].encode(), self.api_key.encode()):
                return
        self.authorise(headers.get("authorization", ""), headers.get("cookie", ""))

    def route(
        self, method: str, parts: list[str], body: Any, query: dict[str, list[str]]
    ) -> tuple[HTTPStatus, Any]:
        """Answer one request of ``docs/remote-protocol.md`` (path split into ``parts``)."""
        store = self.store
        if method == "GET" and parts == ["runs"]:
            return HTTPStatus.OK, {"runs": store.runs()}
        if method == "GET" and len(parts) == 3 and parts[0] == "runs" and parts[2] == "points":
            store.require_run(parts[1])
            name = query.get("name", [None])[0]
            return HTTPStatus.OK, {"points": store.points(parts[1], name)}
        if method == "POST" and parts == ["runs"]:
            return HTTPStatus.OK, store.register(body)
        if method == "POST" and len(parts) == 3 and parts[0] == "runs":
            actions: dict[str, Callable[[str, dict[str, Any]], dict[str, Any]]] = {
                "points": store.add_points,
                "heartbeat": store.heartbeat,
                "finish": store.finish,
            }
            if parts[2] in actions:
                if type(body) is not dict:
                    raise ProtocolError(HTTPStatus.BAD_REQUEST, "body must be a JSON object")
                store.require_run(parts[1])
                return HTTPStatus.OK, actions[parts[2]](parts[1], body)
        raise ProtocolError(HTTPStatus.NOT_FOUND, f"no route for {method} {'/'.join(parts)!r}")
