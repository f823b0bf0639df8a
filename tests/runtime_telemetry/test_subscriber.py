"""Subscriber: a logging.Handler that dispatches schemas by class and contains its own errors."""

from __future__ import annotations

import logging
import threading

import attrs
import pytest

from runtime_telemetry import (
    Subscriber,
    TelemetryEvent,
    TelemetrySchema,
    TelemetrySnapshot,
    configure,
    get_telemetry,
    receives,
)
from runtime_telemetry.exceptions import TelemetryTypeError, TelemetryValueError


@attrs.frozen(kw_only=True)
class SubTestMoved(TelemetryEvent):
    joint: str = "elbow"


@attrs.frozen(kw_only=True)
class SubTestMovedFast(SubTestMoved):
    speed: float = 1.0


@attrs.frozen(kw_only=True)
class SubTestGrasped(TelemetryEvent):
    pass


@attrs.frozen(kw_only=True)
class SubTestFrame(TelemetrySnapshot):
    pass


class Recorder(Subscriber):
    def __init__(self) -> None:
        super().__init__()
        self.seen: list[tuple[str, TelemetrySchema]] = []
        self.threads: list[threading.Thread] = []

    def on_event(self, schema: TelemetrySchema) -> None:
        self.threads.append(threading.current_thread())
        self.seen.append(("on_event", schema))


class Typed(Recorder):
    @receives(SubTestMoved)
    def moved(self, event: SubTestMoved) -> None:
        self.seen.append(("moved", event))

    @receives(SubTestMovedFast)
    def moved_fast(self, event: SubTestMovedFast) -> None:
        self.seen.append(("moved_fast", event))


class Failing(Subscriber):
    def on_event(self, schema: TelemetrySchema) -> None:
        raise RuntimeError("subscriber bug")


@pytest.fixture(autouse=True)
def _enabled() -> None:
    configure({"telemetry": "INFO", "snapshots": "TRACE"})


emitter = get_telemetry("robot.arm")


class TestDelivery:
    def test_on_event_receives_emitted_events(self) -> None:
        """An emitted event arrives at on_event as the same object."""
        recorder = Recorder().subscribe()
        event = SubTestGrasped()

        emitter.emit(event)

        assert [("on_event", event)] == recorder.seen

    def test_runs_in_the_emitting_thread(self) -> None:
        """A plain Subscriber is synchronous: its callback runs in the emitter's thread."""
        recorder = Recorder().subscribe()

        emitter.emit(SubTestGrasped())

        assert [threading.current_thread()] == recorder.threads

    def test_default_subscription_excludes_snapshots(self) -> None:
        """subscribe() with no names listens to events only."""
        recorder = Recorder().subscribe()

        emitter.snapshot(SubTestFrame())

        assert [] == recorder.seen

    def test_snapshots_arrive_when_subscribed(self) -> None:
        """subscribe('snapshots') delivers snapshots."""
        recorder = Recorder().subscribe("snapshots")
        frame = SubTestFrame()

        emitter.snapshot(frame)

        assert [("on_event", frame)] == recorder.seen

    def test_subscribe_to_one_module(self) -> None:
        """A subscriber on telemetry.robot.arm does not see telemetry.robot.leg."""
        recorder = Recorder().subscribe("telemetry.robot.arm")

        get_telemetry("robot.leg").emit(SubTestGrasped())

        assert [] == recorder.seen

    def test_subscribe_returns_the_subscriber(self) -> None:
        """subscribe() returns self, so construction and attachment chain."""
        subscriber = Subscriber()

        assert subscriber is subscriber.subscribe()

    def test_plain_log_records_are_ignored(self) -> None:
        """A string logged on a telemetry logger is not handed to callbacks."""
        recorder = Recorder().subscribe()

        logging.getLogger("telemetry.robot.arm").warning("plain text")

        assert [] == recorder.seen


class TestDispatch:
    def test_registered_method_receives_its_class(self) -> None:
        """@receives(SubTestMoved) routes SubTestMoved to that method."""
        typed = Typed().subscribe()
        event = SubTestMoved()

        emitter.emit(event)

        assert [("moved", event)] == typed.seen

    def test_most_specific_registration_wins(self) -> None:
        """A subclass with its own receiver goes there, not to the base's receiver."""
        typed = Typed().subscribe()
        event = SubTestMovedFast()

        emitter.emit(event)

        assert [("moved_fast", event)] == typed.seen

    def test_subclass_without_receiver_uses_the_base_receiver(self) -> None:
        """Dispatch walks the schema's MRO, so subclasses reach a base class receiver."""

        class OnlyBase(Recorder):
            @receives(SubTestMoved)
            def moved(self, event: SubTestMoved) -> None:
                self.seen.append(("moved", event))

        subscriber = OnlyBase().subscribe()
        event = SubTestMovedFast()

        emitter.emit(event)

        assert [("moved", event)] == subscriber.seen

    def test_unclaimed_events_go_to_on_event(self) -> None:
        """A schema no method receives falls back to on_event."""
        typed = Typed().subscribe()
        event = SubTestGrasped()

        emitter.emit(event)

        assert [("on_event", event)] == typed.seen

    def test_receives_rejects_non_schema_types(self) -> None:
        """@receives(int) raises TelemetryTypeError (a TypeError)."""
        with pytest.raises(TelemetryTypeError, match="int"):
            receives(int)  # type: ignore[arg-type]

    def test_receives_needs_a_type(self) -> None:
        """@receives() with no classes raises TelemetryTypeError."""
        with pytest.raises(TelemetryTypeError):
            receives()


class TestErrors:
    def test_exception_never_reaches_the_emitter(self) -> None:
        """A failing callback is counted; emit() returns normally."""
        failing = Failing().subscribe()

        emitter.emit(SubTestGrasped())
        emitter.emit(SubTestGrasped())

        assert 2 == failing.errors

    def test_first_exception_is_reported_once(self, caplog: pytest.LogCaptureFixture) -> None:
        """Only the first failure is logged, with its traceback, on runtime_telemetry."""
        Failing().subscribe()
        caplog.set_level(logging.WARNING, logger="runtime_telemetry")

        for _ in range(3):
            emitter.emit(SubTestGrasped())

        reports = [r for r in caplog.records if r.name == "runtime_telemetry"]
        assert (1, "subscriber bug") == (len(reports), str(reports[0].exc_info[1]))

    def test_close_summarises_the_errors(self, caplog: pytest.LogCaptureFixture) -> None:
        """close() reports the total when more than one callback raised."""
        failing = Failing().subscribe()
        emitter.emit(SubTestGrasped())
        emitter.emit(SubTestGrasped())
        caplog.clear()

        failing.close()

        assert ["2 callbacks raised in total"] == [
            r.getMessage().split(": ", 1)[1] for r in caplog.records
        ]


class TestLifecycle:
    def test_close_detaches(self) -> None:
        """After close() the subscriber receives nothing and is off the logger."""
        recorder = Recorder().subscribe()
        recorder.close()

        emitter.emit(SubTestGrasped())

        assert ([], False) == (
            recorder.seen,
            recorder in logging.getLogger("telemetry").handlers,
        )

    def test_close_is_idempotent(self) -> None:
        """A second close() is harmless."""
        recorder = Recorder().subscribe()
        recorder.close()
        recorder.close()

        assert recorder not in logging.getLogger("telemetry").handlers

    def test_context_manager_closes(self) -> None:
        """Leaving a with block closes the subscriber."""
        with Recorder().subscribe() as recorder:
            pass

        assert recorder not in logging.getLogger("telemetry").handlers

    def test_subscribe_after_close_raises(self) -> None:
        """A closed subscriber refuses to subscribe again."""
        recorder = Recorder()
        recorder.close()

        with pytest.raises(TelemetryValueError, match="closed"):
            recorder.subscribe()

    @pytest.mark.parametrize("name", ["", "robot.arm", "telemetry_x", 5])
    def test_subscribe_outside_the_roots_raises(self, name: object) -> None:
        """Only telemetry/snapshots logger names are accepted."""
        with pytest.raises(TelemetryValueError, match="logger_names"):
            Subscriber().subscribe(name)  # type: ignore[arg-type]


def test_receive_delivers_like_a_record_under_the_lock() -> None:
    """``receive`` routes by class as ``emit`` does, holding the handler's lock."""
    from runtime_telemetry.events import LearningModuleStep, MostLikelyHypothesis

    class Steps(Subscriber):
        def __init__(self) -> None:
            super().__init__()
            self.got: list[tuple[str, bool]] = []

        @receives(LearningModuleStep)
        def _step(self, event: LearningModuleStep) -> None:
            self.got.append(("step", self.lock._is_owned()))  # type: ignore[attr-defined]

        def on_event(self, schema: TelemetrySchema) -> None:
            self.got.append((schema.kind, self.lock._is_owned()))  # type: ignore[attr-defined]

    sub = Steps()
    sub.receive(LearningModuleStep(lm_id="lm_0", step=1, possible_matches=("g0",)))
    sub.receive(
        MostLikelyHypothesis(lm_id="lm_0", step=1, graph_id="g0", location=(0, 0, 0),
                             rotation=(1, 0, 0, 0), evidence=1.0)
    )  # fmt: skip
    assert [("step", True), ("most_likely_hypothesis", True)] == sub.got


def test_accepts_tells_which_classes_reach_a_callback() -> None:
    """A ``@receives`` class or an overridden ``on_event``: accepted; the default ``on_event``
    (which ignores the schema): not."""
    from runtime_telemetry.events import LearningModuleStep, MostLikelyHypothesis

    class Steps(Subscriber):
        @receives(LearningModuleStep)
        def _step(self, event: LearningModuleStep) -> None:
            pass

    class Everything(Subscriber):
        def on_event(self, schema: TelemetrySchema) -> None:
            pass

    steps, everything = Steps(), Everything()
    assert (True, False) == (steps.accepts(LearningModuleStep), steps.accepts(MostLikelyHypothesis))
    assert everything.accepts(MostLikelyHypothesis)
