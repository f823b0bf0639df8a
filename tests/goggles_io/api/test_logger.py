"""Loggers: text API, bind, per-metric steps, data validation, copy-on-log, caller info."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

import goggles_io as gg
from goggles_io import Kind
from goggles_io.exceptions import (
    ConfigurationError,
    InvalidLevelError,
    InvalidNameError,
    InvalidPayloadError,
)
from goggles_io.testing import MemoryHandler, delivered


class TestGetLogger:
    def test_with_metrics_returns_goggles_logger(self) -> None:
        """with_metrics=True gives a GogglesLogger, otherwise a TextLogger."""
        assert isinstance(gg.get_logger("a", with_metrics=True), gg.GogglesLogger)
        assert type(gg.get_logger("a")) is gg.TextLogger

    def test_unknown_level_is_rejected(self) -> None:
        """An unknown level name raises InvalidLevelError naming the value."""
        with pytest.raises(InvalidLevelError, match="'LOUD'"):
            gg.get_logger("a", level="LOUD")

    def test_empty_name_is_rejected(self) -> None:
        """An empty logger name raises InvalidNameError."""
        with pytest.raises(InvalidNameError):
            gg.get_logger("")

    def test_malformed_env_names_the_variable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """GOGGLES_ASYNC=maybe raises ConfigurationError naming GOGGLES_ASYNC."""
        monkeypatch.setenv("GOGGLES_ASYNC", "maybe")

        with pytest.raises(ConfigurationError, match="GOGGLES_ASYNC"):
            gg.get_logger("a")


class TestTextLogger:
    def test_percent_args_are_applied(self, mem: MemoryHandler) -> None:
        """info('%s=%d', 'a', 1) produces 'a=1'."""
        gg.get_logger("t").info("%s=%d", "a", 1)

        assert ["a=1"] == [e.payload for e in delivered(mem)]

    def test_bad_format_args_keep_the_message(self, mem: MemoryHandler) -> None:
        """A %-format mismatch does not raise and keeps message and args in the text."""
        gg.get_logger("t").info("%d apples", "many")

        assert "'%d apples'" in delivered(mem)[0].payload

    def test_levels_are_recorded(self, mem: MemoryHandler) -> None:
        """Each method emits at its own level, log() takes a name or an int."""
        log = gg.get_logger("t")
        log.debug("d")
        log.info("i")
        log.warning("w")
        log.error("e")
        log.critical("c")
        log.log("INFO", "n")

        assert [10, 20, 30, 40, 50, 20] == [e.level for e in delivered(mem)]

    def test_log_with_unknown_level_raises(self) -> None:
        """log(level=-1, ...) raises InvalidLevelError."""
        with pytest.raises(InvalidLevelError):
            gg.get_logger("t").log(-1, "x")

    def test_exception_carries_traceback(self, mem: MemoryHandler) -> None:
        """exception() inside except attaches the formatted traceback in extra."""
        log = gg.get_logger("t")
        try:
            raise KeyError("missing")
        except KeyError:
            log.exception("failed")

        assert "KeyError: 'missing'" in delivered(mem)[0].extra["exc_text"]

    def test_exc_info_accepts_exception_instance(self, mem: MemoryHandler) -> None:
        """error(..., exc_info=exc) formats that exception."""
        gg.get_logger("t").error("bad", exc_info=ValueError("v"))

        assert "ValueError: v" in delivered(mem)[0].extra["exc_text"]

    def test_logger_level_filters(self, mem: MemoryHandler) -> None:
        """A logger at WARNING emits no INFO event."""
        log = gg.get_logger("t", level=gg.WARNING)
        log.info("no")
        log.warning("yes")

        assert ["yes"] == [e.payload for e in delivered(mem)]

    def test_event_carries_identity(self, mem: MemoryHandler) -> None:
        """Events carry the logger name, scope, pid and an emission timestamp."""
        import os
        import time

        before = time.time()
        gg.get_logger("who").info("x")
        event = delivered(mem)[0]

        assert ("who", "global", os.getpid()) == (event.logger, event.scope, event.pid)
        assert before <= event.timestamp <= time.time()


class TestBind:
    def test_bind_returns_new_logger(self, mem: MemoryHandler) -> None:
        """bind() leaves the receiver unchanged and the new logger carries the fields."""
        log = gg.get_logger("t")
        bound = log.bind(run="r1")
        log.info("plain")
        bound.info("bound")

        events = delivered(mem)
        assert ({}, {"run": "r1"}) == (log.get_bound(), bound.get_bound())
        assert ("bound" not in events[0].extra, {"run": "r1"}) == (True, events[1].extra["bound"])

    def test_bind_scope_changes_scope_only_of_new_logger(self) -> None:
        """bind(scope=...) returns a logger in that scope; the receiver keeps its scope."""
        log = gg.get_logger("t", with_metrics=True)
        other = log.bind(scope="eval")

        assert ("global", "eval", gg.GogglesLogger) == (log.scope, other.scope, type(other))

    def test_bind_without_scope_keeps_scope(self) -> None:
        """bind(**fields) keeps the current scope."""
        assert "eval" == gg.get_logger("t", scope="eval").bind(a=1).scope


class TestSteps:
    def test_steps_are_tracked_per_metric(self, mem: MemoryHandler) -> None:
        """Each metric counts its own steps from 0 when no step is given."""
        log = gg.get_logger("t", with_metrics=True)
        log.scalar("a", 1.0)
        log.scalar("a", 2.0)
        log.scalar("b", 3.0)
        gg.flush()

        assert [("a", 1.0, 0), ("a", 2.0, 1), ("b", 3.0, 0)] == mem.metrics()

    def test_lower_step_of_another_metric_is_kept(self, mem: MemoryHandler) -> None:
        """eval/acc at step 50 after train/loss at 100 in the same scope is delivered as is."""
        log = gg.get_logger("t", with_metrics=True)
        log.scalar("train/loss", 0.5, step=100)
        log.scalar("eval/acc", 0.9, step=50)
        gg.flush()

        assert [("train/loss", 0.5, 100), ("eval/acc", 0.9, 50)] == mem.metrics()

    def test_implicit_step_follows_last_explicit(self, mem: MemoryHandler) -> None:
        """After step=10 the metric's next implicit step is 11."""
        log = gg.get_logger("t", with_metrics=True)
        log.scalar("a", 1.0, step=10)
        log.scalar("a", 1.0)

        assert [10, 11] == [e.step for e in delivered(mem)]

    def test_negative_step_is_rejected(self) -> None:
        """step=-1 raises InvalidPayloadError."""
        with pytest.raises(InvalidPayloadError, match="step"):
            gg.get_logger("t", with_metrics=True).scalar("a", 1.0, step=-1)

    def test_push_with_step_shares_one_event(self, mem: MemoryHandler) -> None:
        """push({...}, step=3) sends the scalars as one metric event."""
        gg.get_logger("t", with_metrics=True).push({"a": 1, "b": 2.5}, step=3)

        events = delivered(mem)
        assert [({"a": 1, "b": 2.5}, 3)] == [(e.payload, e.step) for e in events]

    def test_push_promotes_images(self, mem: MemoryHandler) -> None:
        """An image-shaped array in push becomes an IMAGE event named by its key."""
        gg.get_logger("t", with_metrics=True).push({"a": 1.0, "img": np.zeros((4, 4, 3), np.uint8)})

        kinds = sorted((e.kind.value, e.extra.get("name")) for e in delivered(mem))
        assert [("image", "img"), ("metric", None)] == kinds

    def test_custom_x_axis_is_declared_per_metric(self, mem: MemoryHandler) -> None:
        """set_x_axis marks the metric's events with the axis name and the x value."""
        log = gg.get_logger("t", with_metrics=True)
        log.set_x_axis("reward", "sim_time")
        log.scalar("reward", 1.0, x=0.25)
        log.scalar("other", 1.0)

        first, second = delivered(mem)
        assert ("sim_time", 0.25) == (first.extra["x_axis"], first.extra["x"])
        assert "x_axis" not in second.extra


class TestScalarInput:
    def test_non_numeric_scalar_raises(self) -> None:
        """scalar('a', 'high') raises InvalidPayloadError naming the metric and value."""
        with pytest.raises(InvalidPayloadError, match=r"'a'.*'high'"):
            gg.get_logger("t", with_metrics=True).scalar("a", "high")

    def test_huge_bad_value_gives_a_short_message(self) -> None:
        """A 10 MB string passed as a scalar is refused with a message of readable length."""
        with pytest.raises(InvalidPayloadError) as info:
            gg.get_logger("t", with_metrics=True).scalar("a", "x" * 10_000_000)

        assert len(str(info.value)) < 500

    def test_non_finite_is_kept_and_flagged(self, mem: MemoryHandler) -> None:
        """NaN and inf are delivered with their names in extra['nonfinite']."""
        log = gg.get_logger("t", with_metrics=True)
        log.scalar("a", float("nan"))
        log.push({"b": math.inf, "c": 1.0}, step=0)

        events = delivered(mem)
        assert (["a"], ["b"]) == (events[0].extra["nonfinite"], events[1].extra["nonfinite"])
        assert math.isnan(events[0].payload["a"])

    def test_numpy_scalars_become_python_numbers(self, mem: MemoryHandler) -> None:
        """np.float32 and 0-d arrays are stored as plain float/int."""
        log = gg.get_logger("t", with_metrics=True)
        log.scalar("a", np.float32(0.5))
        log.scalar("b", np.array(3))
        gg.flush()

        assert [float, int] == [type(value) for _, value, _ in mem.metrics()]

    def test_empty_metric_name_raises(self) -> None:
        """scalar('', 1.0) raises InvalidNameError."""
        with pytest.raises(InvalidNameError):
            gg.get_logger("t", with_metrics=True).scalar("", 1.0)


class TestMedia:
    def test_array_is_copied_at_log_time(self, mem: MemoryHandler) -> None:
        """Mutating the array after image() does not change what the handler received."""
        img = np.zeros((4, 4, 3), np.uint8)
        gg.get_logger("t", with_metrics=True).image(img, name="i", step=0)
        img[:] = 255

        assert 0 == int(delivered(mem)[0].payload.max())

    def test_histogram_is_copied_at_log_time(self, mem: MemoryHandler) -> None:
        """Mutating the values after histogram() does not change the event."""
        values = np.arange(10.0)
        gg.get_logger("t", with_metrics=True).histogram(values, name="h")
        values[:] = -1

        assert 45.0 == float(delivered(mem)[0].payload.sum())

    def test_image_wrong_shape_raises(self) -> None:
        """A (3, 64, 64, 2) array is not an image: InvalidPayloadError with the shape."""
        with pytest.raises(InvalidPayloadError, match=r"\(3, 64, 64, 2\)"):
            gg.get_logger("t", with_metrics=True).image(np.zeros((3, 64, 64, 2), np.uint8))

    def test_image_non_numeric_dtype_raises(self) -> None:
        """A str image raises InvalidPayloadError naming the dtype."""
        with pytest.raises(InvalidPayloadError, match="<U1"):
            gg.get_logger("t", with_metrics=True).image(np.full((4, 4), "a"))

    def test_video_thwc_is_stored_as_tchw(self, mem: MemoryHandler) -> None:
        """A (T, H, W, C) video is delivered as (T, C, H, W) with its fps."""
        gg.get_logger("t", with_metrics=True).video(np.zeros((5, 8, 9, 3), np.uint8), fps=10)

        event = delivered(mem)[0]
        assert ((5, 3, 8, 9), 10.0) == (event.payload.shape, event.extra["fps"])

    def test_video_bad_fps_raises(self) -> None:
        """fps=0 raises InvalidPayloadError."""
        with pytest.raises(InvalidPayloadError, match="fps"):
            gg.get_logger("t", with_metrics=True).video(np.zeros((2, 3, 4, 4), np.uint8), fps=0)

    def test_vector_field_needs_trailing_2_or_3(self) -> None:
        """A field with trailing dimension 4 raises InvalidPayloadError."""
        with pytest.raises(InvalidPayloadError, match="vector_field"):
            gg.get_logger("t", with_metrics=True).vector_field(np.zeros((4, 4, 4)))

    def test_artifact_accepts_bytes_and_paths(self, mem: MemoryHandler) -> None:
        """bytes are kept, a pathlib.Path travels as its str; the name defaults to the basename."""
        log = gg.get_logger("t", with_metrics=True)
        log.artifact(b"abc", name="blob")
        log.artifact(Path("/tmp/model.ckpt"))

        events = delivered(mem)
        assert [b"abc", "/tmp/model.ckpt"] == [e.payload for e in events]
        assert "model.ckpt" == events[1].extra["name"]

    def test_artifact_rejects_other_types(self) -> None:
        """artifact(42) raises InvalidPayloadError."""
        with pytest.raises(InvalidPayloadError, match="artifact"):
            gg.get_logger("t", with_metrics=True).artifact(42)

    def test_table_rows_must_match_columns(self) -> None:
        """A row with the wrong length raises InvalidPayloadError naming the row."""
        with pytest.raises(InvalidPayloadError, match="row 1"):
            gg.get_logger("t", with_metrics=True).table(["a", "b"], [[1, 2], [3]])

    def test_text_event(self, mem: MemoryHandler) -> None:
        """text() emits a TEXT event with its name and step."""
        gg.get_logger("t", with_metrics=True).text("notes", step=4, name="readme")

        event = delivered(mem)[0]
        assert (Kind.TEXT, "notes", 4, "readme") == (
            event.kind,
            event.payload,
            event.step,
            event.extra["name"],
        )


class TestCallerInfo:
    def test_records_caller_file_and_line(self, mem: MemoryHandler) -> None:
        """Events carry the file and line of the logging call."""
        log = gg.get_logger("t", with_metrics=True)
        line = _line() + 1
        log.info("x")
        line2 = _line() + 1
        log.scalar("s", 1.0)

        events = delivered(mem)
        assert [(__file__, line), (__file__, line2)] == [(e.filepath, e.lineno) for e in events]

    def test_can_be_disabled(self, monkeypatch: pytest.MonkeyPatch, mem: MemoryHandler) -> None:
        """GOGGLES_CALLER_INFO=0 leaves filepath and lineno as None."""
        from goggles_io.testing import reset_defaults

        reset_defaults()
        monkeypatch.setenv("GOGGLES_CALLER_INFO", "0")
        mem2 = MemoryHandler(name="m2")
        gg.attach(mem2)
        gg.get_logger("t").info("x")
        gg.flush()

        assert (None, None) == (mem2.events[0].filepath, mem2.events[0].lineno)


def _line() -> int:
    import sys

    return sys._getframe(1).f_lineno
