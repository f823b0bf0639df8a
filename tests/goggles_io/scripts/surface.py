"""Print the public surface of a package (``goggles`` or ``goggles_io``) as JSON, via inspect.

argv: the package name. Run in a child process with a private TMPDIR: importing robo-goggles
as root changes the permissions of its temp directory. Records, per public module, each public
name (``__all__``, public ``dir()``, the listed type aliases) with its kind; for callables
their parameters (name, kind, default repr or null when required); for classes their public
members, each with its kind, settability and signature; and the classes ``get_logger``
returns. Reprs have the package name replaced by ``PKG`` so the two can be compared.
"""

from __future__ import annotations

import enum
import importlib
import inspect
import json
import re
import sys
import types
import typing
from typing import Any

PKG = sys.argv[1]
MODULES = [".", ".config", ".filters", ".media", ".shutdown", ".types", ".validation",
           ".history", ".history.buffer", ".history.spec", ".history.types", ".history.utils"]  # fmt: skip
# Names robo-goggles defines as aliases of foreign objects (numpy, typing); looked up by name.
ALIASES = {
    ".": ["Image", "Kind", "Metrics", "Trajectories", "Vector", "VectorField", "Video"],
    ".types": ["Image", "Kind", "Metrics", "Trajectories", "Vector", "VectorField", "Video"],
    ".filters": ["Array", "JaxArray", "State"],
    ".history.spec": ["InitMode"],
    ".history.types": ["Array", "History", "PRNGKey"],
}
DUNDERS = ("__call__", "__enter__", "__exit__")  # __init__ is recorded as "init"


def text(value: Any) -> str:
    shown = re.sub(r" at 0x[0-9a-f]+", "", repr(value))
    return re.sub(rf"(<[a-z]+ '?){PKG}([.'])", r"\1PKG\2", shown)  # only in object reprs


def signature(obj: Any) -> list[list[Any]] | None:
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    return [
        [p.name, p.kind.name, None if p.default is p.empty else text(p.default)]
        for p in sig.parameters.values()
    ]


def members(cls: type) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for name in dir(cls):
        if name.startswith("_") and name not in DUNDERS:
            continue
        owner = next((k for k in cls.__mro__ if name in k.__dict__), None)
        if owner is None or owner.__module__ in ("builtins", "typing", "abc"):
            continue
        raw = inspect.getattr_static(cls, name)
        if isinstance(raw, property):
            found[name] = {"kind": "property", "settable": raw.fset is not None}
        elif isinstance(raw, (staticmethod, classmethod)):
            found[name] = {"kind": "method", "sig": signature(getattr(cls, name))}
        elif inspect.isfunction(raw) or inspect.ismethoddescriptor(raw):
            found[name] = {"kind": "method", "sig": signature(raw)}
        else:
            found[name] = {"kind": "attribute", "value": text(raw)[:200]}
    return found


def describe(obj: Any) -> dict[str, Any]:
    if inspect.ismodule(obj):
        return {"kind": "module"}
    if inspect.isclass(obj) and obj.__module__.split(".")[0] == PKG:
        return {"kind": "class", "init": signature(obj), "members": members(obj),
                "enum": issubclass(obj, enum.Enum)}  # fmt: skip
    if callable(obj) and not inspect.isclass(obj):
        return {"kind": "callable", "sig": signature(obj)}
    return {"kind": "value", "value": text(obj)[:200]}


def incidental(name: str, obj: Any, public: list[str]) -> bool:
    """An import the module merely uses (``os``, ``Path``, ``Any``), not a name it offers."""
    if name in public:
        return False
    if inspect.ismodule(obj):
        return not obj.__name__.startswith(PKG + ".")
    if isinstance(obj, (typing.TypeVar, typing.ParamSpec)) or name == "TYPE_CHECKING":
        return True
    if name.isupper() and not callable(obj):  # a constant: CRITICAL, GOGGLES_ASYNC, HAS_JAX
        return False
    origin = getattr(obj, "__module__", None)
    return not (isinstance(origin, str) and origin.split(".")[0] == PKG) or isinstance(
        obj, (types.GenericAlias, types.UnionType)
    )


surface: dict[str, Any] = {"modules": {}, "loggers": {}}
root = importlib.import_module(PKG)
surface["version"] = getattr(root, "__version__", None)
for rel in MODULES:
    name = PKG if rel == "." else PKG + rel
    try:
        module = importlib.import_module(name)
    except ImportError as exc:
        surface["modules"][rel] = {"error": str(exc)}
        continue
    public = list(getattr(module, "__all__", []))
    entries: dict[str, Any] = {}
    candidates = set(public) | {n for n in dir(module) if not n.startswith("_")}
    for attr in sorted(candidates | set(ALIASES.get(rel, []))):
        try:
            obj = getattr(module, attr)
        except AttributeError:
            continue
        if attr in ALIASES.get(rel, []) or not incidental(attr, obj, public):
            entries[attr] = describe(obj)
    surface["modules"][rel] = {"all": sorted(public), "names": entries}
for label, kwargs in (("text", {}), ("data", {"with_metrics": True})):
    logger_class = type(root.get_logger("surface.walk", **kwargs))
    surface["loggers"][label] = {"kind": "class", "members": members(logger_class)}
json.dump(surface, sys.stdout, indent=1, sort_keys=True)
