"""Every public name, member and parameter of robo-goggles 0.3.6 exists in goggles_io.

Both packages are walked with ``inspect`` in child processes (``scripts/surface.py``; a private
TMPDIR, since importing robo-goggles as root changes its temp directory's permissions) and
compared: a robo-goggles module, name, class member or parameter goggles_io lacks, a positional
parameter in another place, a default that differs, or a parameter goggles_io requires and
robo-goggles does not have, fails — unless :data:`DELIBERATE` names it with its reason. A
parameter reachable only through ``**kwargs`` counts as missing. The peer is installed by the
``bench`` extra (``pip install -e '.[bench]'``, which ``.ci/run`` does).
"""

from __future__ import annotations

import importlib.metadata
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).parent / "scripts" / "surface.py"
PEER_VERSION = "0.3.6"

_STEP_REQUIRED = "robo-goggles requires step; ours takes the metric's next step when omitted"
_ASYNC_ENV = "None reads GOGGLES_ASYNC, whose default is robo-goggles' True"
_LOGGERS = "loggers are made by get_logger, never constructed; its arguments are ours"
# Each entry: "<module>:<object>[.<member>][(<parameter>)]" -> why goggles_io differs on purpose.
# docs/goggles_io.md lists the user-visible ones.
DELIBERATE: dict[str, str] = {
    ".:Event()": "Event's field order is ours (timestamp, logger, pid) and every field but "
    "kind, scope, payload has a default; build events with keywords",
    ".:Kind": "a str enum (Kind.IMAGE == 'image'), not a Literal of the same strings",
    ".types:Kind": "a str enum (Kind.IMAGE == 'image'), not a Literal of the same strings",
    ".types:Event()": "Event's field order is ours (timestamp, logger, pid); use keywords",
    ".:LocalStorageHandler()(name)": "default 'storage:<path>': two runs' directories in one "
    "process would otherwise merge into the first under robo-goggles' shared 'jsonl'",
    ".:LocalStorageHandler.name": "no class-level name: each instance's default is its path",
    ".:TextLogger.bind(scope)": "bind() without scope keeps the logger's scope",
    ".:GogglesLogger.bind(scope)": "bind() without scope keeps the logger's scope",
    "text.bind(scope)": "bind() without scope keeps the logger's scope",
    "data.bind(scope)": "bind() without scope keeps the logger's scope",
    ".:TextLogger()": _LOGGERS,
    ".:GogglesLogger()": _LOGGERS,
    ".:ConsoleHandler()(path_style)": "None shows no caller file unless a path style is asked "
    "for; our console line is time LEVEL [scope] logger: message",
    ".:configure(console_path_style)": "None: as ConsoleHandler's path_style",
    ".:configure(enable_console)": "None: any console option implies enable_console=True",
    ".:configure(console_level)": "None: NOTSET, every message the loggers let through",
    ".:GracefulShutdown.stop": "a settable property (reading it logs exit_message once)",
    ".shutdown:GracefulShutdown.stop": "a settable property (reading it logs exit_message once)",
    ".filters:create_concat_filter(available_filters)": "None means every filter class, "
    "AVAILABLE_FILTERS included",
    ".history:HistoryFieldSpec()(dtype)": "np.dtype('float32'), the same dtype jnp.float32 names",
    ".history.spec:HistoryFieldSpec()(dtype)": "np.dtype('float32'), the same dtype as jnp.float32",
}
# Rules that cover many entries at once (module, object, member, parameter) -> reason.
PATTERNS: list[tuple[str, str]] = [
    ("(async_mode)", _ASYNC_ENV),
    ("(step)", _STEP_REQUIRED),
]


@pytest.fixture(scope="module")
def surfaces(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Any], dict[str, Any]]:
    try:
        version = importlib.metadata.version("robo-goggles")
    except importlib.metadata.PackageNotFoundError:
        pytest.skip("robo-goggles is not installed: pip install -e '.[bench]'")
    assert PEER_VERSION == version, f"the bench extra pins robo-goggles {PEER_VERSION}"
    tmp = tmp_path_factory.mktemp("surface")
    env = {**os.environ, "TMPDIR": str(tmp), "GOGGLES_TRANSPORT": "inprocess"}
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p and "compat" not in p)

    def walk(package: str) -> dict[str, Any]:
        done = subprocess.run([sys.executable, str(SCRIPT), package], capture_output=True,
                              text=True, env=env, cwd=tmp, timeout=300, check=True)  # fmt: skip
        return json.loads(done.stdout)

    return walk("goggles"), walk("goggles_io")


def _allowed(key: str) -> bool:
    """Listed itself, under a listed object (``X`` covers ``X(param)``), or by a pattern."""
    listed = key in DELIBERATE or any(key.startswith(f"{d}(") for d in DELIBERATE)
    return listed or any(p in key for p, _ in PATTERNS)


def _params(sig: list[list[Any]] | None) -> dict[str, list[Any]]:
    return {p[0]: p for p in sig or []}


Gap = tuple[str, str]  # (key as DELIBERATE spells it, what differs)


def _compare_signature(
    where: str, peer: list[list[Any]] | None, ours: list[list[Any]] | None
) -> list[Gap]:
    if peer is None:
        return []
    if ours is None:
        return [(where, "no signature")]
    gaps: list[Gap] = []
    mine = _params(ours)
    positional = ("POSITIONAL_ONLY", "POSITIONAL_OR_KEYWORD")
    peer_pos = [p for p in peer if p[1] in positional]
    our_pos = [p[0] for p in ours if p[1] in positional]
    for i, (name, kind, _) in enumerate(peer_pos):
        if i >= len(our_pos) or (kind != "POSITIONAL_ONLY" and our_pos[i] != name):
            gaps.append((where, f"positional order {[p[0] for p in peer_pos]} vs {our_pos}"))
            break
    for name, kind, default in peer:
        key = f"{where}({name})"
        if kind == "VAR_POSITIONAL" and not any(p[1] == kind for p in ours):
            gaps.append((key, f"*{name} missing"))
        if kind in ("VAR_POSITIONAL", "VAR_KEYWORD", "POSITIONAL_ONLY"):
            continue
        if name not in mine:
            gaps.append((key, "parameter missing (or only reachable through **kwargs)"))
        elif default is not None and mine[name][2] != default:
            gaps.append((key, f"default {mine[name][2]} here, {default} in robo-goggles"))
    peer_names = {p[0] for p in peer}
    for name, kind, default in ours:
        required = default is None and kind in ("POSITIONAL_OR_KEYWORD", "KEYWORD_ONLY")
        if required and name not in peer_names | {"self", "cls"}:
            gaps.append((f"{where}({name})", "required here, absent in robo-goggles"))
    return gaps


def _compare_class(where: str, peer: dict[str, Any], ours: dict[str, Any]) -> list[Gap]:
    gaps = _compare_signature(f"{where}()", peer.get("init"), ours.get("init"))
    for member, info in peer["members"].items():
        key = f"{where}.{member}"
        got = ours["members"].get(member)
        if got is None:
            gaps.append((key, f"member missing ({info['kind']})"))
        elif info["kind"] == "method":
            gaps += _compare_signature(key, info.get("sig"), got.get("sig"))
        elif info["kind"] == "attribute" and got["kind"] == "property":
            gaps.append((key, "a property here, an attribute in robo-goggles"))
    return gaps


def _gaps(peer: dict[str, Any], ours: dict[str, Any]) -> list[Gap]:
    gaps: list[Gap] = []
    for module, content in peer["modules"].items():
        mine = ours["modules"].get(module)
        if mine is None or "error" in mine:
            gaps.append((module, f"module missing ({mine})"))
            continue
        for name in sorted(set(content["all"]) - set(mine["all"])):
            gaps.append((f"{module}:{name}", "not in __all__"))
        for name, info in content["names"].items():
            key = f"{module}:{name}"
            got = mine["names"].get(name)
            if got is None:
                gaps.append((key, f"name missing ({info['kind']})"))
            elif info["kind"] == "class" and got["kind"] == "class":
                gaps += _compare_class(key, info, got)
            elif info["kind"] == "callable":
                gaps += _compare_signature(key, info.get("sig"), got.get("sig"))
            elif info["kind"] != got["kind"]:
                gaps.append((key, f"a {got['kind']} here, a {info['kind']} in robo-goggles"))
    for label in ("text", "data"):
        gaps += _compare_class(label, peer["loggers"][label], ours["loggers"][label])
    return gaps


def test_every_robo_goggles_name_member_and_parameter_exists(surfaces: Any) -> None:
    """No robo-goggles 0.3.6 name, member or parameter is missing unless listed as deliberate."""
    peer, ours = surfaces

    assert [] == [f"{key}: {what}" for key, what in _gaps(peer, ours) if not _allowed(key)]


def test_every_deliberate_entry_is_still_a_difference(surfaces: Any) -> None:
    """Each DELIBERATE entry matches a difference found, so the list never outgrows the truth."""
    peer, ours = surfaces
    found = {key for key, _ in _gaps(peer, ours)}
    used = {d for d in DELIBERATE if d in found or any(k.startswith(f"{d}(") for k in found)}

    assert [] == sorted(set(DELIBERATE) - used)


def test_a_missing_name_member_or_parameter_is_reported(surfaces: Any) -> None:
    """Removing a function, a logger method or a parameter from our side shows up as a gap."""
    peer, ours = surfaces
    doctored = json.loads(json.dumps(ours))
    del doctored["modules"][".media"]["names"]["save_numpy_gif"]
    del doctored["loggers"]["data"]["members"]["trajectories"]
    finish = doctored["modules"]["."]["names"]["finish"]
    finish["sig"] = [p for p in finish["sig"] if p[0] != "wait_for_host"]

    reported = [key for key, _ in _gaps(peer, doctored) if not _allowed(key)]
    assert [".:finish(wait_for_host)", ".media:save_numpy_gif", "data.trajectories"] == sorted(
        reported
    )


def test_get_logger_takes_its_fields_as_robo_goggles_does(surfaces: Any) -> None:
    """get_logger's keyword-only parameters and its ``**to_bind`` are robo-goggles 0.3.6's, by
    name and kind: ``get_logger("t", to_bind={...})`` binds one field named ``to_bind`` in both
    (``name`` stays a keyword here too: ``get_logger(name="t")`` names the logger)."""
    peer, ours = surfaces

    def keywords(surface: dict[str, Any]) -> list[tuple[str, str]]:
        sig = surface["modules"]["."]["names"]["get_logger"]["sig"]
        return sorted((p[0], p[1]) for p in sig if p[1] in ("KEYWORD_ONLY", "VAR_KEYWORD"))

    assert ("to_bind", "VAR_KEYWORD") in keywords(ours)
    assert keywords(peer) == keywords(ours)
