"""The run a remote sink reports to: its identity, its config, its registration.

Kept apart from :mod:`goggles_io.handlers.remote` (which batches and queues points): a run is
registered before its first point (``POST /runs``), again when config is recorded later, and
its identity may be adopted from ``register_run`` (the run directory's ``run.kv``) until then.
:class:`RunRegistration` is a collaborator the handler holds: it is given the handler's lock
and the function that queues a message, and reads nothing else of the handler.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from goggles_io._event.remote_protocol import register_body, run_path
from goggles_io._util.liveness import process_identity
from goggles_io.handlers._sender import Message

__all__ = ["RunRegistration"]


class RunRegistration:
    """One run's identity and config, and whether the collector has been told of it.

    Args:
        run_id: the id to register; a later ``adopt`` may replace it until registered.
        run_name: the display name; ``None`` takes the id (or, on ``adopt``, project/slug).
        heartbeat_s: the quiet period after which the sender sends a heartbeat.
        config: the run config to register with.
        lock: the handler's lock, held around every change (the methods ending in
            ``_locked`` expect the caller to hold it).
        put: queues a message for the sender, never refused (``force``); called locked.
        logged: the points logged so far, for the heartbeat.
    """

    def __init__(
        self,
        run_id: str,
        run_name: str | None,
        heartbeat_s: float,
        config: Mapping[str, Any],
        *,
        lock: threading.Lock,
        put: Callable[[Message], object],
        logged: Callable[[], int],
    ) -> None:
        self.run_id = run_id
        self.run_name = run_name or run_id
        self.name_given = run_name is not None
        self.heartbeat_s = heartbeat_s
        self.config: dict[str, Any] = dict(config)
        self.info: dict[str, Any] = {}
        self.registered = False
        self._lock = lock
        self._put = put
        self._logged = logged

    def spec(self) -> dict[str, Any]:
        """The handler spec's part that rebuilds this run elsewhere (``config``, ``run_info``,
        ``run_name`` when one was given, ``run_id``)."""
        with self._lock:
            return {
                "config": dict(self.config),
                "run_info": dict(self.info),
                "run_name": self.run_name if self.name_given else None,
                "run_id": self.run_id,
            }

    def record_config(self, mapping: Mapping[str, Any]) -> None:
        """Merge settings into the config; sent again at once if the run is registered."""
        with self._lock:
            self.config.update(mapping)
            if self.registered:
                self._put(self.register_message())

    def adopt(self, info: Mapping[str, Any]) -> None:
        """Take a run's identity (``run_id``, fields of ``run.kv``) unless already registered;
        keys naming a key (an API key, say) are not kept."""
        with self._lock:
            self.adopt_locked(info)

    def adopt_locked(self, info: Mapping[str, Any]) -> None:
        """:meth:`adopt`, the lock held by the caller."""
        if not self.registered and info.get("run_id"):
            self.run_id = str(info["run_id"])
            if not self.name_given:
                self.run_name = f"{info.get('project', '')}/{info.get('slug', self.run_id)}"
        self.info.update({k: v for k, v in info.items() if "key" not in k.lower()})

    def register(self, *, only_announced: bool = False) -> None:
        """Queue the registration now; with ``only_announced``, only for a run adopted from
        ``run_info`` and not registered yet (a handler rebuilt in the host, on ``open``)."""
        with self._lock:
            if not only_announced or (self.info and not self.registered):
                self.register_locked()

    def register_locked(self) -> None:
        """Queue the registration, the lock held by the caller."""
        self._put(self.register_message())
        self.registered = True

    def register_message(self) -> Message:
        """``POST /runs`` with the config; built by the process that sends (the host's, with a
        dedicated host), not carried in the spec."""
        body = register_body(
            self.run_id,
            self.run_name,
            self.config,
            self.info,
            self.heartbeat_s,
            process_identity(),
        )
        return ("register", "/runs", body, 0)

    def heartbeat_message(self) -> Message:
        """The heartbeat the sender sends after ``heartbeat_s`` quiet seconds."""
        body = {"time": time.time(), "points_logged": self._logged()}
        return ("heartbeat", run_path(self.run_id, "heartbeat"), body, 0)
