"""Tests behave the same however the suite was started, and leave no process behind.

A suite started in the background by a non-interactive shell (``nohup``, many CI runners)
inherits SIGINT ignored; ``tests/support.py`` starts children with SIGINT at its default and
stops them whatever failed. These tests run pytest itself in a subprocess, started that way, on
a tiny test file that fails while its child still runs, and check that no process is left.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from support import started, wait_until

TESTS = Path(__file__).resolve().parent
_SLEEPER = (
    "import os, signal, subprocess, sys, time\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"  # a server that will not stop on Ctrl-C
    "worker = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
    "print(os.getpid(), worker.pid, flush=True)\n"
    "time.sleep(600)\n"
)
# A test that starts a child (which starts a worker), asks it to stop, and fails waiting.
_FAILING_TEST = """
import signal, subprocess, sys
from pathlib import Path

from support import started

SLEEPER = {sleeper!r}


def test_fails_while_its_child_runs() -> None:
    with {opener}([sys.executable, "-c", SLEEPER], stdout=subprocess.PIPE, text=True,
                  start_new_session=True) as proc:
        Path({pids!r}).write_text(proc.stdout.readline())
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=0.5)
"""
_SIGINT_OF_CHILD = (
    "import signal, subprocess, sys\n"
    "from support import start\n"
    "signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "probe = [sys.executable, '-c', 'import signal; h = signal.getsignal(signal.SIGINT); '\n"
    '         \'print({signal.default_int_handler: "default", signal.SIG_IGN: "ignored"}[h])\']\n'
    "for child in (start(probe, stdout=subprocess.PIPE, text=True),\n"
    "              subprocess.Popen(probe, stdout=subprocess.PIPE, text=True)):\n"
    "    print(child.communicate(timeout=60)[0].strip())\n"
)


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting for a reaper is not running)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with contextlib.suppress(OSError, IndexError):  # ESRCH if it ends while read
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    return False


def _ignore_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_IGN)


def _pytest_detached(test_file: Path, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run pytest on ``test_file`` as a background CI job runs it: own session, SIGINT ignored,
    a TMPDIR 40 characters longer than the test's own folder."""
    long_tmp = tmp_path / ("t" * 39)
    long_tmp.mkdir(exist_ok=True)
    env = {**os.environ, "TMPDIR": str(long_tmp), "PYTHONPATH": str(TESTS)}
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(test_file)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        start_new_session=True,
        preexec_fn=_ignore_sigint,
    )


def _kill(pids: list[int]) -> None:
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


class TestChildrenOfAnIgnoringParent:
    def test_start_gives_the_child_the_default_sigint(self) -> None:
        """Under a parent that ignores SIGINT, ``start`` restores Ctrl-C in the child; a plain
        ``Popen`` child keeps ignoring it (what made six tests hang)."""
        with started(
            [sys.executable, "-c", _SIGINT_OF_CHILD],
            env={**os.environ, "PYTHONPATH": str(TESTS)},
            stdout=subprocess.PIPE,
            text=True,
        ) as proc:
            out, _ = proc.communicate(timeout=60)

        assert ["default", "ignored"] == out.split()


@pytest.mark.slow
class TestAFailingTestLeavesNoProcess:
    @pytest.mark.parametrize(
        ("opener", "leaves"), [("started", False), ("open_without_stop", True)]
    )
    def test_child_and_its_worker_are_gone_after_the_failure(
        self, tmp_path: Path, opener: str, leaves: bool
    ) -> None:
        """The tiny test fails on ``proc.wait(timeout=...)``; with ``started`` its child and the
        child's worker are gone when pytest ends. Without it (the control) both are left."""
        pids_file = tmp_path / "pids"
        test_file = tmp_path / "test_tiny.py"
        source = _FAILING_TEST.format(sleeper=_SLEEPER, opener=opener, pids=str(pids_file))
        if opener == "open_without_stop":
            source += (
                "\n\ndef open_without_stop(*a, **k):\n"
                "    import contextlib\n"
                "    return contextlib.nullcontext(subprocess.Popen(*a, **k))\n"
            )
        test_file.write_text(source)

        done = _pytest_detached(test_file, tmp_path)
        pids = [int(pid) for pid in pids_file.read_text().split()]
        try:
            if not leaves:
                wait_until(lambda: not any(map(_alive, pids)), timeout_s=30, what="all gone")
            left = [pid for pid in pids if _alive(pid)]
        finally:
            _kill(pids)

        assert 1 == done.returncode, done.stdout + done.stderr
        assert "TimeoutExpired" in done.stdout, done.stdout
        assert (pids if leaves else []) == left
