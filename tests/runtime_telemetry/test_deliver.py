"""The record-free emit (ADR 0078) delivers exactly what ``makeRecord`` + ``Logger.handle`` did.

The reference below is the emitter before ADR 0078, line for line: a record located at the
caller, handed to ``Logger.handle``. Both run the same generated programs (logger trees,
handlers of every kind, levels, filters, ``propagate``, disabled loggers, ``logging.disable``,
and changes to all of these between emits and from inside a callback) and must leave the same
trace: the same handlers, in the same order, given the same schema objects, and the handlers
that read records the same name, level, message and caller location.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from logging_trees import (
    KINDS,
    LEVELS,
    Plain,
    Records,
    Seen,
    TreeTestGrasped,
    TreeTestMoved,
    make_handler,
    reset_loggers,
)
from runtime_telemetry import TelemetryEvent, TelemetrySchema, get_telemetry

_NAMES = ("telemetry.deliver_test", "telemetry.deliver_test.a", "telemetry.deliver_test.a.b")
_EMITTERS = ("deliver_test", "deliver_test.a", "deliver_test.a.b")


_KINDS = [*KINDS, "own-emit", "adder"]
_at = st.integers(0, 2)
_ops = st.one_of(
    st.tuples(st.just("emit"), _at, st.sampled_from(LEVELS[1:]), st.booleans()),
    st.tuples(st.just("add"), _at, st.sampled_from(_KINDS), st.sampled_from(LEVELS)),
    st.tuples(st.just("remove"), _at, st.integers(0, 3)),
    st.tuples(st.just("level"), _at, st.sampled_from(LEVELS)),
    st.tuples(st.just("handler-level"), _at, st.integers(0, 3), st.sampled_from(LEVELS)),
    st.tuples(st.just("propagate"), _at, st.booleans()),
    st.tuples(st.just("disabled"), _at, st.booleans()),
    st.tuples(st.just("refuse"), _at, st.booleans()),
    st.tuples(st.just("disable-all"), st.sampled_from([0, logging.DEBUG, logging.INFO])),
    st.tuples(st.just("root-null"), st.booleans()),
)


def _reference_emit(name: str) -> Callable[[TelemetrySchema, int], None]:
    """The emitter before ADR 0078: a record at the caller's frame, then ``Logger.handle``."""
    logger = logging.getLogger(f"telemetry.{name}")

    def emit(event: TelemetrySchema, level: int) -> None:
        if logger.isEnabledFor(level):
            frame = sys._getframe(1)
            code = frame.f_code
            logger.handle(
                logger.makeRecord(
                    logger.name, level, code.co_filename, frame.f_lineno, event, (), None,
                    code.co_name,
                )
            )  # fmt: skip

    return emit


def _fast_emit(name: str) -> Callable[[TelemetrySchema, int], None]:
    emitter = get_telemetry(name)

    def emit(event: TelemetrySchema, level: int) -> None:
        emitter.emit(event, level, stacklevel=2)  # type: ignore[arg-type]

    return emit


@contextmanager
def _clean_tree() -> Iterator[None]:
    root = logging.getLogger("telemetry")
    saved_root = list(root.handlers)
    saved_last_resort = logging.lastResort
    try:
        yield
    finally:
        logging.lastResort = saved_last_resort
        logging.disable(logging.NOTSET)
        root.handlers[:] = saved_root
        reset_loggers(_NAMES)


def _run(program: list[tuple[Any, ...]], make: Callable[[str], Any]) -> Seen:
    """Run ``program`` on a fresh tree, emitting with ``make``'s emitters; the trace."""
    seen: Seen = []
    with _clean_tree():
        logging.lastResort = Records(-1, seen)
        emitters = [make(name) for name in _EMITTERS]
        loggers = [logging.getLogger(name) for name in _NAMES]
        root = logging.getLogger("telemetry")
        tag = 0
        for op, *args in program:
            if op == "emit":
                at, level, moved = args
                stamp = float(len(seen))  # the same events in both runs
                event: TelemetryEvent = (
                    TreeTestMoved(joint=f"j{tag}", timestamp=stamp)
                    if moved
                    else TreeTestGrasped(timestamp=stamp)
                )
                emitters[at](event, level)  # the same line for both emitters
            elif op == "add":
                at, kind, level = args
                tag += 1
                loggers[at].addHandler(make_handler(kind, tag, level, seen, loggers[at]))
            elif op == "remove":
                at, index = args
                if index < len(loggers[at].handlers):
                    loggers[at].removeHandler(loggers[at].handlers[index])
            elif op == "level":
                loggers[args[0]].setLevel(args[1])
            elif op == "handler-level":
                at, index, level = args
                if index < len(loggers[at].handlers):
                    loggers[at].handlers[index].setLevel(level)
            elif op == "propagate":
                loggers[args[0]].propagate = args[1]
            elif op == "disabled":
                loggers[args[0]].disabled = args[1]
            elif op == "refuse":
                loggers[args[0]].filters[:] = [lambda record: False] if args[1] else []
            elif op == "disable-all":
                logging.disable(args[0])
            elif op == "root-null":  # the telemetry root without its NullHandler: last resort
                root.handlers[:] = [h for h in root.handlers if type(h) is not logging.NullHandler]
                if args[0]:
                    root.addHandler(logging.NullHandler())
    return seen


class TestRecordFreeEmit:
    @settings(max_examples=400, deadline=None)
    @given(program=st.lists(_ops, min_size=1, max_size=25))
    def test_the_same_handlers_get_the_same_events_in_the_same_order(
        self, program: list[tuple[Any, ...]]
    ) -> None:
        """Any mix of handlers, levels, filters and switches, changed between emits and from
        inside a callback: the trace of the record-free emit is the stdlib emit's."""
        program = [*program, ("emit", 2, logging.INFO, True)]
        assert _run(program, _fast_emit) == _run(program, _reference_emit)

    def test_a_stdlib_handler_anywhere_up_the_tree_gets_a_located_record(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """pytest's caplog (on the root logger, reached once ``telemetry`` propagates) gets
        records pointing at the emitting line, while a subscriber gets the schema itself."""
        seen: Seen = []
        with _clean_tree():
            root = logging.getLogger("telemetry")
            root.propagate = True
            plain = Plain(1, seen).subscribe(_NAMES[1])
            try:
                event = TreeTestMoved()
                with caplog.at_level(logging.INFO, logger="telemetry"):
                    get_telemetry(_EMITTERS[2]).emit(event); line = sys._getframe().f_lineno  # fmt: skip  # noqa: E702
            finally:
                plain.close()
                root.propagate = False
        assert [(1, "plain", event)] == seen
        [record] = [r for r in caplog.records if r.msg is event]
        assert (record.lineno, record.funcName, record.name) == (
            line,
            "test_a_stdlib_handler_anywhere_up_the_tree_gets_a_located_record",
            _NAMES[2],
        )

    def test_a_record_factory_or_a_logger_filter_keeps_the_stdlib_path(self) -> None:
        """A custom record factory sees every event, as it did (it may stamp or count)."""
        made: list[object] = []
        saved = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = saved(*args, **kwargs)
            made.append(record.msg)
            return record

        seen: Seen = []
        with _clean_tree():
            plain = Plain(1, seen).subscribe(_NAMES[0])
            logging.setLogRecordFactory(factory)
            try:
                event = TreeTestGrasped()
                get_telemetry(_EMITTERS[0]).emit(event)
            finally:
                logging.setLogRecordFactory(saved)
                plain.close()
        assert made == [event]
        assert seen == [(1, "plain", event)]
