"""The handler registry and the BaseHandler spec."""

from __future__ import annotations

import pytest

import goggles_io as gg
from goggles_io.exceptions import (
    HandlerNotRegisteredError,
    InvalidNameError,
    MethodNotAllowedError,
)
from goggles_io.handlers.base import (
    BaseHandler,
    Handler,
    check_remote_method,
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


@gg.register_handler
class WithKey(BaseHandler):
    remote_methods = frozenset({"record_config"})

    def __init__(self, name: str | None = None, level: int = 0, token: str | None = None) -> None:
        super().__init__(name=name, level=level)
        self.token = token

    def handle(self, event: gg.Event) -> None:
        return None

    def record_config(self, mapping: dict[str, object]) -> None:
        return None

    def secrets(self) -> dict[str, str]:
        return {} if self.token is None else {"token": self.token}


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


class TestSecretsInSpec:
    def test_secret_travels_under_secrets_and_rebuilds(self) -> None:
        """The secret is in spec['secrets'], not in data, and from_dict passes it back."""
        spec = WithKey(name="w", token="s3cr3t-value").to_dict()
        rebuilt = handler_from_dict(spec)

        assert "token" not in spec["data"]
        assert "s3cr3t-value" == rebuilt.token  # type: ignore[attr-defined]

    def test_spec_prints_secret_redacted(self) -> None:
        """str() and repr() of a spec show <redacted> in place of the secret."""
        spec = WithKey(name="w", token="s3cr3t-value").to_dict()

        assert "s3cr3t-value" not in str(spec) + repr(spec)
        assert "<redacted>" in str(spec)

    def test_no_secret_no_secrets_part(self) -> None:
        """A handler without secrets has a spec without a secrets key."""
        assert "secrets" not in WithKey(name="w").to_dict()


class TestRemoteMethods:
    def test_listed_method_allowed(self) -> None:
        """A method in remote_methods passes the check."""
        assert "record_config" == check_remote_method(WithKey, "record_config")

    def test_unlisted_method_refused_naming_allowed(self) -> None:
        """Any other method (even a public one) is refused, listing what is allowed."""
        with pytest.raises(MethodNotAllowedError, match=r"'handle'.*\['record_config'\]"):
            check_remote_method(WithKey, "handle")

    def test_base_handler_allows_nothing(self) -> None:
        """The default allow-list is empty."""
        with pytest.raises(MethodNotAllowedError):
            check_remote_method(MyHandler, "flush")
