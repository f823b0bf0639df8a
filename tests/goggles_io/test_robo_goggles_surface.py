"""Code written for robo-goggles runs unchanged: the call forms and objects its users rely on.

Each test states one robo-goggles behaviour in our own words (the peer's own suite runs in CI
through ``../shared/compat/robo-goggles/run``).
"""

from __future__ import annotations

import json
import logging
import threading
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
import yaml

import goggles_io as gg
from goggles_io import Kind
from goggles_io.exceptions import InvalidPayloadError, UnknownScopeError
from goggles_io.testing import MemoryHandler, delivered


class MinimalHandler:
    """Only what robo-goggles' Handler protocol requires: no flush, string capabilities."""

    name = "minimal"
    level = logging.NOTSET
    capabilities: ClassVar[frozenset[str]] = frozenset({"log", "metric"})
    seen: ClassVar[list[Any]] = []

    def handle(self, event: gg.Event) -> None:
        self.seen.append(event.payload)

    def open(self) -> None:
        self.seen.clear()

    def close(self) -> None:
        self.seen.append("closed")

    def to_dict(self) -> dict[str, Any]:
        return {"cls": "MinimalHandler", "data": {}}

    @classmethod
    def from_dict(cls, spec: Any) -> MinimalHandler:
        return cls()


gg.register_handler(MinimalHandler)


class TestHandlerProtocol:
    def test_handler_without_flush_gets_events_and_is_closed(self) -> None:
        """A handler lacking flush() keeps its lane: events arrive and finish() closes it."""
        gg.attach(MinimalHandler(), scopes=["global"])
        gg.get_logger("proto").info("hello")
        report = gg.finish(timeout=10)

        assert ["hello", "closed"] == MinimalHandler.seen
        assert not report.timed_out

    def test_string_capabilities_route_only_those_kinds(self) -> None:
        """capabilities={"log", "metric"} as plain strings: an image is not routed."""
        gg.attach(MinimalHandler(), scopes=["global"])
        log = gg.get_logger("proto", with_metrics=True)
        log.scalar("loss", 0.5, step=0)
        log.image(np.zeros((4, 4, 3), np.uint8), step=0)
        gg.finish(timeout=10)

        assert [{"loss": 0.5}, "closed"] == MinimalHandler.seen

    def test_can_handle_alone_decides_routing(self, mem: MemoryHandler) -> None:
        """A handler with can_handle() and no capabilities gets exactly the kinds it accepts."""

        class TextOnly:
            name = "text_only"
            level = 0
            got: ClassVar[list[str]] = []

            def can_handle(self, kind: str) -> bool:
                return kind == "log"

            def handle(self, event: gg.Event) -> None:
                self.got.append(event.kind.value)

        bus = gg.EventBus()
        bus.attach(TextOnly(), ["global"])
        bus.emit(gg.Event(kind=Kind.METRIC, scope="global", payload={"a": 1.0}))
        bus.emit(gg.Event(kind=Kind.LOG, scope="global", payload="x", level=20))
        bus.finish(5)

        assert ["log"] == TextOnly.got

    def test_exception_in_close_is_reported_not_raised(
        self, capfd: pytest.CaptureFixture[str]
    ) -> None:
        """close() raising is counted and reported once; finish() still returns a report."""

        class BadClose(MinimalHandler):
            name = "bad_close"

            def close(self) -> None:
                raise RuntimeError("disk gone")

        bus = gg.EventBus()
        bus.attach(BadClose(), ["global"])
        report = bus.finish(5)

        assert 1 == report.handlers["bad_close"].errors
        assert "disk gone" in capfd.readouterr().err


class TestEventBusObject:
    def test_attach_specs_scopes_handlers_and_detach(self) -> None:
        """gg.EventBus takes handler specs, exposes scopes/handlers, forgets a fully detached one."""
        bus = gg.EventBus()
        bus.attach([MinimalHandler().to_dict()], scopes=["train", "eval"])

        assert {"train": {"minimal"}, "eval": {"minimal"}} == bus.scopes
        assert isinstance(bus.handlers["minimal"], MinimalHandler)
        bus.detach("minimal", "train")
        bus.detach("minimal", "eval")
        assert ({}, {}) == (bus.scopes, bus.handlers)

    def test_detach_from_a_scope_it_is_not_on_raises_value_error(self) -> None:
        """detach(name, wrong_scope) raises UnknownScopeError, a ValueError naming both."""
        bus = gg.EventBus()
        bus.attach(MinimalHandler(), ["train"])
        with pytest.raises(ValueError, match="'eval'") as caught:
            bus.detach("minimal", "eval")
        assert isinstance(caught.value, UnknownScopeError)
        bus.finish(5)

    def test_public_detach_checks_the_scope_too(self, mem: MemoryHandler) -> None:
        """gg.detach on a scope the handler was never attached on raises, changing nothing."""
        with pytest.raises(UnknownScopeError):
            gg.detach("mem", "elsewhere")
        gg.get_logger("still").info("routed")
        assert ["routed"] == [e.payload for e in delivered(mem)]

    def test_emit_takes_a_plain_dict(self) -> None:
        """An event given as a dict (robo-goggles' layout, extra keys ignored) is delivered."""
        bus = gg.EventBus()
        handler = MemoryHandler(name="m")
        bus.attach(handler, ["s"])
        bus.emit(
            {"kind": "log", "scope": "s", "payload": "p", "msg": "p", "data": {}, "timestamp": 1.0}
        )
        bus.emit({"kind": "log", "scope": "nobody", "payload": "q"})
        bus.finish(5)

        assert ["p"] == [e.payload for e in handler.events]


class TestCallForms:
    def test_async_mode_false_has_delivered_on_return(self, mem: MemoryHandler) -> None:
        """async_mode=False on a text or data call returns only after the handler had it."""
        log = gg.get_logger("sync", with_metrics=True)
        log.info("now", async_mode=False)
        assert ["now"] == [e.payload for e in mem.events]
        log.scalar("loss", 1.0, async_mode=False)
        log.image(np.zeros((2, 2), np.uint8), name="img", async_mode=True)
        assert "async_mode" not in delivered(mem)[1].extra

    def test_log_takes_step_time_and_fields(self, mem: MemoryHandler) -> None:
        """log(level, msg, step=, time=, **fields) tags the event; fields land in extra."""
        gg.get_logger("lv").log(gg.WARNING, "m", step=3, time=12.5, epoch=2)

        event = delivered(mem)[0]
        assert (3, 12.5, 2, 30) == (event.step, event.time, event.extra["epoch"], event.level)

    def test_bad_step_on_text_raises(self) -> None:
        """A negative step on a text call raises InvalidPayloadError naming step."""
        with pytest.raises(InvalidPayloadError, match="step"):
            gg.get_logger("lv").info("m", step=-1)

    def test_goggles_async_follows_the_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """gg.GOGGLES_ASYNC reads GOGGLES_ASYNC; a malformed value reads as the default."""
        monkeypatch.setenv("GOGGLES_ASYNC", "0")
        assert gg.GOGGLES_ASYNC is False
        monkeypatch.setenv("GOGGLES_ASYNC", "maybe")
        assert gg.GOGGLES_ASYNC is True

    def test_package_logger_has_a_null_handler(self) -> None:
        """The stdlib loggers 'goggles_io' and 'goggles' carry a NullHandler after import."""
        for name in ("goggles_io", "goggles"):
            handlers = logging.getLogger(name).handlers
            assert any(isinstance(h, logging.NullHandler) for h in handlers)


class TestArtifacts:
    def test_str_is_content_dict_is_serialised_by_format(self, mem: MemoryHandler) -> None:
        """A str is the file's text; a dict becomes JSON or YAML by format; arrays become .npy."""
        log = gg.get_logger("a", with_metrics=True)
        log.artifact("line 1\nline 2", name="notes", format="txt")
        log.artifact({"k": [1, 2]}, name="cfg", format="json")
        log.artifact({"k": {"n": 1}}, name="cfg", format="yaml")
        log.artifact(np.arange(3), name="arr")

        txt, js, ym, arr = (e.payload for e in delivered(mem))
        assert b"line 1\nline 2" == txt
        assert {"k": [1, 2]} == json.loads(js)
        assert {"k": {"n": 1}} == yaml.safe_load(ym)
        assert arr.startswith(b"\x93NUMPY")

    def test_unserialisable_dict_raises(self) -> None:
        """A dict holding an object JSON cannot carry raises InvalidPayloadError at the call."""
        with pytest.raises(InvalidPayloadError, match="serialised"):
            gg.get_logger("a", with_metrics=True).artifact({"x": object()}, format="json")

    def test_storage_writes_the_content_files(self, tmp_path: Path) -> None:
        """LocalStorageHandler writes each artifact as a file holding exactly the content."""
        gg.attach(gg.LocalStorageHandler(path=tmp_path, name="store"), scopes=["global"])
        log = gg.get_logger("a", with_metrics=True)
        log.artifact("col1,col2\n1,2", name="table", format="csv")
        log.artifact({"key": "value"}, name="conf", format="yaml")
        gg.finish(timeout=10)

        folder = tmp_path / "artifacts"
        assert "col1,col2\n1,2" == (folder / "table_0.csv").read_text()
        assert {"key": "value"} == yaml.safe_load((folder / "conf_0.yaml").read_text())


class TestPushRouting:
    def test_arrays_are_routed_by_shape(self, mem: MemoryHandler) -> None:
        """HxW / HxWxC arrays become images, a 1-D array becomes key/i scalars, the rest metrics."""
        gg.get_logger("p", with_metrics=True).push(
            {
                "loss": 0.5,
                "gray": np.zeros((8, 8), np.uint8),
                "rgb": np.zeros((8, 8, 3), np.uint8),
                "logits": np.array([0.1, 0.6, 0.3]),
            },
            step=0,
        )

        events = delivered(mem)
        images = sorted(e.extra["name"] for e in events if e.kind is Kind.IMAGE)
        metrics = [e.payload for e in events if e.kind is Kind.METRIC]
        assert ["gray", "rgb"] == images
        assert [{"loss": 0.5, "logits/0": 0.1, "logits/1": 0.6, "logits/2": 0.3}] == metrics

    def test_all_images_emit_no_empty_metric(self, mem: MemoryHandler) -> None:
        """A push of only images sends no metric event."""
        gg.get_logger("p", with_metrics=True).push({"a": np.zeros((4, 4), np.uint8)}, step=2)
        assert [Kind.IMAGE] == [e.kind for e in delivered(mem)]

    def test_a_3d_array_that_is_no_image_raises(self) -> None:
        """A (2, 2, 7) array is neither image nor vector: InvalidPayloadError names the key."""
        with pytest.raises(InvalidPayloadError, match="cube"):
            gg.get_logger("p", with_metrics=True).push({"cube": np.zeros((2, 2, 7))}, step=0)


def test_class_level_logger_works_after_a_later_attach(mem: MemoryHandler) -> None:
    """A logger made before attach() (e.g. at class scope) delivers from another thread."""
    log = gg.get_logger("early")
    gg.finish(timeout=5)
    gg.attach(mem, scopes=["global"])
    thread = threading.Thread(target=log.info, args=("late",))
    thread.start()
    thread.join(10)
    assert ["late"] == [e.payload for e in delivered(mem)]


def test_get_bus_says_where_handlers_run() -> None:
    """gg.get_bus() is the active bus; in-process its is_host is True."""
    bus = gg.get_bus()
    assert isinstance(bus, gg.EventBus) and bus.is_host


def test_private_integrations_path_of_robo_goggles_examples() -> None:
    """robo-goggles' own example imports handlers from goggles._core.integrations."""
    from goggles_io._core.integrations import ConsoleHandler, LocalStorageHandler

    assert (ConsoleHandler, LocalStorageHandler) == (gg.ConsoleHandler, gg.LocalStorageHandler)


class TestRoboGogglesModules:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [(1, True), (1.0, True), (True, True), (2**70, True), (np.int64(3), True), (1.5, False),
         ("1", False), (None, False), (float("nan"), False)],
    )  # fmt: skip
    def test_validation_is_int(self, value: object, expected: bool) -> None:
        """goggles.validation.is_int: whole real numbers only."""
        assert expected == gg.validation.is_int(value)

    @pytest.mark.parametrize(
        ("number", "multiple", "expected"),
        [(5, 4, 8), (8, 4, 8), (0, 4, 0), (-3, 4, 0), (5.5, 2, 6)],
    )
    def test_validation_round_up_to_multiple(
        self, number: float, multiple: int, expected: int
    ) -> None:
        """round_up_to_multiple gives the smallest multiple >= number."""
        assert expected == gg.validation.round_up_to_multiple(number, multiple)

    def test_round_up_to_a_zero_multiple_raises(self) -> None:
        """A zero multiple raises ZeroDivisionError, as robo-goggles."""
        with pytest.raises(ZeroDivisionError):
            gg.validation.round_up_to_multiple(5, 0)

    def test_types_and_shutdown_modules_hold_robo_goggles_names(self) -> None:
        """goggles.types and goggles.shutdown are modules with the event and GracefulShutdown."""
        assert (gg.Event, gg.Kind, np.ndarray) == (gg.types.Event, gg.types.Kind, gg.types.Image)
        assert gg.GracefulShutdown is gg.shutdown.GracefulShutdown

    def test_loggers_are_data_loggers(self) -> None:
        """A metrics logger is a gg.DataLogger; a text logger is not."""
        assert isinstance(gg.get_logger("d", with_metrics=True), gg.DataLogger)
        assert not isinstance(gg.get_logger("t"), gg.DataLogger)

    def test_star_import_gives_filters_and_aliases(self) -> None:
        """from goggles import * binds filters and the array aliases (all in __all__)."""
        space: dict[str, Any] = {}
        exec("from goggles_io import *", space)

        assert {"filters", "Image", "Metrics", "Trajectories", "VectorField"} <= space.keys()

    def test_graceful_shutdown_stop_is_settable(self) -> None:
        """gs.stop = True ends a while-not-stop loop without a signal; False clears it."""
        with gg.GracefulShutdown() as gs:
            gs.stop = True
            first = gs.stop
            gs.stop = False

        assert (True, False) == (first, gs.stop)

    def test_trace_on_error_takes_the_scope_first(self, mem: MemoryHandler) -> None:
        """@trace_on_error("global.train") logs on that scope (robo-goggles' positional)."""

        @gg.trace_on_error("global.train")
        def fail() -> None:
            raise KeyError("x")

        with pytest.raises(KeyError):
            fail()

        assert ["global.train"] == [e.scope for e in delivered(mem)]

    def test_event_bus_shutdown_closes_the_handlers(self) -> None:
        """EventBus.shutdown(timeout) delivers and closes, as finish does."""
        bus = gg.EventBus()
        bus.attach(MinimalHandler(), ["global"])
        bus.emit(gg.Event(kind=Kind.LOG, scope="global", payload="last", level=20))
        bus.shutdown(timeout=5)

        assert ["last", "closed"] == MinimalHandler.seen

    def test_wandb_handler_class_constants(self) -> None:
        """WandBHandler.GLOBAL_SCOPE and the class-level names match robo-goggles."""
        pytest.importorskip("wandb")

        assert ("global", "wandb", "goggles.console") == (
            gg.WandBHandler.GLOBAL_SCOPE, gg.WandBHandler.name, gg.ConsoleHandler.name,
        )  # fmt: skip
