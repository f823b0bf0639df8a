"""What a worker process is told, as plain data: which runtime to build and which episode to run.

Nothing crosses the process boundary but JSON: the runtime is named by its import path
(``"package.module:factory"``) and built in the worker from plain keyword arguments, episodes
are keyword arguments of the runtime's episode method, and the runtime's learned memory is
whatever plain data its ``dump_memory()`` returns. No pickle, and no import of the
experiment's ``__main__`` in the worker.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Callable, Mapping
from typing import Any

import attrs

from experiment_telemetry.exceptions import ExperimentTypeError, ExperimentValueError

__all__ = ["RuntimeSpec", "check_plain"]


def check_plain(value: object, what: str) -> Any:
    """Return ``value`` if it survives a JSON round trip unchanged in kind, else raise.

    Raises:
        ExperimentTypeError: ``value`` holds something JSON cannot carry (an object, a set).
    """
    try:
        json.dumps(value)
    except (TypeError, ValueError) as exc:
        msg = (
            f"{what} must be plain data (dict/list/str/int/float/bool/None) (got {value!r}: {exc})."
        )
        raise ExperimentTypeError(msg, value) from None
    return value


def _check_factory(_instance: object, _attribute: object, value: str) -> None:
    module, sep, name = value.partition(":") if isinstance(value, str) else ("", "", "")
    if not sep or not module or not name or module == "__main__":
        msg = (
            f"factory must be an import path 'package.module:callable' outside __main__ "
            f"(got {value!r}); worker processes build the runtime by importing it."
        )
        raise ExperimentValueError(msg, value)


def _plain_kwargs(value: Mapping[str, Any]) -> dict[str, Any]:
    return dict(check_plain(dict(value), "RuntimeSpec.kwargs"))


@attrs.frozen(kw_only=True)
class RuntimeSpec:
    """How a worker process builds the runtime and drives it, in plain data.

    The runtime object must have ``episode_method`` (called with each episode's keyword
    arguments) and, for episodes run in parallel from one trained memory, ``dump_memory()``
    returning plain data and ``load_memory(memory)`` taking it back.

    Raises:
        ExperimentValueError: ``factory`` is not ``"module:callable"`` (or names ``__main__``).
        ExperimentTypeError: ``kwargs`` is not plain data.
    """

    factory: str = attrs.field(validator=_check_factory)
    """``"package.module:callable"`` returning the runtime."""
    kwargs: Mapping[str, Any] = attrs.field(factory=dict, converter=_plain_kwargs)
    episode_method: str = "run_episode"

    def to_dict(self) -> dict[str, Any]:
        """The spec as JSON-ready data (what the worker receives)."""
        return {
            "factory": self.factory,
            "kwargs": dict(self.kwargs),
            "episode_method": self.episode_method,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> RuntimeSpec:
        """Rebuild a spec from ``to_dict`` output."""
        return cls(
            factory=data["factory"],
            kwargs=data.get("kwargs") or {},
            episode_method=data.get("episode_method", "run_episode"),
        )

    def build(self) -> Any:
        """Import the factory and call it with ``kwargs`` (in the worker)."""
        module, _, name = self.factory.partition(":")
        target: Callable[..., Any] = importlib.import_module(module)  # type: ignore[assignment]
        for part in name.split("."):
            target = getattr(target, part)
        return target(**self.kwargs)
