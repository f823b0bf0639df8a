"""Read a run's stream through a consumer group and hand each batch to local handlers.

Delivery is at-least-once (an entry is acknowledged only after its handlers ran) with
de-duplication by ``(producer, seq)``: a Lua script records what was handled and acknowledges
in one step, so an entry another consumer already handled is skipped. Entries left pending by
a dead consumer are taken over with ``XAUTOCLAIM`` once idle for ``claim_idle_ms``. A malformed
or hostile entry is acknowledged, skipped and counted. One thread per consumer; handlers run on
it (a synchronous local bus), so "handled" means the handler returned.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from typing import Any

from goggles_io._broker.entries import decode_entry
from goggles_io._broker.settings import BrokerSettings, check_url, stream_name
from goggles_io._bus.bus import EventBus
from goggles_io._bus.transport import FinishReport
from goggles_io._event.codec import Decoder
from goggles_io._util.report import ReportOnce, report
from goggles_io.exceptions import FrameError
from goggles_io.handlers.base import Handler

__all__ = ["BrokerConsumer"]

# KEYS: seen-hash, pending-set of this producer, stream; ARGV: producer, seq, group, entry id.
# Advances the producer's contiguous high-water mark (or parks an out-of-order seq in the set),
# then XACKs, atomically: "handled" and "acknowledged" can never disagree.
_MARK_AND_ACK = """
local hwm = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local s = tonumber(ARGV[2])
if s > hwm then
  if s == hwm + 1 then
    hwm = s
    while redis.call('SREM', KEYS[2], tostring(hwm + 1)) == 1 do hwm = hwm + 1 end
    redis.call('HSET', KEYS[1], ARGV[1], hwm)
  else
    redis.call('SADD', KEYS[2], ARGV[2])
  end
end
redis.call('XACK', KEYS[3], ARGV[3], ARGV[4])
return hwm
"""
_READ_COUNT = 256
_BLOCK_MS = 200
_CLAIM_EVERY_S = 1.0


class BrokerConsumer:
    """Feed handlers attached here from the run's stream, in this process."""

    def __init__(self, url: str, settings: BrokerSettings, name: str | None = None) -> None:
        self.url = check_url(url)
        self.stream = stream_name(settings.run)
        self.group = settings.group
        self.claim_idle_ms = settings.claim_idle_ms
        self.name = name or f"{socket.gethostname()}:{os.getpid()}"
        self.bus = EventBus(async_mode=False)
        self.handled = 0  # entries whose handlers ran
        self.events = 0
        self.duplicates = 0  # entries skipped: already handled by some consumer
        self.malformed = 0  # entries skipped: not a batch of ours
        self.reclaimed = 0  # entries taken over from a dead consumer
        self._seen = f"{self.stream}:{self.group}:seen"
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._report_once = ReportOnce()

    def attach(self, handler: Handler, scopes: list[str]) -> None:
        """Run ``handler`` here on what arrives for ``scopes``; starts reading on first use."""
        self.bus.attach(handler, scopes)
        if self._thread is None:
            self._stop.clear()
            self._thread = threading.Thread(
                target=self._run, name="goggles_io:broker-consumer", daemon=True
            )
            self._thread.start()

    def finish(self, timeout_s: float | None = None, idle_s: float = 0.5) -> FinishReport:
        """Handle what the stream holds until it has been quiet ``idle_s``, then close handlers."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        last = (-1, -1)
        quiet_since = time.monotonic()
        while self._thread is not None and (deadline is None or time.monotonic() < deadline):
            now = (self.handled + self.duplicates + self.malformed, self.reclaimed)
            if now != last:
                last, quiet_since = now, time.monotonic()
            elif time.monotonic() - quiet_since >= idle_s:
                break
            time.sleep(0.02)
        self._stop.set()
        thread, self._thread = self._thread, None
        if thread is not None:
            thread.join(5.0)
        result = self.bus.finish(timeout_s)
        if self.malformed or self.duplicates:
            report(
                f"broker consumer {self.name}: {self.handled} entries handled, "
                f"{self.duplicates} duplicates skipped, {self.malformed} malformed skipped"
            )
        return result

    # -- the reading thread -----------------------------------------------------------------
    def _run(self) -> None:
        import redis

        decoder = Decoder()
        backoff = 0.05
        client: Any = None
        next_claim = 0.0
        while not self._stop.is_set():
            try:
                if client is None:
                    client = redis.Redis.from_url(self.url, socket_connect_timeout=2.0)
                    self._ensure_group(client)
                    mark = client.register_script(_MARK_AND_ACK)
                if time.monotonic() >= next_claim:
                    next_claim = time.monotonic() + _CLAIM_EVERY_S
                    claimed = self._claim(client)
                    for entry_id, fields in claimed:
                        self._process(client, mark, decoder, entry_id, fields)
                reply = client.xreadgroup(
                    self.group, self.name, {self.stream: ">"}, count=_READ_COUNT, block=_BLOCK_MS
                )
                for _, entries in reply or []:
                    for entry_id, fields in entries:
                        self._process(client, mark, decoder, entry_id, fields)
                backoff = 0.05
            except (redis.ConnectionError, redis.TimeoutError, OSError) as exc:
                self._report_once("down", f"broker consumer: Redis unreachable ({exc}); retrying")
                with contextlib.suppress(Exception):
                    if client is not None:
                        client.close()
                client = None
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 2.0)
        with contextlib.suppress(Exception):
            if client is not None:
                client.close()

    def _ensure_group(self, client: Any) -> None:
        import redis

        try:
            client.xgroup_create(self.stream, self.group, id="0", mkstream=True)
        except redis.ResponseError as exc:
            if "BUSYGROUP" not in str(exc):
                raise

    def _claim(self, client: Any) -> list[tuple[bytes, dict[bytes, bytes]]]:
        """Entries another consumer left pending for ``claim_idle_ms``: ours now."""
        found: list[tuple[bytes, dict[bytes, bytes]]] = []
        start = "0-0"
        while True:
            reply = client.xautoclaim(
                self.stream, self.group, self.name, self.claim_idle_ms, start_id=start, count=100
            )
            start, entries = reply[0], reply[1]
            found += [(e_id, fields) for e_id, fields in entries if fields is not None]
            if start in (b"0-0", "0-0") or not entries:
                break
        self.reclaimed += len(found)
        return found

    def _process(
        self, client: Any, mark: Any, decoder: Decoder, entry_id: bytes, fields: Any
    ) -> None:
        try:
            producer, seq, events = decode_entry(decoder, fields or {})
        except FrameError as exc:
            self.malformed += 1
            self._report_once("bad", f"broker consumer: skipping a malformed entry ({exc})")
            client.xack(self.stream, self.group, entry_id)
            return
        pending_key = f"{self._seen}:{producer}"
        hwm, parked = (
            client.pipeline().hget(self._seen, producer).sismember(pending_key, seq).execute()
        )
        if (hwm is not None and seq <= int(hwm)) or parked:
            self.duplicates += 1
            client.xack(self.stream, self.group, entry_id)
            return
        self.bus.emit_many(events)
        self.handled += 1
        self.events += len(events)
        mark(
            keys=[self._seen, pending_key, self.stream], args=[producer, seq, self.group, entry_id]
        )
