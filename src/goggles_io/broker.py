"""What the broker left in a Redis, listed and pruned (``telemetry broker list|prune``).

Runs tidy up after themselves (ADR 0039); a run whose producer or consumer died keeps its keys
(a producer's marker for a day). These functions show and remove what is left. The URL may hold
a password: errors name only scheme, host, port and database.
"""

from __future__ import annotations

from collections.abc import Sequence

from goggles_io._broker.housekeeping import BrokerRun, list_runs, prune_runs
from goggles_io._broker.preflight import check
from goggles_io._broker.settings import check_url
from goggles_io._broker.stream import redis_client
from goggles_io._util.secret import Secret
from goggles_io.exceptions import ConfigurationError

__all__ = ["BrokerRun", "broker_runs", "prune_broker"]


def _client(url: str) -> object:
    problem = check(check_url(url))
    if problem is not None:
        raise ConfigurationError(problem, key="GOGGLES_BROKER", value="<redacted>")
    return redis_client(Secret(url))


def broker_runs(url: str, idle_s: float = 600.0) -> list[BrokerRun]:
    """Every run with keys in the Redis at ``url``, by run name; producers and consumers that
    sent or read within ``idle_s`` seconds count as live.

    Raises:
        ConfigurationError: not a Redis URL, no ``redis`` package, or Redis does not answer.
    """
    client = _client(url)
    try:
        return list_runs(client, idle_s)
    finally:
        client.close()  # type: ignore[attr-defined]


def prune_broker(
    url: str, runs: Sequence[str] | None = None, dry_run: bool = False, idle_s: float = 600.0
) -> list[BrokerRun]:
    """Delete every idle run's keys (of ``runs`` only, when given): no producer sent and no
    consumer read within ``idle_s`` seconds. Entries nobody handled go too. Returns what was
    (``dry_run``: would be) removed."""
    client = _client(url)
    try:
        return prune_runs(client, None if runs is None else list(runs), dry_run, idle_s)
    finally:
        client.close()  # type: ignore[attr-defined]
