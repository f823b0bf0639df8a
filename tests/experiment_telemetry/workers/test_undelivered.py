"""Episodes whose events never arrive (Redis gone mid-run) are reported missing, never scored."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.replay import read_stats, replay_run
from experiment_telemetry.stats import EpisodeMissing, EpisodeStats, StatEvent
from redis_server import RedisServer

pytestmark = [
    pytest.mark.usefixtures("socket_bus"),
    pytest.mark.slow,
    pytest.mark.skipif(
        shutil.which("redis-server") is None, reason="redis-server is not installed"
    ),
]


@pytest.fixture
def redis_url(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[RedisServer]:
    """A redis-server, with GOGGLES_BROKER pointing at it (workers on their own hosts)."""
    root = Path(tempfile.mkdtemp(prefix="ggr-"))
    server = RedisServer(root)
    server.start()
    monkeypatch.setenv("GOGGLES_BROKER", server.url)
    monkeypatch.setenv("GOGGLES_BROKER_RUN", "undelivered")  # the pool sets it in os.environ
    monkeypatch.setenv("GOGGLES_SPOOL_DIR", str(tmp_path / "spool"))
    yield server
    server.stop()
    shutil.rmtree(root, ignore_errors=True)


def test_episodes_after_redis_stopped_are_missing_not_scored(
    tmp_path: Path, toy: Any, redis_url: RedisServer
) -> None:
    """Redis stops once episode 0 is scored: the later episodes whose events did not arrive
    are EpisodeMissing (counted in the report, in stats.jsonl, replayed), none is scored from
    half its events, and the run ends without one full wait per episode."""
    plan = [("eval", s) for s in range(8)]
    experiment = toy(tmp_path, plan, num_workers=1)
    experiment.worker_wait_s = 2.0
    score = experiment.post_episode

    def post_episode(context: EpisodeContext) -> list[StatEvent]:
        stats = score(context)
        if context.episode == 0:
            redis_url.stop()
        return stats

    experiment.post_episode = post_episode  # type: ignore[method-assign]
    result = experiment.run()
    scored = [s.episode for s in result.stats if isinstance(s, EpisodeStats)]
    missing = [s for s in result.stats if isinstance(s, EpisodeMissing)]

    assert "done" == result.status
    assert 0 == scored[0]
    assert [5, 6, 7] == [m.episode for m in missing][-3:]  # at most 2 ran ahead and arrived
    assert list(range(8)) == sorted(scored + [m.episode for m in missing])
    assert {"events_missing"} == {m.outcome for m in missing}
    assert all(m.arrived < m.sent for m in missing)
    assert len(missing) == result.workers.episodes_missing
    assert f"{len(missing)} missing (their events did not arrive" in result.workers.summary()
    assert read_stats(result.run_dir) == replay_run(result.run_dir)
