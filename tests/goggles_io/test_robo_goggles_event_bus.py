"""robo-goggles 0.3.6's ``EventBus`` used directly: emit, its handler protocol, detach, shutdown.

Each test states one behaviour of robo-goggles 0.3.6 in our own words.
"""

from __future__ import annotations

import threading
import time
from typing import Any, ClassVar

import pytest

import goggles_io as gg
from goggles_io import Kind
from goggles_io.testing import MemoryHandler, delivered


class PlainHandler:
    """A handler written to robo-goggles 0.3.6's protocol: ``from_dict`` gets ``spec["data"]``."""

    level = 0
    capabilities: ClassVar[frozenset[str]] = frozenset({"log"})
    made: ClassVar[list[dict[str, Any]]] = []

    def __init__(self, name: str = "plain", prefix: str = "") -> None:
        self.name = name
        self.prefix = prefix
        self.got: list[str] = []

    def handle(self, event: gg.Event) -> None:
        self.got.append(self.prefix + str(event.payload))

    def open(self) -> None:
        pass

    def close(self) -> None:
        pass

    def to_dict(self) -> dict[str, Any]:
        return {"cls": "PlainHandler", "data": {"name": self.name, "prefix": self.prefix}}

    @classmethod
    def from_dict(cls, serialized: dict[str, Any]) -> PlainHandler:
        cls.made.append(dict(serialized))
        return cls(**serialized)


gg.register_handler(PlainHandler)


class SlowClose:
    """Closes after ``delay_s`` (or never, with ``hang``), recording when it started."""

    level = 0
    capabilities: ClassVar[frozenset[str]] = frozenset({"log"})

    def __init__(self, name: str, delay_s: float, hang: threading.Event | None = None) -> None:
        self.name = name
        self.delay_s = delay_s
        self.hang = hang
        self.closed_at: float | None = None

    def handle(self, event: gg.Event) -> None:
        pass

    def open(self) -> None:
        pass

    def close(self) -> None:
        if self.hang is not None:
            self.hang.wait(60)
        time.sleep(self.delay_s)  # the slow close() under test, not a wait for a condition
        self.closed_at = time.monotonic()

    def to_dict(self) -> dict[str, Any]:
        return {"cls": "SlowClose", "data": {}}

    @classmethod
    def from_dict(cls, serialized: dict[str, Any]) -> SlowClose:
        return cls("slow", 0.0)


class _Keeps:
    """Keeps every event object it is handed, and the thread that handed it."""

    level = 0
    capabilities: ClassVar[frozenset[str]] = frozenset({"log", "metric"})

    def __init__(self, name: str) -> None:
        self.name = name
        self.got: list[tuple[gg.Event, threading.Thread]] = []

    def handle(self, event: gg.Event) -> None:
        self.got.append((event, threading.current_thread()))


class TestEmit:
    def test_when_emit_returns_the_scopes_handlers_have_that_same_event(self) -> None:
        """bus.emit(event) returns after every handler of the event's scope (and of its
        parents) was handed that very object, on the emitting thread; others get nothing."""
        bus = gg.EventBus()
        parent, child, other = _Keeps("parent"), _Keeps("child"), _Keeps("other")
        bus.attach(parent, ["global"])
        bus.attach(child, ["global.eval"])
        bus.attach(other, ["elsewhere"])
        event = gg.Event(kind=Kind.LOG, scope="global.eval", payload="now", level=20)
        try:
            bus.emit(event)
            handed = [got for h in (parent, child, other) for got, _ in h.got]
            threads = {thread for h in (parent, child) for _, thread in h.got}
        finally:
            bus.shutdown(timeout=10)

        assert 2 == len(handed)
        assert all(got is event for got in handed)
        assert {threading.current_thread()} == threads

    def test_a_dict_is_read_as_an_event(self) -> None:
        """robo-goggles' serialized form: emit({"kind": "log", ...}) reaches the handler."""
        bus = gg.EventBus()
        keeps = _Keeps("k")
        bus.attach(keeps, ["global"])
        try:
            bus.emit({"kind": "log", "scope": "global", "payload": "as a dict", "level": 20})
        finally:
            bus.shutdown(timeout=10)

        assert ["as a dict"] == [event.payload for event, _ in keeps.got]

    @pytest.mark.parametrize("thing", ["log this", 42, None, ["log", "global"]])
    def test_emit_of_something_not_an_event_raises_type_error(self, thing: object) -> None:
        """bus.emit(x) for x neither an Event nor a mapping raises TypeError naming x's type,
        and hands nothing to the handlers."""
        bus = gg.EventBus()
        keeps = _Keeps("k")
        bus.attach(keeps, ["global"])
        try:
            with pytest.raises(TypeError, match=type(thing).__name__):
                bus.emit(thing)  # type: ignore[arg-type]
        finally:
            bus.shutdown(timeout=10)

        assert [] == keeps.got

    def test_the_loggers_bus_keeps_its_lanes(self) -> None:
        """The bus the loggers use (get_bus()) still hands events over from each handler's own
        thread: a log call never runs a handler (GOGGLES_ASYNC's default)."""
        keeps = _Keeps("k")
        gg.attach(keeps)
        gg.get_logger("t").info("later")
        gg.finish(timeout=10)

        assert ["later"] == [event.payload for event, _ in keeps.got]
        assert threading.current_thread() not in {thread for _, thread in keeps.got}


class TestAttachSpecs:
    def test_spec_data_reaches_from_dict_of_a_plain_handler(self) -> None:
        """attach([{"cls": "X", "data": {...}}]) builds the handler with X.from_dict(data)."""
        PlainHandler.made.clear()
        bus = gg.EventBus()
        bus.attach([{"cls": "PlainHandler", "data": {"name": "p", "prefix": "> "}}], ["global"])
        bus.emit(gg.Event(kind=Kind.LOG, scope="global", payload="hi", level=20))
        handler = bus.handlers["p"]
        bus.shutdown(timeout=10)

        assert [{"name": "p", "prefix": "> "}] == PlainHandler.made
        assert ["> hi"] == handler.got  # type: ignore[attr-defined]

    def test_our_handlers_still_get_their_secrets(self) -> None:
        """A BaseHandler subclass reads the whole spec (data and secrets), as before."""
        bus = gg.EventBus()
        bus.attach([MemoryHandler(name="m").to_dict()], ["global"])

        assert isinstance(bus.handlers["m"], MemoryHandler)
        bus.shutdown(timeout=10)


class TestDetach:
    def test_detach_of_a_name_never_attached_raises_value_error(self) -> None:
        """EventBus().detach("nobody", scope) raises ValueError, as robo-goggles 0.3.6 does."""
        with pytest.raises(ValueError, match="'nobody' is not attached"):
            gg.EventBus().detach("nobody", "global")

    def test_detach_from_a_scope_it_is_not_on_raises_value_error(self) -> None:
        """Attached on "a", detached from "b": ValueError."""
        bus = gg.EventBus()
        bus.attach(MemoryHandler(name="m"), ["a"])
        with pytest.raises(ValueError, match="not attached on scope 'b'"):
            bus.detach("m", "b")
        bus.shutdown(timeout=10)

    def test_gg_detach_twice_stays_harmless(self) -> None:
        """The module-level gg.detach keeps its no-op for a name already gone."""
        gg.attach(MemoryHandler(name="twice"))
        gg.detach("twice", "global")
        gg.detach("twice", "global")


class TestShutdown:
    def test_slow_closes_run_in_parallel_and_are_waited_for(self) -> None:
        """Three close()s of 0.5 s each: shutdown() waits for all, in about 0.5 s, not 1.5 s."""
        bus = gg.EventBus()
        slow = [SlowClose(f"s{i}", 0.5) for i in range(3)]
        for handler in slow:
            bus.attach(handler, ["global"])
        start = time.monotonic()
        bus.shutdown()
        took = time.monotonic() - start

        assert all(h.closed_at is not None for h in slow)
        assert took < 1.4, took  # sequential closes would take 1.5 s at least
        assert {} == bus.handlers

    def test_a_hanging_close_does_not_hold_shutdown_past_its_timeout(self, capfd) -> None:
        """shutdown(timeout=0.5) returns within about 0.5 s though a close() hangs; the
        handlers are forgotten and the late one named on stderr."""
        release = threading.Event()
        bus = gg.EventBus()
        bus.attach(SlowClose("hangs", 0.0, hang=release), ["global"])
        bus.attach(MemoryHandler(name="m"), ["global"])
        try:
            start = time.monotonic()
            bus.shutdown(timeout=0.5)
            took = time.monotonic() - start
        finally:
            release.set()

        assert took < 3.0, took
        assert ({}, {}) == (bus.handlers, bus.scopes)
        assert "'hangs'" in capfd.readouterr().err

    def test_shutdown_delivers_what_was_emitted_first(self) -> None:
        """Events emitted before shutdown() reach their handler before it closes."""
        bus = gg.EventBus()
        mem = MemoryHandler(name="m")
        bus.attach(mem, ["global"])
        for i in range(100):
            bus.emit(gg.Event(kind=Kind.LOG, scope="global", payload=str(i), level=20))
        bus.shutdown(timeout=10)

        assert [str(i) for i in range(100)] == [e.payload for e in delivered(mem)]
        assert 1 == mem.closed


def test_to_bind_is_a_bound_field_like_any_other(mem: MemoryHandler) -> None:
    """get_logger(to_bind=...) binds one field named "to_bind", as 0.3.6's ``**to_bind`` does."""
    gg.attach(mem)
    gg.get_logger("t", to_bind={"a": 1}).info("x")
    gg.finish(timeout=10)

    (event,) = delivered(mem)
    assert {"to_bind": {"a": 1}} == event.extra["bound"]
