"""``patch()``: torch's and tensorboardX's ``SummaryWriter`` build goggles_io's writer instead.

The original class's ``__new__`` is replaced, so a script or library that imported the class
before ``patch()`` ran (Stable Baselines3 imports it when it is imported) is covered too; a
module not imported yet is patched when it is (an import hook), so torch is never imported
here. Subclasses of the original are left alone (their own methods would be lost). With
``keep_tfevents=True`` the original writer is built as well, in the run directory, and every
call is mirrored to it: TensorBoard pointed at the runs root still shows the run.
"""

from __future__ import annotations

import importlib.abc
import importlib.util
import sys
import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

__all__ = ["TARGETS", "patch", "unpatch"]

TARGETS = ("tensorboardX", "tensorboardX.writer", "torch.utils.tensorboard",
           "torch.utils.tensorboard.writer")  # fmt: skip
"""Modules whose ``SummaryWriter`` class :func:`patch` intercepts."""
_ABSENT = object()
_lock = threading.Lock()
_originals: dict[type, Any] = {}  # patched class -> its own __new__ before (or _ABSENT)
_options: dict[str, Any] = {"active": False, "keep_tfevents": False, "project": "tensorboard",
                            "writer": None}  # fmt: skip


def patch(writer: type, *, keep_tfevents: bool, project: str) -> None:
    """Make the targets' ``SummaryWriter`` build ``writer`` (goggles_io's) instead."""
    with _lock:
        _options.update(active=True, keep_tfevents=bool(keep_tfevents), project=str(project),
                        writer=writer)  # fmt: skip
        for name in TARGETS:
            module = sys.modules.get(name)
            if module is not None:
                _patch_module(module)
        if not any(isinstance(f, _Finder) for f in sys.meta_path):
            sys.meta_path.insert(0, _Finder())


def unpatch() -> None:
    """The original classes construct their own writers again (writers made stay as they are)."""
    with _lock:
        _options["active"] = False
        sys.meta_path[:] = [f for f in sys.meta_path if not isinstance(f, _Finder)]
        for cls, before in list(_originals.items()):
            if before is not _ABSENT:
                setattr(cls, "__new__", before)  # noqa: B010
                del _originals[cls]
            # else: ours stays as a pass-through (inactive). Deleting a __new__ set on a class
            # leaves CPython's slot refusing the constructor's arguments.


def _patch_module(module: ModuleType) -> None:
    cls = getattr(module, "SummaryWriter", None)
    if not isinstance(cls, type) or cls in _originals:
        return
    _originals[cls] = cls.__dict__.get("__new__", _ABSENT)
    setattr(cls, "__new__", _constructor(cls))  # noqa: B010


def _constructor(original: type) -> Any:
    def __new__(cls: type, *args: Any, **kwargs: Any) -> Any:
        if cls is not original or not _options["active"]:
            return object.__new__(cls)
        return _build(original, args, kwargs)

    return staticmethod(__new__)


def _build(original: type, args: Sequence[Any], kwargs: dict[str, Any]) -> Any:
    writer = _options["writer"](*args, project=_options["project"], **kwargs)
    if _options["keep_tfevents"]:
        rest = {k: v for k, v in kwargs.items() if k not in ("log_dir", "logdir")}
        mirror: Any = object.__new__(original)
        original.__init__(mirror, writer.log_dir, *args[1:], **rest)  # type: ignore[misc]
        writer._mirror = mirror
    return writer


class _Finder(importlib.abc.MetaPathFinder):
    """Patches a target module right after it is first imported."""

    def __init__(self) -> None:
        self._busy: set[str] = set()

    def find_spec(self, fullname: str, path: Any, target: Any = None) -> Any:
        if fullname not in TARGETS or fullname in self._busy:
            return None
        self._busy.add(fullname)
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy.discard(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return None
        spec.loader = _Loader(spec.loader)
        return spec


class _Loader(importlib.abc.Loader):
    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:  # get_source, is_package, ... as the inner loader
        return getattr(self._inner, name)

    def create_module(self, spec: Any) -> Any:
        return self._inner.create_module(spec)

    def exec_module(self, module: ModuleType) -> None:
        self._inner.exec_module(module)
        with _lock:
            if _options["active"]:
                _patch_module(module)
