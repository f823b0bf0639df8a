"""Writing a run: ``RunContext`` (the run directory, ``run.kv`` before step 0, heartbeat, config
recorded once) and ``register_run`` (announcing the run to its handlers).

Over 400 lines, one piece: one RunContext's life (run.kv, heartbeat, the config once), read top
to bottom.

A :class:`RunContext` creates ``<root>/<run id>/`` and writes ``run.kv`` (who, where, which commit,
``status=running``) before any training, so a run that dies at step 0 still leaves a trace. A
daemon thread touches ``heartbeat`` every few seconds: a run whose process died keeps
``status=running`` with a stale heartbeat, and the reader reports it as ``crashed``.
Settings go through :meth:`RunContext.set_config`, recorded once in ``config.kv`` /
``config.yaml`` and forwarded to every handler that has ``record_config(mapping)``: through
:func:`goggles_io.call_handler` when the handler is attached to the bus (so the instance that
runs, possibly in the host process, gets it), by a direct call otherwise.
"""

from __future__ import annotations

import contextlib
import datetime as _dt
import getpass
import os
import platform
import re
import secrets
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Mapping
from pathlib import Path
from types import FrameType
from typing import Any

from goggles_io._api.functions import call_handler, is_attached
from goggles_io._api.state import STATE
from goggles_io._util.env import ENV_SYSTEM_METRICS, read_bool
from goggles_io._util.kvfile import overwrite_kv, write_kv
from goggles_io._util.report import report
from goggles_io.exceptions import ConfigConflictError, ConfigurationError
from goggles_io.runs.status import DEFAULT_HEARTBEAT_S, RunStatus
from goggles_io.runs.system import DEFAULT_INTERVAL_S, SystemSampler, missing_psutil

__all__ = ["RunContext", "register_run"]

_SAFE_NAME = re.compile(r"[^A-Za-z0-9._-]+")
_KEY = re.compile(r"^[A-Za-z0-9_.\-/]+$")
_SCALARS = (str, int, float, bool, type(None))


def _now_iso() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds")


def _git(*args: str) -> str | None:
    try:
        out = subprocess.run(
            ["git", *args], capture_output=True, text=True, timeout=2.0, check=True
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip()


def _git_fields() -> dict[str, str]:
    commit = _git("rev-parse", "HEAD")
    if not commit:
        return {}
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return {"git_commit": commit, "git_dirty": "unknown" if dirty is None else str(bool(dirty))}


def _slugify(text: str) -> str:
    return _SAFE_NAME.sub("_", text).strip("._") or "run"


def _plain(key: str, value: Any) -> Any:
    """Return ``value`` as a YAML/kv-safe builtin, or raise naming ``key``."""
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 0) == 0:
        value = value.item()  # numpy scalar
    if isinstance(value, _SCALARS):
        return value
    if isinstance(value, (list, tuple)) and all(isinstance(v, _SCALARS) for v in value):
        return list(value)
    msg = (
        f"config value for {key!r} must be a str, int, float, bool, None or a list of those "
        f"(got {value!r} of type {type(value).__name__}); convert it with str() first."
    )
    raise ConfigurationError(msg, key=key, value=value)


class RunContext:
    """One training run: its directory, ``run.kv``, heartbeat, checkpoints and config.

    Use it as a context manager: leaving normally writes ``status=done``, an exception
    ``failed``, ``KeyboardInterrupt`` or ``SIGTERM`` ``interrupted``. Outside a ``with`` block,
    call :meth:`close` yourself.

    Args:
        project: Project the run belongs to.
        driver: The script or entry point that trains (for finding the code later).
        slug: Short human name, part of the run id and directory name.
        seed: Random seed, recorded in ``run.kv`` when given.
        root: Directory holding all runs.
        heartbeat_s: Seconds between heartbeat touches (crash detection granularity).
        info: More ``run.kv`` fields (``tags`` as ``a,b``, ``group``, ``notes``: what the
            dashboard filters and groups by); they never replace the run's own fields.
        system_metrics: Sample what the run costs the machine (CPU, memory, GPU, disk and
            network of this process and its children) every ``system_interval_s`` seconds
            into ``system/log.jsonl`` (:mod:`goggles_io.runs.system`). ``None`` (the default)
            means on unless ``TELEMETRY_SYSTEM_METRICS=0``; ``False`` turns it off.
        system_interval_s: Seconds between system samples (default 5).

    Raises:
        ConfigurationError: ``project``/``slug`` empty or ``heartbeat_s`` not positive.
    """

    def __init__(
        self,
        project: str,
        driver: str,
        slug: str,
        seed: int | None = None,
        root: str | os.PathLike[str] = "runs",
        heartbeat_s: float = DEFAULT_HEARTBEAT_S,
        *,
        info: Mapping[str, Any] | None = None,
        system_metrics: bool | None = None,
        system_interval_s: float = DEFAULT_INTERVAL_S,
    ) -> None:
        for pname, pvalue in (("project", project), ("slug", slug)):
            if not isinstance(pvalue, str) or not pvalue.strip():
                msg = f"{pname} must be a non-empty str (got {pvalue!r})."
                raise ConfigurationError(msg, key=pname, value=pvalue)
        for sname, svalue in (
            ("heartbeat_s", heartbeat_s),
            ("system_interval_s", system_interval_s),
        ):
            if isinstance(svalue, bool) or not isinstance(svalue, (int, float)) or not svalue > 0:
                msg = f"{sname} must be a positive number of seconds (got {svalue!r})."
                raise ConfigurationError(msg, key=sname, value=svalue)
        stamp = time.strftime("%Y%m%d-%H%M%S")
        self.id = f"{stamp}-{_slugify(slug)}-{secrets.token_hex(3)}"
        self.project = project
        self.slug = slug
        self.dir = Path(root) / self.id
        self.dir.mkdir(parents=True, exist_ok=False)
        self.heartbeat_s = float(heartbeat_s)
        self.config: dict[str, Any] = {}
        self._handlers: list[Any] = []
        self._lock = threading.Lock()
        self._closed = threading.Event()
        self._prev_sigterm: Any = None
        self._info: dict[str, Any] = {
            "run_id": self.id,
            "project": project,
            "driver": driver,
            "slug": slug,
            **({"seed": seed} if seed is not None else {}),
            "host": socket.gethostname(),
            "pid": os.getpid(),
            "user": getpass.getuser(),
            "python": platform.python_version(),
            **_git_fields(),
            "heartbeat_s": self.heartbeat_s,
            "status": RunStatus.RUNNING,
            "started": _now_iso(),
        }
        for key, value in (info or {}).items():
            if value is not None:
                self._info.setdefault(str(key), value)
        self._sampler = self._system_sampler(system_metrics, float(system_interval_s))
        write_kv(self.dir / "run.kv", self._info)
        self._touch()
        self._lost: int | None = None  # events logged and not delivered, once finish() said
        STATE.finish_listeners.append(self._on_finish)
        self._beat = threading.Thread(target=self._beat_loop, name=f"run-heartbeat-{self.id}")
        self._beat.daemon = True
        self._beat.start()
        if self._sampler is not None:
            self._sampler.start()

    def _system_sampler(self, wanted: bool | None, interval_s: float) -> SystemSampler | None:
        """The system sampler this run asked for (recorded in ``run.kv``), or ``None``."""
        on = read_bool(os.environ, ENV_SYSTEM_METRICS, True) if wanted is None else bool(wanted)
        why = missing_psutil() if on else None
        if why:
            report(f"run {self.id}: {why} (system metrics off)")
        self._info["system_metrics"] = "on" if on and not why else "off"
        if not on or why:
            return None
        self._info["system_interval_s"] = interval_s
        return SystemSampler(self.dir, interval_s)

    def __repr__(self) -> str:
        return f"RunContext(id={self.id!r}, dir={str(self.dir)!r}, status={self.status!r})"

    @property
    def status(self) -> str:
        """The status last written to ``run.kv``."""
        return str(self._info["status"])

    def name(self) -> str:
        """A display name for dashboards: ``<project>/<slug>``."""
        return f"{self.project}/{self.slug}"

    def info(self) -> dict[str, Any]:
        """A copy of what ``run.kv`` holds (never any secret)."""
        return dict(self._info)

    def checkpoint_path(self, name: str) -> Path:
        """Return ``<run dir>/checkpoints/<name>``, with ``name`` sanitised to stay inside.

        Raises:
            ConfigurationError: ``name`` is not a str or sanitises to nothing.
        """
        safe = _SAFE_NAME.sub("_", name).strip("._") if isinstance(name, str) else ""
        if not safe:
            msg = f"checkpoint name must be a str with letters or digits (got {name!r})."
            raise ConfigurationError(msg, key="name", value=name)
        folder = self.dir / "checkpoints"
        folder.mkdir(exist_ok=True)
        return folder / safe

    def set_config(self, key: str | Mapping[str, Any], value: Any = None) -> None:
        """Record settings once: ``set_config("lr", 3e-4)`` or ``set_config({"lr": 3e-4})``.

        Settings are not metrics: they are written once to ``config.kv`` and ``config.yaml`` and
        forwarded to every registered handler with ``record_config``. Recording a key again with
        the same value does nothing.

        Raises:
            ConfigConflictError: a key was already recorded with a different value (a
                :class:`ConfigurationError`). Nothing of the call is recorded then.
            ConfigurationError: a key is malformed or a value is not a plain scalar (or list
                of scalars). Nothing of the call is recorded then either.
        """
        items = dict(key) if isinstance(key, Mapping) else {key: value}
        fresh: dict[str, Any] = {}
        with self._lock:
            for k, v in items.items():
                if not isinstance(k, str) or not _KEY.match(k):
                    msg = f"config key must match [A-Za-z0-9_.-/]+ (got {k!r})."
                    raise ConfigurationError(msg, key=str(k), value=v)
                plain = _plain(k, v)
                if k in self.config:
                    if self.config[k] != plain:
                        msg = (
                            f"config key {k!r} was already recorded as {self.config[k]!r}; "
                            f"refusing to record {plain!r}. Config is recorded once per run: "
                            "use a new key, or start a new run."
                        )
                        raise ConfigConflictError(msg, key=k, value=v, previous=self.config[k])
                    continue
                fresh[k] = plain
            if not fresh:
                return
            self.config.update(fresh)
            self._write_config()
            handlers = list(self._handlers)
        for handler in handlers:
            _record_config(handler, fresh)

    def close(self, status: str = RunStatus.DONE, reason: str | None = None) -> None:
        """Stop the heartbeat and write the final ``status`` and ``finished`` time (idempotent).

        A run whose registered handlers could not write everything (``losses()`` reports
        ``write_failed``: a full disk) is closed ``failed`` with that ``reason``. When
        ``run.kv`` itself cannot be replaced (the disk is full), it is rewritten in place with
        ``status=failed`` and the reason; the error is reported once on stderr, never raised,
        so the run reads as failed, not crashed.
        """
        if self._closed.is_set():
            return
        self._closed.set()
        if status == RunStatus.DONE and reason is None:
            reason = self._write_failures()
            status = RunStatus.FAILED if reason else status
        if self._sampler is not None:
            self._sampler.close()
            self._info["system_samples"] = self._sampler.samples
            self._info["system_sampler_cpu_s"] = round(self._sampler.cpu_s, 4)
        self._info["status"] = status
        self._info["finished"] = _now_iso()
        if self._lost is not None:
            self._info["lost"] = self._lost
        if reason:
            self._info["reason"] = reason
        try:
            write_kv(self.dir / "run.kv", self._info)
        except OSError as exc:
            self._info["status"] = RunStatus.FAILED
            self._info["reason"] = f"could not write run.kv: {exc.strerror or exc}" + (
                f"; {reason}" if reason else ""
            )
            try:
                overwrite_kv(self.dir / "run.kv", self._info)
            except OSError as again:
                exc = again
            report(f"run {self.id}: {self._info['reason']} ({exc!r}); closed as failed")
        if self._beat is not threading.current_thread():
            self._beat.join(timeout=2.0)

    def _on_finish(self, result: Any) -> None:
        """``goggles_io.finish()`` reported: record what it could not deliver as ``lost=N``.

        A finish inside the ``with`` block (the harness) is written when the run closes; one
        after it (``gg.finish()`` at the end of the script, or at interpreter exit) rewrites
        ``run.kv`` then, so a run that lost events never reads as a plain ``done``. Each
        report counts the handlers' whole tally, so the run keeps the largest: a later finish
        with less to say (the one at exit) never lowers it.
        """
        with self._lock:
            # The finish at interpreter exit comes after the script's own gg.finish() with
            # nothing left to report: it must not write lost=0 over the losses already counted.
            self._lost = max(self._lost or 0, int(result.missing))
            if not self._closed.is_set():
                return
            self._info["lost"] = self._lost
        with contextlib.suppress(ValueError):
            STATE.finish_listeners.remove(self._on_finish)
        try:
            write_kv(self.dir / "run.kv", self._info)
        except OSError as exc:
            report(f"run {self.id}: could not record lost={self._lost} in run.kv ({exc!r})")

    def _write_failures(self) -> str | None:
        """What registered handlers could not write (``losses()["write_failed"]``), if any."""
        with self._lock:
            handlers = list(self._handlers)
        found = []
        for handler in handlers:
            method = getattr(handler, "losses", None)
            try:
                lost = int(method().get("write_failed", 0)) if callable(method) else 0
            except Exception:
                continue
            if lost:
                found.append(f"{getattr(handler, 'name', handler)!s}: {lost} not written")
        return "disk full or unwritable: " + "; ".join(found) if found else None

    def __enter__(self) -> RunContext:
        if threading.current_thread() is threading.main_thread():
            self._prev_sigterm = signal.signal(signal.SIGTERM, self._on_sigterm)
        return self

    def __exit__(self, *exc_info: object) -> None:
        exc = exc_info[1]  # (type, exception, traceback): only the exception matters here
        if self._prev_sigterm is not None:
            signal.signal(signal.SIGTERM, self._prev_sigterm)
            self._prev_sigterm = None
        if exc is None or (isinstance(exc, SystemExit) and exc.code in (0, None)):
            self.close(RunStatus.DONE)
        elif isinstance(exc, (KeyboardInterrupt, _Terminated)):
            self.close(RunStatus.INTERRUPTED)
        else:
            self.close(RunStatus.FAILED)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        raise _Terminated(128 + signum)

    def _touch(self) -> None:
        with contextlib.suppress(OSError):
            (self.dir / "heartbeat").write_text(f"{time.time():.3f}\n")

    def _beat_loop(self) -> None:
        while not self._closed.wait(self.heartbeat_s):
            self._touch()

    def _write_config(self) -> None:
        import yaml  # lazily: keeps `import goggles_io` fast

        write_kv(self.dir / "config.kv", self.config)
        tmp = self.dir / f".config.yaml.{os.getpid()}.tmp"
        tmp.write_text(yaml.safe_dump(self.config, sort_keys=True))
        os.replace(tmp, self.dir / "config.yaml")

    def _attach(self, handler: Any) -> None:
        with self._lock:
            if handler not in self._handlers:
                self._handlers.append(handler)


class _Terminated(SystemExit):
    """Raised in the main thread on SIGTERM so ``with RunContext`` can mark ``interrupted``."""


def _forward(handler: Any, method: str, payload: dict[str, Any]) -> None:
    """Give ``payload`` to the instance the bus runs when ``handler`` is attached, else to it.

    Attached handlers are reached by name through :func:`goggles_io.call_handler`: with the
    socket transport the instance that handles events lives in the host, and with
    first-registration-wins it may not be ``handler`` itself.
    """
    name = getattr(handler, "name", None)
    allowed = method in getattr(type(handler), "remote_methods", ())
    if allowed and isinstance(name, str) and name and is_attached(name):
        call_handler(name, method, payload)
        return
    target = getattr(handler, method, None)
    if callable(target):
        target(payload)


def _record_config(handler: Any, mapping: Mapping[str, Any]) -> None:
    _forward(handler, "record_config", dict(mapping))


def register_run(run: RunContext, *handlers: Any) -> None:
    """Announce ``run`` to each handler before step 0, so a run dying at step 0 is visible.

    Each handler gets the config recorded so far (``record_config(mapping)``, if it has it) and
    the run's identity (``register_run(info)``, if it has it); later :meth:`RunContext.set_config`
    calls are forwarded to it too. Attach handlers first: an attached handler is reached through
    :func:`goggles_io.call_handler` (the instance the bus runs, in the host with the socket
    transport); one never attached is called directly (standalone use).
    """
    for handler in handlers:
        run._attach(handler)
        if run.config:
            _record_config(handler, run.config)
        _forward(handler, "register_run", run.info())
