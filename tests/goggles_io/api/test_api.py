"""goggles_io.call_handler on the in-process bus: allow-list, ordering, errors."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any, ClassVar

import pytest

import goggles_io as gg
from goggles_io import Event
from goggles_io.exceptions import (
    InvalidNameError,
    InvalidPayloadError,
    MethodNotAllowedError,
    UnknownHandlerError,
)
from goggles_io.handlers.base import BaseHandler, register_handler


@register_handler
class ConfigRecorder(BaseHandler):
    """Records events and config calls in one list, with the thread that ran each."""

    remote_methods: ClassVar[frozenset[str]] = frozenset({"record_config"})

    def __init__(self, name: str | None = None, level: int = 0) -> None:
        super().__init__(name=name, level=level)
        self.seen: list[Any] = []
        self.threads: set[str] = set()

    def handle(self, event: Event) -> None:
        self.seen.append(event.payload)

    def record_config(self, mapping: Mapping[str, Any]) -> None:
        self.threads.add(threading.current_thread().name)
        self.seen.append(("config", dict(mapping)))

    def close_everything(self, payload: Any) -> None:
        """Not in remote_methods: must never be reachable by name."""
        self.seen.append(("closed", payload))


class TestCallHandler:
    def test_runs_on_the_handler_lane_in_order_with_events(self) -> None:
        """The call runs on the handler's worker, after the events logged before it."""
        handler = ConfigRecorder(name="rec")
        gg.attach(handler)
        logger = gg.get_logger("t", with_metrics=True)
        logger.scalar("a", 1.0, step=0)
        gg.call_handler("rec", "record_config", {"lr": 0.1})
        logger.scalar("a", 2.0, step=1)
        gg.flush()

        assert [{"a": 1.0}, ("config", {"lr": 0.1}), {"a": 2.0}] == handler.seen
        assert {"goggles_io:rec"} == handler.threads

    def test_reaches_the_registered_instance_not_a_later_one(self) -> None:
        """With first-registration-wins the call goes to the instance the bus kept."""
        kept, ignored = ConfigRecorder(name="rec"), ConfigRecorder(name="rec")
        gg.attach(kept)
        gg.attach(ignored)
        gg.call_handler("rec", "record_config", {"k": "v"})
        gg.flush()

        assert ([("config", {"k": "v"})], []) == (kept.seen, ignored.seen)

    def test_payload_is_copied(self) -> None:
        """Changing the mapping after the call does not change what the handler gets."""
        handler = ConfigRecorder(name="rec")
        gg.attach(handler)
        payload = {"lr": 0.1}
        gg.call_handler("rec", "record_config", payload)
        payload["lr"] = 9.9
        gg.flush()

        assert [("config", {"lr": 0.1})] == handler.seen

    def test_unknown_name_raises(self) -> None:
        """A name nobody attached is an UnknownHandlerError naming it."""
        gg.attach(ConfigRecorder(name="rec"))

        with pytest.raises(UnknownHandlerError, match="'nope'"):
            gg.call_handler("nope", "record_config", {})

    def test_method_outside_allow_list_raises(self) -> None:
        """A public method not in remote_methods is refused and never runs."""
        handler = ConfigRecorder(name="rec")
        gg.attach(handler)

        with pytest.raises(MethodNotAllowedError, match="close_everything"):
            gg.call_handler("rec", "close_everything", None)
        gg.flush()
        assert [] == handler.seen

    @pytest.mark.parametrize("payload", [{"x": object()}, {1: "a"}, {"a": {"b"}}, b"raw"])
    def test_non_builtin_payload_raises(self, payload: Any) -> None:
        """Objects, sets, bytes and non-str keys are refused at the call."""
        gg.attach(ConfigRecorder(name="rec"))

        with pytest.raises(InvalidPayloadError, match="payload must hold only"):
            gg.call_handler("rec", "record_config", payload)

    def test_empty_name_raises(self) -> None:
        """An empty handler name is an InvalidNameError."""
        with pytest.raises(InvalidNameError):
            gg.call_handler("", "record_config", {})

    def test_handler_error_is_counted_not_raised(self, capfd: pytest.CaptureFixture[str]) -> None:
        """A method that raises is counted as an error and reported once on stderr."""
        handler = ConfigRecorder(name="rec")
        handler.record_config = None  # type: ignore[assignment,method-assign]
        gg.attach(handler)
        gg.call_handler("rec", "record_config", {})
        gg.call_handler("rec", "record_config", {})
        report = gg.finish()

        assert 2 == report.handlers["rec"].errors
        assert 1 == capfd.readouterr().err.count("record_config() raised")


class TestIsAttached:
    def test_reports_names_attached_here(self) -> None:
        """is_attached is true for an attached name, false otherwise and before any use."""
        from goggles_io._api.functions import is_attached

        before = is_attached("rec")
        gg.attach(ConfigRecorder(name="rec"))

        assert (False, True, False) == (before, is_attached("rec"), is_attached("other"))
