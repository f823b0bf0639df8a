"""What a run leaves in Redis, and who removes it (ADR 0039).

A run ``R`` owns the stream ``goggles_io:R``, one marker per producer
(``goggles_io:R:producer:<id>``, a day past its last send) and, per consumer group ``G``, the
hash of handled marks ``goggles_io:R:G:seen`` with one set per producer beside it. Three rules
keep Redis from filling up:

- a consumer trims the entries every group has handled (:func:`trim_handled`, ``XTRIM MINID``
  below the oldest entry some group has not yet read or acknowledged);
- a producer deletes its marker when it closes with every entry handled;
- whoever ends last (:func:`release_run`: no live producer, no other consumer reading, nothing
  left unhandled) deletes the run's keys.

What a crash leaves is listed and pruned on request (``telemetry broker list|prune``):
:func:`list_runs`, :func:`prune_runs`. Functions take a redis-py client (``decode_responses``
off) and never raise for a key that vanished meanwhile.
"""

from __future__ import annotations

import re
from typing import Any

import attrs

__all__ = ["BrokerRun", "list_runs", "prune_runs", "release_run", "trim_handled"]

PREFIX = "goggles_io:"
MARKER_TTL_S = 86400  # a producer's marker lives this long past its last send (ADR 0029)
_ACTIVE_MS = 2000  # a consumer this quiet (and with nothing pending) is not reading any more
_ORPHAN_MARKER = re.compile(r"goggles_io:(?P<run>.+?):producer:")
_ORPHAN_SEEN = re.compile(r"goggles_io:(?P<run>.+?):[^:]+:seen(?::|$)")


@attrs.frozen(kw_only=True)
class BrokerRun:
    """One run's footprint in Redis, as ``telemetry broker list`` shows it."""

    run: str
    entries: int  # in the stream now
    unhandled: int  # entries some group has not read or not acknowledged (no group: all)
    groups: int
    consumers_reading: int
    live_producers: int  # markers refreshed within the idle time
    keys: tuple[str, ...]

    @property
    def idle(self) -> bool:
        """No producer writes and no consumer reads: prune may remove it."""
        return not self.live_producers and not self.consumers_reading


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _next_id(entry_id: str) -> str:
    ms, _, seq = entry_id.partition("-")
    return f"{ms}-{int(seq or 0) + 1}"


def _older(a: str, b: str) -> bool:
    ams, _, aseq = a.partition("-")
    bms, _, bseq = b.partition("-")
    return (int(ams), int(aseq or 0)) < (int(bms), int(bseq or 0))


def _groups(client: Any, stream: str) -> list[dict[str, Any]]:
    import redis

    try:
        return [{_text(k): v for k, v in g.items()} for g in client.xinfo_groups(stream)]
    except redis.ResponseError:  # no such stream
        return []


def _first_unhandled(client: Any, stream: str, groups: list[dict[str, Any]]) -> str | None:
    """The oldest entry id some group still needs (``None``: no group, keep everything)."""
    oldest: str | None = None
    for group in groups:
        name = _text(group["name"])
        # The group's view is read first: another consumer may acknowledge its last pending
        # entry before XPENDING answers (no ``min`` then), which left "None" for XTRIM (an
        # error reply that ended the consumer's reading thread). The delivered id read first
        # is never past what the group still needs.
        low = client.xpending(stream, name)["min"] if int(group.get("pending") or 0) else None
        needed = _next_id(_text(group["last-delivered-id"])) if low is None else _text(low)
        if oldest is None or _older(needed, oldest):
            oldest = needed
    return oldest


def trim_handled(client: Any, stream: str, exact: bool = False) -> int:
    """Remove the entries of ``stream`` every consumer group has read and acknowledged; how
    many. A stream no group reads is left whole (a consumer may come later). Approximate
    (whole radix nodes, cheap) unless ``exact``."""
    groups = _groups(client, stream)
    minid = _first_unhandled(client, stream, groups)
    if minid is None:
        return 0
    return int(client.xtrim(stream, minid=minid, approximate=not exact))


def _active_consumers(
    client: Any,
    stream: str,
    groups: list[dict[str, Any]],
    besides: str | None,
    active_ms: int = _ACTIVE_MS,
    pending_counts: bool = True,
) -> int:
    """Consumers (but ``besides``) that read within ``active_ms``, and with ``pending_counts``
    those holding pending entries however long silent (the automatic release waits for them;
    prune does not: a killed consumer keeps its pending entries forever)."""
    import redis

    active = 0
    for group in groups:
        try:
            found = client.xinfo_consumers(stream, _text(group["name"]))
        except redis.ResponseError:
            continue
        for consumer in found:
            info = {_text(k): v for k, v in consumer.items()}
            if besides is not None and _text(info["name"]) == besides:
                continue
            pending = pending_counts and int(info.get("pending") or 0)
            if pending or int(info.get("idle") or 0) < active_ms:
                active += 1
    return active


def _scan(client: Any, pattern: str) -> list[str]:
    return sorted(_text(k) for k in client.scan_iter(match=pattern, count=1000))


def _owned(keys: list[str], stream: str, streams: set[str]) -> list[str]:
    """``keys`` under ``stream:`` that belong to no longer stream (run names may hold ``:``)."""
    inner = [s for s in streams if s != stream and s.startswith(stream + ":")]
    return [k for k in keys if not any(k == s or k.startswith(s + ":") for s in inner)]


def _live_markers(client: Any, markers: list[str], idle_s: float) -> int:
    """Producer markers refreshed within ``idle_s`` (each send sets its TTL back to a day)."""
    live = 0
    for key in markers:
        ttl = int(client.ttl(key))
        if ttl == -1 or (ttl >= 0 and MARKER_TTL_S - ttl < idle_s):  # -1: no TTL, not ours
            live += 1
    return live


def _footprint(
    client: Any, stream: str, streams: set[str], keys: list[str], idle_s: float
) -> BrokerRun:
    groups = _groups(client, stream)
    entries = int(client.xlen(stream)) if stream in streams else 0
    unhandled = entries
    if groups:  # Redis 7 counts what a group has not read ("lag"; None: unknown)
        needs = [
            entries if g.get("lag") is None else int(g["lag"]) + int(g.get("pending") or 0)
            for g in groups
        ]
        unhandled = min(max(needs), entries)
    markers = [k for k in keys if k.startswith(stream + ":producer:")]
    return BrokerRun(
        run=stream[len(PREFIX) :],
        entries=entries,
        unhandled=unhandled,
        groups=len(groups),
        consumers_reading=_active_consumers(
            client, stream, groups, None, int(idle_s * 1000), pending_counts=False
        ),
        live_producers=_live_markers(client, markers, idle_s),
        keys=tuple(keys),
    )


def list_runs(client: Any, idle_s: float = 600.0) -> list[BrokerRun]:
    """Every run with a key in this Redis (a stream, or what a crash left without one); a
    producer or consumer counts as live when it sent or read within ``idle_s``."""
    everything = _scan(client, PREFIX + "*")
    streams = {k for k in everything if _text(client.type(k)) == "stream"}
    by_stream: dict[str, list[str]] = {s: [s] for s in streams}
    for key in everything:
        if key in streams:
            continue
        owners = [s for s in streams if key.startswith(s + ":")]
        if owners:
            by_stream[max(owners, key=len)].append(key)
            continue
        found = _ORPHAN_MARKER.match(key) or _ORPHAN_SEEN.match(key)
        owner = PREFIX + found["run"] if found else key
        by_stream.setdefault(owner, []).append(key)
    return [_footprint(client, s, streams, sorted(k), idle_s) for s, k in sorted(by_stream.items())]


def prune_runs(
    client: Any, runs: list[str] | None = None, dry_run: bool = False, idle_s: float = 600.0
) -> list[BrokerRun]:
    """Delete the keys of every idle run (of ``runs`` only, when given); the runs removed.

    Idle: no producer sent and no consumer read within ``idle_s`` seconds. Entries no group
    handled go with it: that is what pruning is for.
    """
    removed = []
    for found in list_runs(client, idle_s):
        if runs is not None and found.run not in runs:
            continue
        if not found.idle:
            continue
        if not dry_run:
            client.delete(*found.keys)
        removed.append(found)
    return removed


def release_run(client: Any, stream: str, me: str | None = None) -> bool:
    """At a producer's or consumer's end: delete the run's keys when nobody else is left
    (``me``: this consumer's name, not counted) and every group handled every entry. A stream
    nobody ever read is kept. ``True`` when the keys were deleted."""
    groups = _groups(client, stream)
    if not groups:
        return False
    trim_handled(client, stream, exact=True)
    if int(client.xlen(stream)) or _active_consumers(client, stream, groups, me):
        return False
    everything = _scan(client, stream + ":*")
    streams = {stream} | {k for k in everything if _text(client.type(k)) == "stream"}
    keys = _owned(everything, stream, streams)
    if any(k.startswith(stream + ":producer:") for k in keys):
        return False  # a producer still writes (or died within the day): it cleans up
    client.delete(stream, *keys)
    return True
