"""Read a run's stream through a consumer group and hand each batch to local handlers.

Delivery is at-least-once (an entry is acknowledged only after its handlers ran) with
de-duplication by ``(producer, seq)``: a Lua script records what was handled and acknowledges
in one step, so an entry another consumer already handled is skipped. Entries left pending by
a dead consumer are taken over with ``XAUTOCLAIM`` once idle for ``claim_idle_ms``. A malformed
or hostile entry is acknowledged, skipped and counted. One thread per consumer; handlers run on
it (a synchronous local bus), so "handled" means the handler returned.

Through a Redis restart (ADR 0029): the consumer also remembers, per producer, what it handled,
so an entry whose record-and-ack step failed on the dead connection is recorded again on the new
one before anything else is read, and a Redis that came back empty learns the marks again (the
producers send their unconfirmed entries again; the marks make those repeats). It then reads its
own pending entries (``XREADGROUP ... 0``) before new ones, so a producer's order is kept and
nothing waits for the claim timeout.

Housekeeping (ADR 0039): every second the entries every group handled are trimmed; at
``finish`` the consumer leaves its group and, when nobody else is left, deletes the run's keys.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from typing import Any

from goggles_io._broker.entries import decode_entry_columns
from goggles_io._broker.handing import hand_read
from goggles_io._broker.housekeeping import release_run, trim_handled
from goggles_io._broker.settings import BrokerSettings, check_url, seen_key, stream_name
from goggles_io._bus.bus import EventBus
from goggles_io._bus.transport import FinishReport
from goggles_io._event.codec import Decoder
from goggles_io._event.columns import BatchColumns
from goggles_io._util.report import ReportOnce, report
from goggles_io.exceptions import FrameError
from goggles_io.handlers.base import Handler

__all__ = ["BrokerConsumer"]

# KEYS: seen-hash, stream, then the pending-set of each producer of the read.
# ARGV: group, n producers, their ids, then (producer index, seq, entry id) per handled entry.
# Advances each producer's contiguous high-water mark (or parks an out-of-order seq in its set),
# then XACKs the entries, atomically: "handled" and "acknowledged" can never disagree. One call
# per read, so a backlog of small entries costs a round trip per read, not per entry.
_MARK_AND_ACK = """
local n = tonumber(ARGV[2])
local hwm = {}
for j = 1, n do hwm[j] = tonumber(redis.call('HGET', KEYS[1], ARGV[2 + j]) or '0') end
local ids = {}
for i = 3 + n, #ARGV, 3 do
  local j = tonumber(ARGV[i])
  local s = tonumber(ARGV[i + 1])
  if s == hwm[j] + 1 then
    hwm[j] = s
    while redis.call('SREM', KEYS[2 + j], tostring(hwm[j] + 1)) == 1 do hwm[j] = hwm[j] + 1 end
  elseif s > hwm[j] then
    redis.call('SADD', KEYS[2 + j], ARGV[i + 1])
  end
  ids[#ids + 1] = ARGV[i + 2]
end
for j = 1, n do redis.call('HSET', KEYS[1], ARGV[2 + j], hwm[j]) end
redis.call('XACK', KEYS[2], ARGV[1], unpack(ids))
return hwm
"""
# KEYS: seen-hash, pending-set of this producer; ARGV: producer, known mark, parked seqs...
# Puts back what this consumer knows it handled (a Redis that restarted empty forgot it).
_RESTORE = """
local hwm = tonumber(redis.call('HGET', KEYS[1], ARGV[1]) or '0')
local known = tonumber(ARGV[2])
if known > hwm then hwm = known end
for i = 3, #ARGV do
  if tonumber(ARGV[i]) > hwm then redis.call('SADD', KEYS[2], ARGV[i]) end
end
while redis.call('SREM', KEYS[2], tostring(hwm + 1)) == 1 do hwm = hwm + 1 end
redis.call('HSET', KEYS[1], ARGV[1], hwm)
return hwm
"""
_READ_COUNT = 256  # entries one read asks for at most (a backlog of small entries)...
_READ_EVENTS = 2048  # ... and about this many events (an entry holds up to 1,024; see _count)
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
        self.bus.unrouted.enabled = False  # the stream holds every scope; few are wanted here
        self.handled = 0  # entries whose handlers ran
        self.events = 0
        self.duplicates = 0  # entries skipped: already handled by some consumer
        self.malformed = 0  # entries skipped: not a batch of ours
        self.reclaimed = 0  # entries taken over from a dead consumer
        self._seen = seen_key(self.stream, self.group)
        self._marks = _HandledMarks()  # what this consumer knows was handled, per producer
        self._unacked: list[bytes] = []  # handled, recorded locally; the XACK failed
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._report_once = ReportOnce()
        self._per_entry = 1024.0  # events an entry held lately (at most 1,024): sizes a read

    def _count(self) -> int:
        """Entries to ask for: about :data:`_READ_EVENTS` events. One read's rows are all built
        before its handlers run, so a read of 256 full entries held 256k events at once, and
        building their events took 5 us each instead of 0.3 (the collector rescanning them)."""
        return max(1, min(_READ_COUNT, int(_READ_EVENTS / max(self._per_entry, 1.0))))

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
        if thread is not None:  # it read: leave the group, maybe the run's keys with it
            thread.join(5.0)
            self._leave()
        result = self.bus.finish(timeout_s)
        if self.malformed or self.duplicates:
            report(
                f"broker consumer {self.name}: {self.handled} entries handled, "
                f"{self.duplicates} duplicates skipped, {self.malformed} malformed skipped"
            )
        return result

    def _leave(self) -> None:
        """Leave the group (when nothing is pending here) and, if this run has nobody else
        left and nothing unhandled, delete its keys (ADR 0039); Redis away: leave it be."""
        import redis

        try:
            client = self._connect(create_group=False)
            try:
                if not int(client.xpending(self.stream, self.group)["pending"] or 0):
                    client.xgroup_delconsumer(self.stream, self.group, self.name)
                release_run(client, self.stream, self.name)
            finally:
                client.close()
        except (redis.RedisError, OSError):
            pass

    # -- the reading thread -----------------------------------------------------------------
    def _run(self) -> None:
        import redis
        from redis.exceptions import NoScriptError

        decoder = Decoder()
        backoff = 0.05
        client: Any = None
        next_claim = 0.0
        while not self._stop.is_set():
            try:
                if client is None:
                    client = self._connect()
                    # Loaded here, run by its sha in each read's pipeline: redis-py's own
                    # script objects ask SCRIPT EXISTS first, a round trip a read (ADR 0086).
                    mark = client.script_load(_MARK_AND_ACK)
                    self._catch_up(client, mark, decoder)
                if time.monotonic() >= next_claim:
                    next_claim = time.monotonic() + _CLAIM_EVERY_S
                    self._process(client, mark, decoder, self._claim(client))
                    trim_handled(client, self.stream)  # what every group handled goes
                reply = client.xreadgroup(
                    self.group, self.name, {self.stream: ">"}, count=self._count(), block=_BLOCK_MS
                )
                for _, entries in reply or []:
                    self._process(client, mark, decoder, entries)
                backoff = 0.05
            except (redis.ConnectionError, redis.TimeoutError, OSError, redis.ResponseError) as exc:
                forgot = isinstance(exc, NoScriptError)
                if (
                    isinstance(exc, redis.ResponseError)
                    and not forgot
                    and "NOGROUP" not in str(exc)
                ):
                    raise  # a refusal we do not expect: the thread's report says what it was
                # NOGROUP: a Redis that restarted without its data, reached on a fresh socket;
                # NOSCRIPT: one whose scripts were flushed. A new connection loads the script,
                # puts back our marks and acknowledges what the failed step left (_catch_up).
                what = "forgot its scripts" if forgot else "unreachable"
                self._report_once(what, f"broker consumer: Redis {what} ({exc}); retrying")
                with contextlib.suppress(Exception):
                    if client is not None:
                        client.close()
                client = None
                self._stop.wait(backoff)
                backoff = min(backoff * 2, 1.0)
        with contextlib.suppress(Exception):
            if client is not None:
                client.close()

    def _connect(self, create_group: bool = True) -> Any:
        """A client without redis-py's own retries: a broken connection must reach ``_run``."""
        import redis
        from redis.backoff import NoBackoff
        from redis.retry import Retry

        client = redis.Redis.from_url(
            self.url, socket_connect_timeout=2.0, socket_timeout=10.0, retry=Retry(NoBackoff(), 0)
        )
        if create_group:
            self._ensure_group(client)
        return client

    def _catch_up(self, client: Any, mark: str, decoder: Decoder) -> None:
        """On a new connection, before reading on: put back our marks, finish our acks, and
        handle what was delivered to us and never acknowledged, in stream order."""
        restore = client.register_script(_RESTORE)
        for producer, known, parked in self._marks.items():
            hwm = restore(
                keys=[self._seen, f"{self._seen}:{producer}"], args=[producer, known, *parked]
            )
            self._marks.learn(producer, int(hwm))
        if self._unacked:
            client.xack(self.stream, self.group, *self._unacked)
            self._unacked.clear()
        start = "0"
        while not self._stop.is_set():
            reply = client.xreadgroup(
                self.group, self.name, {self.stream: start}, count=self._count()
            )
            entries = [e for _, batch in reply or [] for e in batch]
            if not entries:
                break
            self._process(client, mark, decoder, entries)
            start = entries[-1][0]

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
        self, client: Any, mark: str, decoder: Decoder, entries: list[tuple[bytes, Any]]
    ) -> None:
        """Handle a read's entries in stream order: two round trips for the lot (check; then,
        after the handlers ran, record and acknowledge), so a backlog of small entries flows."""
        import redis
        from redis.exceptions import NoScriptError

        skip: list[bytes] = []  # acknowledged without handling: gone, malformed, repeats
        fresh: list[tuple[bytes, str, int, BatchColumns]] = []
        taken: set[tuple[str, int]] = set()
        for entry_id, fields in entries:
            if not fields:  # an entry of our pending list that the stream no longer holds
                skip.append(entry_id)
                continue
            try:
                producer, seq, columns = decode_entry_columns(decoder, fields)
            except FrameError as exc:
                self.malformed += 1
                self._report_once("bad", f"broker consumer: skipping a malformed entry ({exc})")
                skip.append(entry_id)
                continue
            if self._marks.has(producer, seq) or (producer, seq) in taken:
                self.duplicates += 1
                skip.append(entry_id)
                continue
            taken.add((producer, seq))
            fresh.append((entry_id, producer, seq, columns))
        producers = sorted({producer for _, producer, _, _ in fresh})
        if fresh:  # another consumer of the group may have handled some
            pipe = client.pipeline(transaction=False)
            for producer in producers:
                seqs = [seq for _, p, seq, _ in fresh if p == producer]
                pipe.hget(self._seen, producer).smismember(f"{self._seen}:{producer}", seqs)
            found = iter(pipe.execute())
            done: set[tuple[str, int]] = set()
            for producer in producers:
                hwm, parked = int(next(found) or 0), next(found)
                seqs = [seq for _, p, seq, _ in fresh if p == producer]
                done |= {(producer, s) for s, k in zip(seqs, parked, strict=True) if k or s <= hwm}
            if done:
                self.duplicates += len(done)
                skip += [e[0] for e in fresh if (e[1], e[2]) in done]
                fresh = [e for e in fresh if (e[1], e[2]) not in done]
                producers = sorted({producer for _, producer, _, _ in fresh})
        if fresh:  # one call per handler for the read, with no row between (ADR 0086)
            for at in reversed(hand_read(self.bus, [e[3] for e in fresh])):
                self.malformed += 1
                self._report_once("bad", "broker consumer: skipping an entry that made no events")
                skip.append(fresh.pop(at)[0])
                producers = sorted({producer for _, producer, _, _ in fresh})
        if fresh:
            self.handled += len(fresh)
            events = sum(e[3].n for e in fresh)
            self.events += events
            self._per_entry = events / len(fresh)
            for _, producer, seq, _ in fresh:
                self._marks.add(producer, seq)
        pipe = client.pipeline(transaction=False)
        if fresh:
            index = {producer: j for j, producer in enumerate(producers, start=1)}
            args: list[Any] = [self.group, len(producers), *producers]
            for entry_id, producer, seq, _ in fresh:
                args += [index[producer], seq, entry_id]
            keys = [self._seen, self.stream, *(f"{self._seen}:{p}" for p in producers)]
            pipe.evalsha(mark, len(keys), *keys, *args)
        if skip:
            pipe.xack(self.stream, self.group, *skip)
        try:
            replies = pipe.execute() if fresh or skip else []
        except (redis.ConnectionError, redis.TimeoutError, OSError, NoScriptError):
            self._unacked += [e[0] for e in fresh] + skip  # acknowledged by the next _catch_up
            raise
        if fresh:
            for producer, hwm in zip(producers, replies[0], strict=True):
                self._marks.learn(producer, int(hwm))


class _HandledMarks:
    """Per producer: the contiguous high-water mark of handled seqs, and those handled past it."""

    def __init__(self) -> None:
        self._hwm: dict[str, int] = {}
        self._parked: dict[str, set[int]] = {}

    def has(self, producer: str, seq: int) -> bool:
        """Whether ``seq`` of ``producer`` is known handled."""
        return seq <= self._hwm.get(producer, 0) or seq in self._parked.get(producer, ())

    def add(self, producer: str, seq: int) -> None:
        """This consumer handled ``seq``."""
        self._parked.setdefault(producer, set()).add(seq)
        self.learn(producer, self._hwm.get(producer, 0))

    def learn(self, producer: str, hwm: int) -> None:
        """The group's mark for ``producer`` is at least ``hwm``."""
        hwm = max(hwm, self._hwm.get(producer, 0))
        parked = self._parked.get(producer, set())
        while hwm + 1 in parked:
            hwm += 1
        self._hwm[producer] = hwm
        if parked:
            self._parked[producer] = {s for s in parked if s > hwm}

    def items(self) -> list[tuple[str, int, list[int]]]:
        """``(producer, mark, parked seqs)`` for each producer seen."""
        return [(p, h, sorted(self._parked.get(p, ()))) for p, h in self._hwm.items()]
