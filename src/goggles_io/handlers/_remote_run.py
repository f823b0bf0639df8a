"""The run a remote sink reports to: its identity, its config, its registration.

Kept apart from :mod:`goggles_io.handlers.remote` (which batches and queues points): a run is
registered before its first point (``POST /runs``), again when config is recorded later, and
its identity may be adopted from ``register_run`` (the run directory's ``run.kv``) until then.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from goggles_io._event.remote_protocol import register_body, run_path
from goggles_io._util.liveness import process_identity
from goggles_io.handlers._sender import Message

__all__ = ["RunRegistration"]


class RunRegistration:
    """The registration half of :class:`~goggles_io.handlers.remote.RemoteHandler`."""

    # Provided by RemoteHandler.
    server_url: str | None
    run_id: str
    run_name: str
    heartbeat_s: float
    _name_given: bool
    _lock: threading.Lock
    _config: dict[str, Any]
    _info: dict[str, Any]
    _registered: bool
    _logged: int

    if TYPE_CHECKING:

        def _put_locked(self, message: Message, *, force: bool = False) -> bool: ...

    def record_config(self, mapping: Mapping[str, Any]) -> None:
        """Merge settings into the run's config; sent with the registration (again if needed)."""
        if self.server_url is None:
            return
        with self._lock:
            self._config.update(mapping)
            if self._registered:
                self._put_locked(self._register_message(), force=True)

    def set_config(self, key: str, value: Any) -> None:
        """Record one setting (the metrics-logging guide's spelling of :meth:`record_config`)."""
        self.record_config({key: value})

    def register_run(self, info: Mapping[str, Any]) -> None:
        """Adopt a run's identity (``run_id`` and fields of ``run.kv``) and register it now."""
        with self._lock:
            self._adopt_locked(info)
        self.register()

    def _adopt_locked(self, info: Mapping[str, Any]) -> None:
        if not self._registered and info.get("run_id"):
            self.run_id = str(info["run_id"])
            if not self._name_given:
                self.run_name = f"{info.get('project', '')}/{info.get('slug', self.run_id)}"
        self._info.update({k: v for k, v in info.items() if "key" not in k.lower()})

    def register(self) -> None:
        """POST the run with its config now (before step 0), so a run dying early is visible."""
        if self.server_url is None:
            return
        with self._lock:
            self._register_locked()

    def open(self) -> None:
        """Register now if a run was announced (``run_info``) and not yet registered.

        A handler rebuilt from its spec in the host learns of ``register_run`` this way; the
        sender thread otherwise starts with the first batch.
        """
        if self.server_url is None or not self._info:
            return
        with self._lock:
            if not self._registered:
                self._register_locked()

    def _register_message(self) -> Message:
        # The process that sends (the host's, with a dedicated host): built here, not in the spec.
        body = register_body(
            self.run_id,
            self.run_name,
            self._config,
            self._info,
            self.heartbeat_s,
            process_identity(),
        )
        return ("register", "/runs", body, 0)

    def _heartbeat_message(self) -> Message:
        body = {"time": time.time(), "points_logged": self._logged}
        return ("heartbeat", run_path(self.run_id, "heartbeat"), body, 0)

    def _register_locked(self) -> None:
        self._put_locked(self._register_message(), force=True)
        self._registered = True
