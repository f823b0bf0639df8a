"""``run.config`` and ``run.summary``: W&B's two mappings, written through to the goggles_io run.

A config key is recorded once in the run's ``config.kv`` / ``config.yaml``
(:meth:`RunContext.set_config`): nested dicts as ``a.b`` keys, values W&B would keep as JSON
but goggles_io's config cannot (a dict inside a list, a path, an object) as their ``str``.
goggles_io keeps a run's summary as the last value of each metric, so a number written to
``summary`` is logged as that metric's point at the run's latest step.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from goggles_io.compat._wandb_values import flatten, number_of
from goggles_io.exceptions import ConfigConflictError

__all__ = ["Config", "Summary", "config_items", "record_into"]

_BAD_KEY = re.compile(r"[^A-Za-z0-9_.\-/]+")
_SCALARS = (str, int, float, bool, type(None))


def _plain(value: Any) -> Any:
    number = number_of(value)
    if number is not None and not isinstance(value, bool):
        return number
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, _SCALARS) for v in value):
        return list(value)
    if hasattr(value, "tolist"):  # a numpy array of numbers
        listed = value.tolist()
        if isinstance(listed, list) and all(isinstance(v, _SCALARS) for v in listed):
            return listed
    return str(value)


def _as_mapping(data: Any) -> Mapping[str, Any]:
    if data is None:
        return {}
    if isinstance(data, argparse.Namespace):
        return vars(data)
    if isinstance(data, Mapping):
        return data
    msg = f"config must be a dict or an argparse.Namespace (got {type(data).__name__}: {data!r})."
    raise TypeError(msg)


def config_items(data: Mapping[str, Any]) -> dict[str, Any]:
    """The flat, plain ``{key: value}`` that goggles_io records for W&B config ``data``."""
    out = {}
    for key, value in flatten(data, sep=".").items():
        out[_BAD_KEY.sub("_", key).strip("_") or "_"] = _plain(value)
    return out


class Config:
    """``wandb.config``: item and attribute access, ``update``; new keys are recorded at once.

    Changing a recorded value raises :class:`~goggles_io.exceptions.ConfigConflictError`, as
    W&B does; with ``allow_val_change=True`` the new value is kept here, and the run's recorded
    config keeps the first (goggles_io records config once, ADR 0007), said once on stderr.
    """

    def __init__(self, record: Callable[[dict[str, Any], bool], None]) -> None:
        object.__setattr__(self, "_items", {})
        object.__setattr__(self, "_record", record)

    def update(self, d: Any = None, allow_val_change: bool = False, **kwargs: Any) -> None:
        """Add (or, with ``allow_val_change``, change) keys; a dict or an ``argparse.Namespace``."""
        items = {**_as_mapping(d), **kwargs}
        if not items:
            return
        self._record(config_items(items), allow_val_change)
        self._items.update(items)

    def setdefaults(self, d: Mapping[str, Any]) -> None:
        """Add the keys of ``d`` not set yet (W&B's ``setdefaults``)."""
        self.update({k: v for k, v in d.items() if k not in self._items})

    def as_dict(self) -> dict[str, Any]:
        return dict(self._items)

    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

    def keys(self) -> Any:
        return self._items.keys()

    def items(self) -> Any:
        return self._items.items()

    def values(self) -> Any:
        return self._items.values()

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __getattr__(self, name: str) -> Any:
        try:
            return self._items[name]
        except KeyError:
            msg = f"config has no key {name!r}; it has {sorted(self._items)[:20]}"
            raise AttributeError(msg) from None

    def __setattr__(self, name: str, value: Any) -> None:
        self.update({name: value})

    def __contains__(self, key: object) -> bool:
        return key in self._items

    def __iter__(self) -> Iterator[str]:
        return iter(self._items)

    def __len__(self) -> int:
        return len(self._items)

    def __repr__(self) -> str:
        return f"Config({self._items!r})"


def record_into(
    set_config: Callable[[dict[str, Any]], None], warn: Callable[[str, str], object]
) -> Callable[[dict[str, Any], bool], None]:
    """A :class:`Config` recorder over ``RunContext.set_config``: key by key when values may
    change, so the keys that are new are still recorded and a changed one is said once."""

    def record(items: dict[str, Any], allow_val_change: bool) -> None:
        if not allow_val_change:
            set_config(items)
            return
        for key, value in items.items():
            try:
                set_config({key: value})
            except ConfigConflictError as exc:
                warn(
                    f"config:{key}",
                    f"config[{key!r}] changed to {value!r} (allow_val_change=True): the run's "
                    f"recorded config keeps {exc.previous!r} (goggles_io records config once)",
                )

    return record


class Summary:
    """``wandb.summary``: the last logged value of each metric, and values set on it.

    A number set here is logged as that metric's point at the run's latest step (goggles_io's
    summary of a run is the last value of each metric: ``open_run(...).summary``, the
    dashboard's ``summary.<metric>`` columns); anything else is kept in ``log.jsonl`` as a
    text event ``summary/<key>``, and said once.
    """

    def __init__(self, write: Callable[[str, Any], None]) -> None:
        object.__setattr__(self, "_write", write)
        object.__setattr__(self, "_set", {})
        object.__setattr__(self, "last", {})  # the run's last logged numbers, by metric

    def update(self, d: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        for key, value in flatten({**(d or {}), **kwargs}).items():
            self._write(key, value)
            self._set[key] = value

    def _merged(self) -> dict[str, Any]:
        return {**self.last, **self._set}

    def as_dict(self) -> dict[str, Any]:
        return self._merged()

    def get(self, key: str, default: Any = None) -> Any:
        return self._merged().get(key, default)

    def keys(self) -> Any:
        return self._merged().keys()

    def items(self) -> Any:
        return self._merged().items()

    def __getitem__(self, key: str) -> Any:
        return self._merged()[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self.update({key: value})

    def __getattr__(self, name: str) -> Any:
        try:
            return self._merged()[name]
        except KeyError:
            raise AttributeError(f"summary has no key {name!r}") from None

    def __setattr__(self, name: str, value: Any) -> None:
        self.update({name: value})

    def __contains__(self, key: object) -> bool:
        return key in self._set or key in self.last

    def __iter__(self) -> Iterator[str]:
        return iter(self._merged())

    def __len__(self) -> int:
        return len(self._merged())

    def __repr__(self) -> str:
        return f"Summary({self._merged()!r})"
