"""GracefulShutdown: real signals set a flag, handlers are restored, misuse fails clearly."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from goggles_io import GracefulShutdown
from goggles_io.exceptions import ShutdownError
from support import start, stop

SCRIPT = Path(__file__).parent / "scripts" / "shutdown_loop.py"
SRC = Path(__file__).resolve().parents[3] / "src"


@pytest.fixture(name="start_loop")
def start_loop_fixture() -> Iterator[Callable[..., subprocess.Popen[str]]]:
    """Start the shutdown loop script (ready when it says so); every one is stopped after."""
    procs: list[subprocess.Popen[str]] = []

    def start_loop(*args: str) -> subprocess.Popen[str]:
        env = {**os.environ, "PYTHONPATH": str(SRC)}
        proc = start(
            [sys.executable, str(SCRIPT), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        procs.append(proc)
        assert proc.stdout is not None
        assert "ready\n" == proc.stdout.readline()
        return proc

    yield start_loop
    for proc in procs:
        stop(proc)


class TestGracefulShutdownInProcess:
    def test_flag_is_false_until_a_signal_arrives(self) -> None:
        """A fresh block reports no shutdown request."""
        with GracefulShutdown() as shutdown:
            requested = (shutdown.requested, bool(shutdown), shutdown.signal)

        assert (False, False, None) == requested

    def test_raised_sigint_sets_the_flag_and_records_the_signal(self) -> None:
        """A real SIGINT raised inside the block sets the flag instead of raising."""
        with GracefulShutdown() as shutdown:
            signal.raise_signal(signal.SIGINT)

        assert (True, signal.SIGINT, 1) == (shutdown.requested, shutdown.signal, shutdown.count)

    def test_robo_goggles_stop_loop_logs_exit_message_once(self) -> None:
        """`while not gs.stop` ends on a signal; exit_message is logged once, at INFO."""
        import goggles_io as gg
        from goggles_io.testing import MemoryHandler

        mem = MemoryHandler(name="shutdown_mem")
        gg.attach(mem, scopes=["global"])
        with GracefulShutdown(exit_message="saving and leaving") as gs:
            turns = 0
            while not gs.stop:
                turns += 1
                if turns == 3:
                    signal.raise_signal(signal.SIGTERM)
            assert gs.stop and gs.requested
        gg.flush()

        assert 3 == turns
        assert [("saving and leaving", gg.INFO)] == [(e.payload, e.level) for e in mem.events]

    def test_exit_message_must_be_text(self) -> None:
        """A non-str exit_message is refused at construction."""
        with pytest.raises(TypeError, match="exit_message"):
            GracefulShutdown(42)  # type: ignore[arg-type]

    def test_second_signal_is_counted_when_raise_on_second_is_off(self) -> None:
        """With raise_on_second=False every signal is only counted."""
        with GracefulShutdown(raise_on_second=False) as shutdown:
            signal.raise_signal(signal.SIGTERM)
            signal.raise_signal(signal.SIGTERM)

        assert 2 == shutdown.count

    def test_previous_handlers_are_restored_on_exit(self) -> None:
        """Leaving the block puts back exactly the handlers that were installed before."""
        before = (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))
        with GracefulShutdown():
            pass

        assert before == (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM))

    def test_previous_handlers_are_restored_when_the_block_raises(self) -> None:
        """An exception in the block still restores the previous handlers."""
        before = signal.getsignal(signal.SIGINT)
        with pytest.raises(ZeroDivisionError), GracefulShutdown():
            _ = 1 / 0

        assert before == signal.getsignal(signal.SIGINT)

    def test_entering_from_a_worker_thread_raises_shutdown_error(self) -> None:
        """Outside the main thread entering fails with ShutdownError naming the thread."""
        errors: list[BaseException] = []

        def enter() -> None:
            try:
                with GracefulShutdown():
                    pass
            except BaseException as exc:
                errors.append(exc)

        worker = threading.Thread(target=enter, name="not-main")
        worker.start()
        worker.join()

        assert 1 == len(errors)
        assert isinstance(errors[0], ShutdownError)
        assert isinstance(errors[0], RuntimeError)
        assert "'not-main'" in str(errors[0])

    def test_reentering_an_active_block_raises_shutdown_error(self) -> None:
        """Nesting the same instance is refused rather than losing the saved handlers."""
        shutdown = GracefulShutdown()
        with shutdown, pytest.raises(ShutdownError, match="already active"), shutdown:
            pass

    @pytest.mark.parametrize("signals", [(signal.SIGKILL,), (), (99999,)])
    def test_uncatchable_or_empty_signals_are_rejected(self, signals: tuple[int, ...]) -> None:
        """SIGKILL, an unknown number or an empty list raise ValueError naming ``signals``."""
        with pytest.raises(ValueError, match="signals"):
            GracefulShutdown(signals=signals)


class TestGracefulShutdownSubprocess:
    def test_real_sigint_stops_the_loop_cleanly(
        self, start_loop: Callable[..., subprocess.Popen[str]]
    ) -> None:
        """A real SIGINT sent by another process ends the loop, exit code 0, handlers restored."""
        proc = start_loop()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)

        assert (0, "stopped SIGINT 1\nrestored\n") == (proc.returncode, out), err

    def test_real_sigterm_stops_the_loop_cleanly(
        self, start_loop: Callable[..., subprocess.Popen[str]]
    ) -> None:
        """SIGTERM is caught like SIGINT."""
        proc = start_loop()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=60)

        assert (0, "stopped SIGTERM 1\nrestored\n") == (proc.returncode, out), err

    def test_second_sigint_raises_keyboard_interrupt(
        self, start_loop: Callable[..., subprocess.Popen[str]]
    ) -> None:
        """A second Ctrl-C raises KeyboardInterrupt so a stuck loop can still be stopped."""
        proc = start_loop("--wait-second")
        assert proc.stdout is not None
        proc.send_signal(signal.SIGINT)
        assert "stopped SIGINT 1\n" == proc.stdout.readline()
        assert "waiting\n" == proc.stdout.readline()
        proc.send_signal(signal.SIGINT)
        out, err = proc.communicate(timeout=60)

        assert (3, "interrupted\nrestored\n") == (proc.returncode, out), err
