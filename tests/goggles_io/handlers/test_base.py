"""The handler registry and the BaseHandler spec."""

from __future__ import annotations

import pytest

import goggles_io as gg
from goggles_io.exceptions import HandlerNotRegisteredError, InvalidNameError
from goggles_io.handlers.base import (
    BaseHandler,
    Handler,
    get_handler_class,
    handler_from_dict,
    handler_key,
)
from goggles_io.testing import MemoryHandler


class MyHandler(BaseHandler):
    def handle(self, event: gg.Event) -> None:
        return None


class Other:
    class MyHandler(BaseHandler):
        def handle(self, event: gg.Event) -> None:
            return None


class Unregistered(BaseHandler):
    def handle(self, event: gg.Event) -> None:
        return None


class TestRegistry:
    def test_same_class_name_in_two_places_does_not_collide(self) -> None:
        """Two MyHandler classes are registered under distinct module:qualname keys."""
        gg.register_handler(MyHandler)
        gg.register_handler(Other.MyHandler)

        assert get_handler_class(handler_key(MyHandler)) is MyHandler
        assert get_handler_class(handler_key(Other.MyHandler)) is Other.MyHandler

    def test_unregistered_class_raises_with_hint(self) -> None:
        """Rebuilding a spec of an unregistered class raises HandlerNotRegisteredError."""
        with pytest.raises(HandlerNotRegisteredError, match="register_handler"):
            handler_from_dict(Unregistered(name="u").to_dict())

    def test_spec_rebuilds_handler(self) -> None:
        """handler_from_dict(h.to_dict()) gives an equal configuration of the same class."""
        handler = MemoryHandler(name="m", level=gg.ERROR)

        rebuilt = handler_from_dict(handler.to_dict())

        assert (MemoryHandler, handler.to_dict()) == (type(rebuilt), rebuilt.to_dict())

    def test_bare_class_name_resolves_when_unique(self) -> None:
        """A robo-goggles style spec naming just 'ConsoleHandler' still resolves."""
        assert gg.ConsoleHandler is get_handler_class("ConsoleHandler")

    def test_register_rejects_instances(self) -> None:
        """register_handler(instance) raises TypeError."""
        with pytest.raises(TypeError, match="class"):
            gg.register_handler(MyHandler())  # type: ignore[arg-type]


class TestBaseHandler:
    def test_satisfies_protocol(self) -> None:
        """Built-in handlers are Handler protocol instances."""
        assert isinstance(gg.NoOpHandler(), Handler)
        assert isinstance(gg.ConsoleHandler(), Handler)

    def test_empty_name_is_rejected(self) -> None:
        """name='' raises InvalidNameError."""
        with pytest.raises(InvalidNameError):
            MyHandler(name="")

    def test_spec_values_are_plain(self) -> None:
        """to_dict() holds only builtins: cls key and data kwargs."""
        assert {
            "cls": "goggles_io.handlers.noop:NoOpHandler",
            "data": {"name": "n", "level": 0},
        } == gg.NoOpHandler(name="n").to_dict()
