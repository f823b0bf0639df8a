"""``goggles_io.check_broker`` and ``attach(from_broker=True)`` before anything is sent: one
line when the redis package is missing or Redis does not answer, the password never in it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

import goggles_io
from redis_server import free_port

_SRC = Path(__file__).parents[3] / "src"
_INSTALL = "python3 -m pip install 'split-telemetry[broker]'"


def _without_redis(root: Path, code: str, **env: str) -> subprocess.CompletedProcess:
    """Run ``code`` where ``import redis`` fails as if the package were not installed."""
    blocker = root / "no-redis" / "redis"
    blocker.mkdir(parents=True)
    (blocker / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'redis'\", name='redis')\n"
    )
    path = os.pathsep.join([str(blocker.parent), str(_SRC)])
    full = {k: v for k, v in os.environ.items() if not k.startswith("GOGGLES_")}
    full.update(PYTHONPATH=path, GOGGLES_TRANSPORT="inprocess", **env)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
        env=full,
    )  # fmt: skip


class TestCheckBroker:
    def test_reachable_redis_is_fine(self, redis_server) -> None:  # type: ignore[no-untyped-def]
        """A Redis that answers PING: nothing to say."""
        assert goggles_io.check_broker(redis_server.url) is None

    def test_unreachable_redis_is_one_line_without_the_password(self) -> None:
        """Nothing on the port: one line naming host and port, not the password, saying what
        happens to the events."""
        line = goggles_io.check_broker(f"redis://:pa%40ss@127.0.0.1:{free_port()}/3", 1.0)

        assert line is not None and "\n" not in line
        assert line.startswith("Redis at redis://***@127.0.0.1:")
        assert "/3 is unreachable (ConnectionError" in line
        assert "pa@ss" not in line and "pa%40ss" not in line
        assert "spool on disk" in line and "consumers would retry" in line

    def test_wrong_password_is_refused_without_showing_it(self, password_redis) -> None:  # type: ignore[no-untyped-def]
        """A server that answers but refuses the password: one line, the password hidden."""
        server, _ = password_redis
        line = goggles_io.check_broker(server.url.replace("s3cret", "wr0ng"), 2.0)

        assert line is not None and "refused us" in line
        assert "wr0ng" not in line and "s3cret" not in line

    def test_no_broker_configured_raises(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Nothing to check: ConfigurationError naming GOGGLES_BROKER."""
        monkeypatch.delenv("GOGGLES_BROKER", raising=False)
        with pytest.raises(goggles_io.exceptions.ConfigurationError, match="GOGGLES_BROKER"):
            goggles_io.check_broker()


class TestWithoutRedisPackage:
    def test_check_broker_names_the_install_command(self, tmp_path: Path) -> None:
        """``import redis`` fails: the line is the pip command of the broker extra."""
        code = "import goggles_io; print(goggles_io.check_broker('redis://127.0.0.1:1/0'))"
        out = _without_redis(tmp_path, code)

        assert 0 == out.returncode, out.stderr
        assert (
            f"the broker needs the 'redis' package, which is not installed: {_INSTALL} "
            "(in a checkout: python3 -m pip install -e '.[broker]')"
        ) == out.stdout.strip()

    def test_attach_from_broker_reports_one_line_and_no_traceback(self, tmp_path: Path) -> None:
        """attach(handler, from_broker=True), twice: one line on stderr with the pip command,
        no thread starts (no traceback), the program goes on and finishes."""
        code = (
            "import goggles_io as gg, threading\n"
            "gg.attach(gg.NoOpHandler(name='a'), ['x'], from_broker=True)\n"
            "gg.attach(gg.NoOpHandler(name='b'), ['x'], from_broker=True)\n"
            "print(sorted(t.name for t in threading.enumerate() if 'broker' in t.name))\n"
            "gg.finish(5)\n"
            "print('finished')\n"
        )
        out = _without_redis(tmp_path, code, GOGGLES_BROKER=f"redis://127.0.0.1:{free_port()}/0")
        (line,) = out.stderr.strip().splitlines()

        assert 0 == out.returncode, out.stderr
        assert ["[]", "finished"] == out.stdout.split()
        assert line.startswith("goggles_io: attach(from_broker=True): the broker needs the")
        assert _INSTALL in line
        assert "Traceback" not in out.stderr

    def test_producer_side_counts_its_events_lost_with_the_reason(self, tmp_path: Path) -> None:
        """GOGGLES_BROKER set, no redis package: the job logs and finishes; the forwarder says
        what to install once and its FinishReport counts every event it could not forward."""
        code = (
            "import goggles_io as gg\n"
            "log = gg.get_logger('p', with_metrics=True)\n"
            "for i in range(300):\n"
            "    log.scalar('x', float(i), step=i)\n"
            "report = gg.finish(10)\n"
            "print(report.handlers['goggles_io.broker'].losses)\n"
        )
        out = _without_redis(tmp_path, code, GOGGLES_BROKER=f"redis://127.0.0.1:{free_port()}/0")

        assert 0 == out.returncode, out.stderr
        assert "{'no client library': 300}" == out.stdout.strip()
        assert 1 == out.stderr.count(_INSTALL), out.stderr
        assert "Traceback" not in out.stderr
