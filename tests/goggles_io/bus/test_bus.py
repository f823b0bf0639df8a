"""The in-process bus: scope routing, name dedup, configure, delivery, drops, finish."""

from __future__ import annotations

import threading
from typing import ClassVar

import pytest

import goggles_io as gg
from goggles_io import Event, EventBus, Kind
from goggles_io._event.rows import row_of
from goggles_io.exceptions import InvalidNameError
from goggles_io.handlers.base import BaseHandler, register_handler
from goggles_io.testing import MemoryHandler
from support import wait_until


@register_handler
class GateHandler(BaseHandler):
    """Blocks in handle() until its gate opens: a deliberately slow handler."""

    capabilities: ClassVar[frozenset[Kind]] = frozenset(Kind)

    def __init__(self, name: str | None = None, level: int = 0) -> None:
        super().__init__(name=name, level=level)
        self.gate = threading.Event()
        self.entered = threading.Event()
        self.seen: list[Event] = []

    def handle(self, event: Event) -> None:
        self.entered.set()
        self.gate.wait(30)
        self.seen.append(event)


@register_handler
class KeyedHandler(BaseHandler):
    """Carries an API key in its spec's secrets."""

    def __init__(self, name: str | None = None, level: int = 0, api_key: str = "") -> None:
        super().__init__(name=name, level=level)
        self.api_key = api_key

    def handle(self, event: Event) -> None:
        return None

    def secrets(self) -> dict[str, str]:
        return {"api_key": self.api_key}


@register_handler
class FailingHandler(BaseHandler):
    """Raises on every event."""

    def handle(self, event: Event) -> None:
        raise RuntimeError("boom")


@register_handler
class OneShotHandler(MemoryHandler):
    """Cannot be opened a second time."""

    def open(self) -> None:
        super().open()
        if self.opened > 1:
            raise OSError("already used")


def _messages(handler: MemoryHandler) -> list[str]:
    gg.flush()
    return handler.messages()


class TestScopeRouting:
    def test_child_scope_reaches_parent_handler(self) -> None:
        """An event in global.namespace reaches a handler attached on global."""
        mem = MemoryHandler(name="mem")
        gg.attach(mem, scopes=["global"])

        gg.get_logger("t", scope="global.namespace").info("hi")

        assert ["hi"] == _messages(mem)

    def test_prefix_without_dot_is_another_scope(self) -> None:
        """An event in globalA does not reach a handler on global."""
        mem = MemoryHandler(name="mem")
        gg.attach(mem, scopes=["global"])

        gg.get_logger("t", scope="globalA").info("hi")

        assert [] == _messages(mem)

    def test_parent_scope_does_not_reach_child_handler(self) -> None:
        """An event in global does not reach a handler attached only on global.child."""
        mem = MemoryHandler(name="mem")
        gg.attach(mem, scopes=["global.child"])

        gg.get_logger("t").info("hi")

        assert [] == _messages(mem)

    def test_handler_on_two_scopes_gets_both(self) -> None:
        """A handler attached on two scopes receives events of each."""
        mem = MemoryHandler(name="mem")
        gg.attach(mem, scopes=["a", "b"])

        gg.get_logger("t", scope="a").info("1")
        gg.get_logger("t", scope="b").info("2")
        gg.get_logger("t", scope="c").info("3")

        assert ["1", "2"] == _messages(mem)

    def test_level_filters_log_events_only(self) -> None:
        """A handler at WARNING skips INFO messages but still gets metrics."""
        mem = MemoryHandler(name="mem", level=gg.WARNING)
        gg.attach(mem)
        log = gg.get_logger("t", with_metrics=True)

        log.info("quiet")
        log.warning("loud")
        log.scalar("m", 1.0)
        gg.flush()

        assert [Kind.LOG, Kind.METRIC] == [e.kind for e in mem.events]

    def test_capabilities_limit_kinds(self) -> None:
        """The console handler is not given metric events."""
        console = gg.ConsoleHandler(name="c")
        gg.attach(console)
        gg.get_logger("t", with_metrics=True).scalar("m", 1.0)

        report = gg.finish()

        assert 0 == report.handlers["c"].delivered

    def test_malformed_scope_is_rejected(self) -> None:
        """A scope with an empty dot-part raises InvalidNameError at attach."""
        with pytest.raises(InvalidNameError, match="scope"):
            gg.attach(MemoryHandler(name="mem"), scopes=["global..x"])

    def test_bare_string_scopes_is_rejected(self) -> None:
        """scopes='global' (a str, not a list) raises instead of attaching to 'g', 'l', ..."""
        with pytest.raises(InvalidNameError, match="bare str"):
            gg.attach(MemoryHandler(name="mem"), scopes="global")


class TestHandlerNames:
    def test_first_registration_wins(self) -> None:
        """A second handler under the same name is ignored; the first gets the events."""
        first, second = MemoryHandler(name="x"), MemoryHandler(name="x", level=gg.ERROR)
        gg.attach(first)
        gg.attach(second)

        gg.get_logger("t").error("e")
        gg.flush()

        assert (1, 0) == (len(first.events), len(second.events))

    def test_differing_config_warns_once_naming_options(
        self, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """A differing re-attach prints one stderr warning naming the handler and the option."""
        gg.attach(MemoryHandler(name="x"))
        gg.attach(MemoryHandler(name="x", level=gg.ERROR))
        gg.attach(MemoryHandler(name="x", level=gg.ERROR))

        err = capfd.readouterr().err

        assert 1 == err.count("'x' is already attached")
        assert "level: kept 0, ignored 40" in err

    def test_differing_secrets_warned_redacted(self, capfd: pytest.CaptureFixture[str]) -> None:
        """Handlers differing only in a secret warn that secrets differ, never showing them."""
        gg.attach(KeyedHandler(name="k", api_key="first-secret-1"))
        gg.attach(KeyedHandler(name="k", api_key="second-secret-2"))
        err = capfd.readouterr().err

        assert "secrets: kept <redacted>, ignored <redacted>" in err
        assert "secret-1" not in err and "secret-2" not in err

    def test_identical_secrets_are_silent(self, capfd: pytest.CaptureFixture[str]) -> None:
        """Equal secrets compare equal by hash: no warning."""
        gg.attach(KeyedHandler(name="k", api_key="same"))
        gg.attach(KeyedHandler(name="k", api_key="same"))

        assert "" == capfd.readouterr().err

    def test_identical_config_is_silent(self, capfd: pytest.CaptureFixture[str]) -> None:
        """Re-attaching an identical configuration prints nothing."""
        gg.attach(MemoryHandler(name="x"))
        gg.attach(MemoryHandler(name="x"))

        assert "" == capfd.readouterr().err

    def test_later_attach_merges_scopes(self) -> None:
        """The ignored attach's scopes are merged onto the kept handler."""
        first = MemoryHandler(name="x")
        gg.attach(first, scopes=["a"])
        gg.attach(MemoryHandler(name="x"), scopes=["b"])

        gg.get_logger("t", scope="b").info("via b")

        assert ["via b"] == _messages(first)

    def test_detach_last_scope_closes_handler(self) -> None:
        """Detaching a handler from its only scope stops routing and closes it."""
        mem = MemoryHandler(name="x")
        gg.attach(mem)
        log = gg.get_logger("t")
        log.info("before")

        gg.detach("x", "global")
        log.info("after")

        assert (["before"], 1) == (mem.messages(), mem.closed)

    def test_detach_one_scope_keeps_the_other(self) -> None:
        """Detaching from one scope leaves the handler on its other scopes."""
        mem = MemoryHandler(name="x")
        gg.attach(mem, scopes=["a", "b"])

        gg.detach("x", "a")
        gg.get_logger("t", scope="a").info("a")
        gg.get_logger("t", scope="b").info("b")

        assert ["b"] == _messages(mem)


class TestConfigure:
    def test_without_arguments_is_a_no_op(self) -> None:
        """configure() attaches nothing."""
        gg.configure()

        assert {} == gg.finish().handlers

    def test_last_call_wins(self, capfd: pytest.CaptureFixture[str]) -> None:
        """A second configure replaces the console handler, with no conflict warning."""
        log = gg.get_logger("t")
        gg.configure(enable_console=True, console_level=gg.INFO)
        gg.configure(enable_console=True, console_level=gg.WARNING)

        log.info("hidden")
        log.warning("shown")
        gg.finish()

        err = capfd.readouterr().err
        assert ("hidden" not in err, "shown" in err, "already attached" in err) == (
            True,
            True,
            False,
        )

    def test_disable_removes_console(self, capfd: pytest.CaptureFixture[str]) -> None:
        """enable_console=False detaches the console from the target scopes."""
        gg.configure(enable_console=True)
        gg.configure(enable_console=False)

        gg.get_logger("t").warning("nowhere")
        gg.finish()

        assert "nowhere" not in capfd.readouterr().err


class TestDelivery:
    def test_slow_handler_does_not_hold_up_others(self) -> None:
        """A fast handler receives everything while a slow one is still blocked."""
        slow, fast = GateHandler(name="slow"), MemoryHandler(name="fast")
        gg.attach(slow)
        gg.attach(fast)
        log = gg.get_logger("t")

        for i in range(50):
            log.info("m%d", i)

        wait_until(lambda: len(fast.events) == 50, what="fast handler got all events")
        slow.gate.set()

    def test_full_queue_drops_and_counts(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """GOGGLES_WHEN_FULL=drop, a blocked handler, a queue of 4: the rest is dropped, counted."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "4")
        monkeypatch.setenv("GOGGLES_WHEN_FULL", "drop")
        slow = GateHandler(name="slow")
        gg.attach(slow)
        log = gg.get_logger("t")
        log.info("first")
        wait_until(slow.entered.is_set, what="worker is inside handle()")

        for i in range(20):
            log.info("m%d", i)
        slow.gate.set()
        report = gg.finish(timeout=30)

        assert (5, 16) == (report.handlers["slow"].delivered, report.handlers["slow"].dropped)

    def test_finish_reports_drops_on_stderr(
        self, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """finish() prints the per-handler tally when something was dropped."""
        monkeypatch.setenv("GOGGLES_QUEUE_SIZE", "1")
        monkeypatch.setenv("GOGGLES_WHEN_FULL", "drop")
        slow = GateHandler(name="slow")
        gg.attach(slow)
        log = gg.get_logger("t")
        log.info("first")
        wait_until(slow.entered.is_set, what="worker is inside handle()")
        for _ in range(5):
            log.info("x")
        slow.gate.set()
        gg.finish(timeout=30)

        assert "slow: 2 delivered, 4 dropped" in capfd.readouterr().err

    def test_flush_waits_without_closing(self) -> None:
        """After flush() every event was handled and the handler is still open."""
        mem = MemoryHandler(name="m")
        gg.attach(mem)
        for i in range(100):
            gg.get_logger("t").info("%d", i)

        gg.flush()

        assert (100, 0) == (len(mem.events), mem.closed)

    def test_handler_error_is_counted_not_raised(self, capfd: pytest.CaptureFixture[str]) -> None:
        """A raising handler never reaches the caller; errors are counted, reported once."""
        gg.attach(FailingHandler(name="bad"))
        log = gg.get_logger("t")

        log.info("a")
        log.info("b")
        report = gg.finish()

        assert 2 == report.handlers["bad"].errors
        assert 1 == capfd.readouterr().err.count("'bad' raised")

    def test_sync_mode_delivers_before_returning(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With GOGGLES_ASYNC=0 the event is handled when the call returns."""
        monkeypatch.setenv("GOGGLES_ASYNC", "0")
        mem = MemoryHandler(name="m")
        gg.attach(mem)

        gg.get_logger("t").info("now")

        assert ["now"] == mem.messages()

    def test_sync_mode_runs_handler_in_caller_thread(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With GOGGLES_ASYNC=0 no worker thread is involved."""
        monkeypatch.setenv("GOGGLES_ASYNC", "false")
        threads: list[str] = []

        class Recorder(MemoryHandler):
            def handle(self, event: Event) -> None:
                threads.append(threading.current_thread().name)

        gg.attach(Recorder(name="r"))
        gg.get_logger("t").info("x")

        assert [threading.current_thread().name] == threads


class TestEmitMany:
    def test_batch_is_routed_like_single_events(self) -> None:
        """put_rows gives each handler exactly the events emit would, by scope, in order."""
        bus = EventBus()
        top, child = MemoryHandler(name="top"), MemoryHandler(name="child")
        bus.attach(top, ["global"])
        bus.attach(child, ["global.eval"])
        scopes = ["global", "global.eval", "other", "global.eval", "global"]
        events = [Event(kind=Kind.TEXT, scope=s, payload=str(i)) for i, s in enumerate(scopes)]
        dropped = bus.put_rows([row_of(event) for event in events])
        bus.finish(30)

        assert 0 == dropped
        assert ["0", "1", "3", "4"] == [e.payload for e in top.events]
        assert ["1", "3"] == [e.payload for e in child.events]


class TestFinish:
    def test_finish_closes_handlers(self) -> None:
        """finish() delivers everything, then closes each handler once."""
        mem = MemoryHandler(name="m")
        gg.attach(mem)
        gg.get_logger("t").info("x")

        report = gg.finish()

        assert (1, 1, 1) == (len(mem.events), mem.closed, report.handlers["m"].delivered)

    def test_logging_after_finish_reopens(self) -> None:
        """An event logged after finish() re-opens the handler and is delivered."""
        mem = MemoryHandler(name="m")
        gg.attach(mem)
        log = gg.get_logger("t")
        gg.finish()

        log.info("late")
        gg.finish()

        assert (["late"], 2, 2) == (mem.messages(), mem.opened, mem.closed)

    def test_handler_that_cannot_reopen_counts_drops(
        self, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """A handler whose open() fails after finish gets its events counted as dropped."""
        gg.attach(OneShotHandler(name="once"))
        log = gg.get_logger("t")
        gg.finish()

        log.info("late 1")
        log.info("late 2")
        report = gg.finish()

        assert 2 == report.handlers["once"].dropped
        assert "'once' could not be opened" in capfd.readouterr().err

    def test_finish_without_any_logging_is_empty(self) -> None:
        """finish() before anything was set up reports no handlers."""
        assert {} == gg.finish().handlers


class TestExit:
    def test_events_are_delivered_at_exit_without_finish(self) -> None:
        """A script that never calls finish() still gets its queued events out at exit."""
        import subprocess
        import sys

        code = (
            "import goggles_io as gg\n"
            "gg.attach(gg.ConsoleHandler(name='c', stream='stdout'))\n"
            "log = gg.get_logger('t')\n"
            "for i in range(200): log.info('line %d', i)\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        ).stdout

        assert 200 == out.count("t: line ")
