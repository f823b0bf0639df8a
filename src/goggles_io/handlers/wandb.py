"""``WandBHandler``: one W&B run per scope, every metric of a step in one ``log`` call.

The bus runs each handler on its own worker thread, so every SDK call here (``init``, ``log``,
``finish``) happens off the training thread. Each history row carries the goggles step under
``step_key`` (default ``"step"``) and every metric is plotted against it through
``define_metric("*", step_metric=step_key)``; ``run.log`` is never given ``step=``, so W&B never
drops a row whose step went backwards (a restarted episode counter, a resumed loop): it is kept
and reported once. A metric declared with a custom x-axis (``logger.set_x_axis`` or ``x=``) is
plotted against that axis instead.

``WANDB_MODE=offline`` writes runs under ``<dir>/wandb/offline-run-*``; upload later with
``wandb sync <dir>/wandb``.

Exactly once across host deaths (ADR 0070): each scope's W&B run has an id made from
``resume_id`` (chosen at construction, carried in the spec), so the handler a new host rebuilds
resumes the same run (offline: one more ``offline-run-*-<id>`` folder, synced in order into
that run). Rows are handed to W&B at ``flush()`` after a ledger beside the runs' files
(:mod:`~goggles_io.handlers._wandb_ledger`) recorded which events they hold, and the host
acknowledges their batches only once W&B wrote them into its transaction log; a rebuilt handler
skips the events whose rows W&B kept. ``dir`` and ``mode`` are resolved when the handler is constructed
(argument, then ``WANDB_DIR`` / ``WANDB_MODE``, then the current directory), and so are the
other ``WANDB_*`` variables (applied to each run's ``wandb.Settings``; ``WANDB_API_KEY`` travels
as a secret): a copy rebuilt from the spec in the socket transport's host, which may run in
another directory with another environment, writes where the constructing process said.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar

from goggles_io._event.records import Event, Kind
from goggles_io._util.extras import import_extra
from goggles_io._util.report import ReportOnce
from goggles_io._util.secret import Secret
from goggles_io.exceptions import ConfigurationError
from goggles_io.handlers import _wandb_values as values
from goggles_io.handlers._wandb_rows import Rows, RunState, run_id_of
from goggles_io.handlers.base import BaseHandler, register_handler

__all__ = ["WandBHandler"]

_logger = logging.getLogger(__name__)

_API_KEY_VAR = values.API_KEY_VAR


def _import_wandb() -> Any:
    return import_extra("wandb", purpose="WandBHandler", extra="wandb")


_FLUSH_INTERVAL_S = 0.5  # how often W&B's core writes its transaction log (its default: 15 s)


@register_handler
class WandBHandler(BaseHandler):
    """Send metrics, media, histograms, vector fields, trajectories, tables, text and artifacts
    to Weights & Biases (robo-goggles' arguments first, in its order).

    Args:
        project: W&B project.
        entity: W&B entity (team or user), passed to ``wandb.init``.
        run_name: Name of the ``global`` scope's run; another scope's run is named
            ``<run_name>-<scope>`` (``run-<scope>`` without a run name), as robo-goggles does.
        config: Initial config of every run (merged with :meth:`record_config` calls); each
            run's config also holds its ``scope``.
        group: Passed to ``wandb.init``; every run this handler creates shares it.
        tags: A list or tuple of str, passed to ``wandb.init``.
        reinit: Passed to ``wandb.init``; default ``"create_new"``, which keeps one live run
            per scope in the same process.
        wandb_init_kwargs: Further keyword arguments for every ``wandb.init`` call, e.g.
            ``{"notes": "..."}``; plain builtins only, since the spec travels to the host. They
            override the arguments above of the same name.
        name: Bus-wide handler name.
        level: Minimum level of text events (W&B gets none; kept for the handler protocol).
        mode: ``"online"``, ``"offline"`` or ``"disabled"``; default: ``WANDB_MODE`` as set
            here at construction (unset: W&B's own default).
        dir: Where W&B writes (``<dir>/wandb/...``); default ``WANDB_DIR``, else the current
            directory, made absolute here at construction.
        step_key: History key holding the goggles step, the default x-axis.
        env: ``WANDB_*`` variables applied to every run's settings; default: this process's
            (read here at construction, so the host uses the attaching process's).
        api_key: W&B API key; default ``WANDB_API_KEY``, else W&B's own login (``~/.netrc``).
            Kept as a secret: never in the repr, the spec's ``data`` or a message.
        resume_id: What the W&B runs' ids are made of (the ``global`` scope's run has it as
            its id, another scope's ``<resume_id>-<scope>``); default ``wandb_init_kwargs``'
            ``id``, else a fresh one. A handler rebuilt from the spec (a new host, a left-over
            delivery) resumes those runs; after ``close()`` a fresh one starts new runs.

    Raises:
        ConfigurationError: ``tags`` is a bare string or holds a non-string; ``config`` or
            ``wandb_init_kwargs`` is not a mapping.
        ImportError: wandb is not installed.
    """

    capabilities: ClassVar[frozenset[Kind]] = frozenset(
        {
            Kind.METRIC,
            Kind.IMAGE,
            Kind.VIDEO,
            Kind.HISTOGRAM,
            Kind.VECTOR_FIELD,
            Kind.TRAJECTORIES,
            Kind.ARTIFACT,
            Kind.TABLE,
            Kind.TEXT,
        }
    )
    GLOBAL_SCOPE: ClassVar[str] = "global"
    default_name = "wandb"
    name = default_name
    remote_methods: ClassVar[frozenset[str]] = frozenset({"record_config", "register_run", "alert"})

    def __init__(
        self,
        project: str | None = None,
        entity: str | None = None,
        run_name: str | None = None,
        config: Mapping[str, Any] | None = None,
        group: str | None = None,
        tags: Sequence[str] | None = None,
        reinit: Any = "create_new",
        wandb_init_kwargs: Mapping[str, Any] | None = None,
        name: str = "wandb",
        *,
        level: int = logging.NOTSET,
        mode: str | None = None,
        dir: str | os.PathLike[str] | None = None,
        step_key: str = "step",
        env: Mapping[str, str] | None = None,
        api_key: str | None = None,
        resume_id: str | None = None,
    ) -> None:
        super().__init__(name=name, level=level)
        if isinstance(tags, (str, bytes)):
            msg = (
                f"tags must be a list or tuple of str, not a bare string (got {tags!r}); "
                f"W&B would split it into characters. Pass tags=[{tags!r}]."
            )
            raise ConfigurationError(msg, key="tags", value=tags)
        if tags is not None and (
            not isinstance(tags, (list, tuple)) or not all(isinstance(t, str) for t in tags)
        ):
            msg = f"tags must be a list or tuple of str (got {tags!r})."
            raise ConfigurationError(msg, key="tags", value=tags)
        if config is not None and not isinstance(config, Mapping):
            msg = f"config must be a mapping of setting -> value (got {config!r})."
            raise ConfigurationError(msg, key="config", value=config)
        if wandb_init_kwargs is not None and not isinstance(wandb_init_kwargs, Mapping):
            msg = f"wandb_init_kwargs must be a mapping of wandb.init argument -> value (got {wandb_init_kwargs!r})."
            raise ConfigurationError(msg, key="wandb_init_kwargs", value=wandb_init_kwargs)
        self.wandb_init_kwargs = {str(k): v for k, v in (wandb_init_kwargs or {}).items()}
        self._wandb = _import_wandb()
        self.project, self.entity, self.run_name, self.group = project, entity, run_name, group
        self.tags = list(tags) if tags is not None else None
        # Resolved here, in the attaching process: the host may run in another cwd/environment.
        self.mode = mode if mode is not None else os.environ.get("WANDB_MODE") or None
        self.dir = os.path.abspath(os.fspath(dir or os.environ.get("WANDB_DIR") or os.getcwd()))
        self.reinit, self.step_key = reinit, step_key
        if env is not None and not isinstance(env, Mapping):
            msg = f"env must be a mapping of WANDB_* variable -> str (got {env!r})."
            raise ConfigurationError(msg, key="env", value=env)
        self.env = values.wandb_env() if env is None else {str(k): str(v) for k, v in env.items()}
        key = api_key or os.environ.get(_API_KEY_VAR) or None
        self._api_key = None if key is None else Secret(key)
        self._config: dict[str, Any] = dict(config or {})
        self._config_updates: dict[str, Any] = {}
        self._config_lock = threading.Lock()
        self._runs: dict[str, RunState] = {}
        self._report_once = ReportOnce(_logger)
        self.backward_steps = 0
        self.alert_errors = 0
        self.log_failed = 0
        self.artifact_failed = 0
        self._videos = values.Videos()
        self._artifacts = values.ArtifactUploader()
        given = resume_id or self.wandb_init_kwargs.get("id")
        self.resume_id = str(given) if given else uuid.uuid4().hex[:16]
        self._rows = Rows(f"WandBHandler {name!r}", self._log_failed)

    def config(self) -> dict[str, Any]:
        """Constructor arguments for the handler spec (msgpack-safe)."""
        return {
            **super().config(),
            "project": self.project,
            "entity": self.entity,
            "run_name": self.run_name,
            "group": self.group,
            "tags": self.tags,
            "config": dict(self._config),
            "mode": self.mode,
            "reinit": self.reinit,
            "dir": self.dir,
            "step_key": self.step_key,
            "env": dict(self.env),
            "wandb_init_kwargs": dict(self.wandb_init_kwargs),
            "resume_id": self.resume_id,
        }

    def secrets(self) -> dict[str, str]:
        """The W&B API key when one was given or found in ``WANDB_API_KEY``."""
        return {} if self._api_key is None else {"api_key": self._api_key}

    def __repr__(self) -> str:
        return (
            f"WandBHandler(name={self.name!r}, project={self.project!r}, group={self.group!r}, "
            f"runs={sorted(self._runs)!r})"
        )

    # -- config ---------------------------------------------------------------------------------

    def record_config(self, mapping: Mapping[str, Any]) -> None:
        """Record settings into every run's config; applied on the handler's own thread."""
        with self._config_lock:
            self._config.update(mapping)
            self._config_updates.update(mapping)

    def register_run(self, info: Mapping[str, Any]) -> None:
        """Record the run's identity (``run.kv`` fields) under the ``run`` config key."""
        self.record_config({"run": {k: v for k, v in info.items() if "key" not in k.lower()}})

    def alert(self, payload: Mapping[str, Any]) -> None:
        """Raise a W&B alert (``run.alert``) on the run of ``payload["scope"]``.

        Reached through ``goggles_io.call_handler(name, "alert", payload)``, so it runs on the
        handler's thread, in order with the events. ``payload``: ``title``, ``text``, ``level``
        (``"INFO"``, ``"WARN"`` or ``"ERROR"``), optional ``scope`` (default ``"global"``) and
        ``wait_duration_s``. Offline runs record the alert in the run file. A failing call is
        counted in ``alert_errors`` and reported once; it never reaches the caller.
        """
        try:
            scope = str(payload.get("scope") or "global")
            state = self._runs.get(scope) or self._start(scope)
            state.run.alert(
                title=str(payload["title"]),
                text=str(payload["text"]),
                level=self._wandb.AlertLevel(str(payload.get("level", "WARN"))),
                wait_duration=float(payload.get("wait_duration_s", 60.0)),
            )
        except Exception as exc:
            self.alert_errors += 1
            self._report_once("alert", "WandBHandler %r: wandb alert failed: %r", self.name, exc)

    def _apply_config(self) -> None:
        with self._config_lock:
            updates, self._config_updates = self._config_updates, {}
        if updates:
            for state in self._runs.values():
                state.run.config.update(updates, allow_val_change=True)

    # -- lifecycle --------------------------------------------------------------------------------

    def open(self) -> None:
        """Read which events the W&B runs of ``resume_id`` hold (after a host's death: the
        rows W&B wrote of those the ledger lists); they are skipped when sent again."""
        if self.mode != "disabled":
            self._rows.open(self.dir, self.resume_id, self.name)

    def handle(self, event: Event) -> None:
        """Add the event to its scope's current row; a new step commits the previous row. An
        event whose row W&B already holds (sent again after a host's death) is skipped."""
        if not self._rows.seqs.fresh(event):
            return
        if self._config_updates:
            self._apply_config()
        state = self._runs.get(event.scope) or self._start(event.scope)
        if event.kind is Kind.ARTIFACT:  # uploaded on its own, outside the step rows
            self._upload(event, state)
            return
        step = event.step if event.step is not None else max(state.last_step, 0)
        entries = values.row_entries(self._wandb, self._videos, event, state)
        if state.row and (step != state.row_step or not entries.keys().isdisjoint(state.row)):
            self._commit(state)
        if step < state.last_step:
            self.backward_steps += 1
            self._report_once(
                f"backward:{event.scope}",
                "W&B run for scope %r: step %d came after step %d; kept as its own row "
                "(plotted against %r), not dropped",
                event.scope,
                step,
                state.last_step,
                self.step_key,
            )
        state.row.update(entries)
        state.row_step = step
        state.note(event)

    def flush(self) -> None:
        """Commit the latest step of every run and hand the committed rows to W&B."""
        self._apply_config()
        for state in self._runs.values():
            state.commit(self.step_key)
            self._rows.hand(state)
        self._rows.fold()

    def when_durable(self, callback: Callable[[], object]) -> None:
        """The host's hook: ``callback`` once W&B wrote every row handed so far into its
        transaction log; only then does the host acknowledge the batches they came in."""
        self._rows.durable.when_durable(callback)

    def close(self) -> None:
        """Commit pending rows and finish every run; the next event starts new runs."""
        self.flush()
        runs, self._runs = self._runs, {}
        for scope, state in runs.items():
            try:
                state.run.finish()
            except Exception:  # one failing run must not keep the others open
                _logger.exception("finishing the W&B run of scope %r failed", scope)
        self._rows.close()
        self.resume_id = uuid.uuid4().hex[:16]  # reopened: new runs, as before
        self._videos.close()
        self._artifacts.close()
        if self.backward_steps:
            _logger.warning(
                "WandBHandler %r: %d rows had a step lower than the previous one (kept)",
                self.name,
                self.backward_steps,
            )

    def run_dirs(self) -> dict[str, str]:
        """Local directory of each live run, by scope (where offline runs are written)."""
        return {scope: str(Path(s.run.dir).parent) for scope, s in self._runs.items()}

    # -- internals --------------------------------------------------------------------------------

    def _start(self, scope: str) -> RunState:
        if self._rows.ledger is None:
            self.open()  # a bus that never opened it (open() is optional in the protocol)
        if scope == self.GLOBAL_SCOPE and self.run_name:
            name = self.run_name
        else:
            name = f"{self.run_name or 'run'}-{scope}"
        with self._config_lock:
            config = {**self._config, "scope": scope}
            self._config_updates.clear()
        settings = self._wandb.Settings()
        if self.env:
            settings.update_from_env_vars(dict(self.env))
        if self._api_key is not None:
            settings.api_key = self._api_key.reveal()
        with contextlib.suppress(Exception):  # a setting of newer wandb versions
            settings.x_transaction_log_flush_interval = _FLUSH_INTERVAL_S
        arguments: dict[str, Any] = {
            "id": run_id_of(self.resume_id, scope, self.GLOBAL_SCOPE),
            "resume": "allow",
            "settings": settings,
            "project": self.project,
            "entity": self.entity,
            "name": name,
            "group": self.group,
            "tags": self.tags,
            "config": config,
            "mode": self.mode,
            "reinit": self.reinit,
            "dir": self.dir,
        }
        run = self._wandb.init(**{**arguments, **self.wandb_init_kwargs})
        run.define_metric(self.step_key)
        run.define_metric("*", step_metric=self.step_key)
        log = None if self._rows.ledger is None else getattr(run.settings, "sync_file", None)
        state = RunState(run, log if isinstance(log, str) and log else None)
        self._runs[scope] = state
        return state

    def _upload(self, event: Event, state: RunState) -> None:
        try:
            self._artifacts.upload(self._wandb, state.run, event)
        except Exception as exc:  # a failed upload loses this artifact, counted; the run goes on
            self.artifact_failed += 1
            self._report_once("artifact", "W&B artifact upload failed (%r); counted", exc)

    def _commit(self, state: RunState) -> None:
        if state.commit(self.step_key):
            self._rows.hand(state)

    def _log_failed(self, exc: Exception) -> None:
        self.log_failed += 1
        self._report_once("log", "W&B run.log failed (%r); rows are dropped and counted", exc)

    def losses(self) -> dict[str, int]:
        """Rows ``run.log`` refused and artifacts not uploaded; shown by ``finish()``."""
        counts = {"log_failed": self.log_failed, "artifact_failed": self.artifact_failed}
        return {reason: n for reason, n in counts.items() if n}
