"""``RemoteHandler``: stream scalars to a dashboard over HTTP without ever stalling training.

Over 400 lines, one piece: the handler's public surface; its delivery, run, endpoint, durability
and outbox are already in the _remote_*.py files.

The training thread only appends a point to the current batch; a full batch is handed to a
delivery pipe whose worker sends it (``_remote_delivery.py``, ``_sender.py``, ADR 0008 and ADR
0025). When the collector is down or slow the pipe grows to its byte budget and then spills to
disk, in order; batches are refused and counted only when the spool is full too: training never
waits on the network. ``close()`` flushes, sends the finish, drains the pipe while the
collector makes progress and prints a one-line tally.

Environment (argument first, then the environment, then a ``.env`` file found from the current
directory upwards; ``os.environ`` is never modified):

* ``TELEMETRY_REMOTE_URL``: collector base URL; none -> the handler is inert and says so once.
* ``TELEMETRY_REMOTE_API_KEY``: sent as ``Authorization: Bearer``; never logged or repr'd.
* ``TELEMETRY_NO_REMOTE=1``: silence this run without editing the shared ``.env``.

All three are resolved when the handler is constructed, in the process that constructs it
(``_remote_endpoint.py``; the run it reports to is ``_remote_run.py``): the
handler spec carries the resolved URL and switch (``read_env=False``) and the key under its
``secrets`` part, so a copy rebuilt in the socket transport's host process (another directory,
another environment) sends to the same place with the same key.
"""

from __future__ import annotations

import logging
import math
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any, ClassVar

from goggles_io._delivery.policy import check_when_full
from goggles_io._event.records import Event, Kind
from goggles_io._event.remote_protocol import (
    check_point_name,
    check_point_step,
    run_path,
)
from goggles_io._util.env import ENV_REMOTE_API_KEY, ENV_REMOTE_OFF, ENV_REMOTE_URL
from goggles_io._util.report import report
from goggles_io.exceptions import InvalidNameError, InvalidPayloadError
from goggles_io.handlers._remote_delivery import (
    RemoteDelivery,
    losses_of,
    start_delivery,
    tally_line,
)
from goggles_io.handlers._remote_durable import (
    OUTBOX_AFTER_S,
    DurablePoints,
    resend_messages,
    run_outbox,
)
from goggles_io.handlers._remote_endpoint import check_settings, resolve_endpoint
from goggles_io.handlers._remote_run import RunRegistration
from goggles_io.handlers._sender import Message, Point
from goggles_io.handlers.base import BaseHandler, register_handler

__all__ = ["ENV_API_KEY", "ENV_NO_REMOTE", "ENV_URL", "RemoteHandler"]

_logger = logging.getLogger(__name__)

# The variables' public names here (``_util/env.py`` names every variable goggles_io reads).
ENV_URL = ENV_REMOTE_URL
ENV_API_KEY = ENV_REMOTE_API_KEY
ENV_NO_REMOTE = ENV_REMOTE_OFF
_DEFAULT_QUEUE_BYTES = 64 * 1024 * 1024


@register_handler
class RemoteHandler(BaseHandler):
    """Batch scalar metrics into JSON POSTs to a collector (``goggles_io.server.collector``).

    Args:
        server_url: Collector base URL; default ``TELEMETRY_REMOTE_URL``.
        run_name: Display name of the run on the dashboard.
        api_key: Bearer token; default ``TELEMETRY_REMOTE_API_KEY``. Kept as a
            :class:`~goggles_io._util.secret.Secret`: never in the repr, the spec's ``data`` or any
            message; it travels to the host under the spec's ``secrets``.
        buffer_size: Points per batch (fresher charts vs fewer requests).
        heartbeat_s: Send a heartbeat after this many quiet seconds (the collector calls a run
            silent for 3 periods crashed; on its own machine it sees a dead sender at once).
        queue_bytes: Memory the queued points may take (~200 bytes a point; default 64 MiB,
            about 330,000 points); beyond it they wait in the spool on disk, in order, and are
            refused (counted) only when the spool budget (``GOGGLES_SPOOL_BYTES``) or the disk is
            full. The training thread never waits on the network.
        queue_batches: Optionally also bound the batches in memory (default: bytes only).
        when_full: ``"drop"`` refuses at once past ``queue_bytes`` instead of spilling (the
            behaviour before ADR 0025); default ``GOGGLES_WHEN_FULL``. ``"block"`` is read as
            ``"drop"``: waiting would make the logging thread wait on the network.
        enabled: ``False`` silences this run; ``None`` honours ``TELEMETRY_NO_REMOTE``.
        run_id: Id to register; default a fresh one, or the one ``register_run`` brings.
        timeout_s: Socket timeout of one HTTP request (on the sender thread only).
        close_timeout_s: How long ``close()`` waits for the queue to drain without progress
            (no batch stored for that long: the rest is counted lost).
        max_body_bytes: Largest request body sent; bigger batches are split (keep it under the
            collector's limit, 16 MiB for the reference one).
        config: Run config to register with (merged with :meth:`record_config` calls).
        run_info: Run identity from :meth:`register_run`; when given, :meth:`open` registers.
        read_env: ``False`` uses the arguments only (no environment, no ``.env``): how the
            spec rebuilds the handler elsewhere with the values resolved here.

    Raises:
        ConfigurationError: a malformed URL or a non-positive size or duration.
    """

    capabilities: ClassVar[frozenset[Kind]] = frozenset({Kind.METRIC})
    default_name = "remote"
    remote_methods: ClassVar[frozenset[str]] = frozenset({"record_config", "register_run"})

    def __init__(
        self,
        server_url: str | None = None,
        run_name: str | None = None,
        api_key: str | None = None,
        buffer_size: int = 200,
        heartbeat_s: float = 5.0,
        queue_batches: int | None = None,
        enabled: bool | None = None,
        run_id: str | None = None,
        timeout_s: float = 10.0,
        close_timeout_s: float = 10.0,
        name: str | None = None,
        level: int = logging.NOTSET,
        config: Mapping[str, Any] | None = None,
        run_info: Mapping[str, Any] | None = None,
        read_env: bool = True,
        max_body_bytes: int = 4 * 1024 * 1024,
        queue_bytes: int = _DEFAULT_QUEUE_BYTES,
        when_full: str | None = None,
    ) -> None:
        super().__init__(name=name, level=level)
        check_settings(
            buffer_size=buffer_size,
            max_body_bytes=max_body_bytes,
            queue_batches=queue_batches,
            queue_bytes=queue_bytes,
            heartbeat_s=heartbeat_s,
            timeout_s=timeout_s,
            close_timeout_s=close_timeout_s,
            config=config,
            run_info=run_info,
        )
        self.max_body_bytes, self.queue_bytes = max_body_bytes, queue_bytes
        self.when_full = None if when_full is None else str(check_when_full(when_full))
        self.buffer_size, self.queue_batches = buffer_size, queue_batches
        self.heartbeat_s = heartbeat_s
        self.timeout_s, self.close_timeout_s = timeout_s, close_timeout_s
        self._lock = threading.Lock()
        self._run = RunRegistration(
            run_id or uuid.uuid4().hex, run_name, heartbeat_s, config or {},
            lock=self._lock, put=partial(self._put_locked, force=True), logged=self.total_logged,
        )  # fmt: skip
        self._pending: list[Point] = []
        self._seq = 0
        self._durable: DurablePoints | None = None  # made with the delivery (ADR 0069)
        self._logged = 0
        self._invalid = 0
        self._delivery: RemoteDelivery | None = None
        self._closing: RemoteDelivery | None = None
        self._last_stats: dict[str, int] = {}
        self._ending = "done"  # the finish status close() sends; producer_lost() makes it crashed
        if run_info:
            self._run.adopt(run_info)
        endpoint = resolve_endpoint(
            self.name, server_url, api_key, enabled=enabled, read_env=read_env, logger=_logger
        )
        self.server_url, self._api_key = endpoint.url, endpoint.api_key
        if endpoint.parts is not None:
            self._url = endpoint.parts

    def __repr__(self) -> str:
        state = "inert" if self.server_url is None else self.server_url
        key = "set" if self._api_key else "unset"
        return f"RemoteHandler(name={self.name!r}, run_id={self.run_id!r}, url={state!r}, api_key={key})"

    @property
    def run_id(self) -> str:
        """The run's id: the one given, a fresh one, or the one ``register_run`` brought."""
        return self._run.run_id

    @property
    def run_name(self) -> str:
        """The run's display name on the dashboard."""
        return self._run.run_name

    @property
    def inert(self) -> bool:
        """Whether this handler sends nothing (no URL, or silenced)."""
        return self.server_url is None

    def config(self) -> dict[str, Any]:
        """Constructor arguments for the spec, resolved here; the API key is in :meth:`secrets`."""
        return {
            **super().config(),
            "server_url": self.server_url,
            "enabled": self.server_url is not None,
            "read_env": False,
            **self._run.spec(),
            "buffer_size": self.buffer_size,
            "heartbeat_s": self.heartbeat_s,
            "queue_batches": self.queue_batches,
            "queue_bytes": self.queue_bytes,
            "when_full": self.when_full,
            "timeout_s": self.timeout_s,
            "close_timeout_s": self.close_timeout_s,
            "max_body_bytes": self.max_body_bytes,
        }

    def secrets(self) -> dict[str, str]:
        """The API key, for the spec's ``secrets`` part (a :class:`Secret`, printed redacted)."""
        return {} if self._api_key is None else {"api_key": self._api_key}

    # -- the run (RunRegistration) -----------------------------------------------------------

    def record_config(self, mapping: Mapping[str, Any]) -> None:
        """Merge settings into the run's config; sent with the registration (again if needed)."""
        if self.server_url is not None:
            self._run.record_config(mapping)

    def set_config(self, key: str, value: Any) -> None:
        """Record one setting (the metrics-logging guide's spelling of :meth:`record_config`)."""
        self.record_config({key: value})

    def register_run(self, info: Mapping[str, Any]) -> None:
        """Adopt a run's identity (``run_id`` and fields of ``run.kv``) and register it now."""
        self._run.adopt(info)
        self.register()

    def register(self) -> None:
        """POST the run with its config now (before step 0), so a run dying early is visible."""
        if self.server_url is not None:
            self._run.register()

    def open(self) -> None:
        """Register now if a run was announced (``run_info``) and not yet registered: how a
        handler rebuilt in the host learns of ``register_run`` (else the first batch does);
        or if a dead handler of this run left points in its outbox: they go out first."""
        if self.server_url is None:
            return
        if run_outbox(self.name, self.server_url, self.run_id).path.exists():
            self.register()
        else:
            self._run.register(only_announced=True)

    # -- producer side ----------------------------------------------------------------------

    def log_scalar(self, name: str, value: float, step: int | None = None) -> None:
        """Add one point to the current batch; a full batch is queued (or refused), never sent here.

        Raises:
            InvalidNameError: ``name`` is not non-empty UTF-8 text of at most 1024 characters.
            InvalidPayloadError: ``value`` is not a real number, or ``step`` is not ``None`` or
                a whole number that fits in 64 bits (NaN, 2**70 and 1.5 are refused here, at
                the call, instead of being lost later at the collector).
        """
        self._add_point(name, value, step, time.time())

    def _add_point(
        self,
        name: str,
        value: float,
        step: int | None,
        when: float,
        producer: str = "",
        pseq: int = 0,
        part: int = 0,
    ) -> None:
        """Queue one point stamped ``when`` (the logging call's time, as ``log.jsonl``'s), and
        the event's ``producer`` and sequence with the metric's index in it, when numbered."""
        if self.server_url is None:
            return
        check_point_name(name)
        step = check_point_step(name, step)
        try:
            number = float(value)
        except (TypeError, ValueError):
            msg = f"value of metric {name!r} must be a real number (got {value!r})."
            raise InvalidPayloadError(msg, value=value) from None
        with self._lock:
            self._seq += 1
            self._logged += 1
            clean = number if math.isfinite(number) else None  # JSON has no NaN/inf
            self._pending.append((self._seq, name, clean, step, when, producer, pseq, part))
            if len(self._pending) >= self.buffer_size:
                self._flush_locked()

    def handle(self, event: Event) -> None:
        """Enqueue every metric of a ``METRIC`` event as a point at the event's step.

        Each point carries the event's timestamp (when it was logged, not when this handler
        took it: in a host that is later), so the collector's wall-time chart is the folder's,
        and the event's producer and sequence with the metric's index in the event, by which
        the collector skips a redelivery (ADR 0069). A metric the protocol cannot carry is
        skipped and counted (``invalid`` in :meth:`losses`); the event's other metrics still go.
        """
        when = event.timestamp or time.time()
        producer, pseq = event.producer, event.seq
        for part, (name, value) in enumerate(event.payload.items()):
            try:
                self._add_point(name, value, event.step, when, producer, pseq, part)
            except (InvalidNameError, InvalidPayloadError) as exc:
                with self._lock:
                    self._invalid += 1
                    first = self._invalid == 1
                if first:
                    _logger.error("remote handler %r: %s Skipped and counted.", self.name, exc)

    def total_logged(self) -> int:
        """Points logged so far (sent, queued, refused or pending)."""
        return self._logged

    def flush(self) -> None:
        """Queue the current partial batch (never waits for the network)."""
        if self.server_url is None:
            return
        with self._lock:
            self._flush_locked()

    def close(self) -> None:
        """Flush, send the finish, drain within ``close_timeout_s``, join, print the tally."""
        if self.server_url is None:
            return
        with self._lock:
            self._flush_locked()
            delivery, self._delivery = self._delivery, None
            if delivery is not None:
                summary: dict[str, Any] = {"points_logged": self._logged}
                if self._ending != "done":
                    summary["reason"] = "the logging process left without finish()"
                body = {"status": self._ending, "summary": summary}
                self._ending = "done"
                delivery.put(("finish", run_path(self.run_id, "finish"), body, 0), force=True)
            self._run.registered = False
        if delivery is None:
            return
        self._closing = delivery  # losses() keeps seeing its queue while it drains
        try:
            delivery.close(self.close_timeout_s)
        finally:
            self._last_stats = delivery.stats()
            self._closing = None
            durable, self._durable = self._durable, None
            if durable is not None:
                durable.close()
        report(tally_line(self.name, self._last_stats, self._invalid))

    def producer_lost(self) -> None:
        """The host's hook: the process logging through this handler died without ``finish()``;
        the close that follows reports the run ``crashed``, not ``done``."""
        with self._lock:
            self._ending = "crashed"

    def losses(self) -> dict[str, int]:
        """Points not stored, by reason: ``refused`` (queue full), ``rejected`` (by the
        collector), ``invalid`` (not sendable), ``lost`` (close deadline), ``unsent`` (still
        queued or in flight: ``finish()`` timed out while the sender was draining)."""
        with self._lock:
            delivery, invalid = self._delivery or self._closing, self._invalid
        return losses_of(delivery, self._last_stats, invalid)

    def stats(self) -> dict[str, int]:
        """Counters: points sent / refused / rejected / lost, batches refused, retries, queued."""
        with self._lock:
            delivery = self._delivery
        return delivery.stats() if delivery is not None else dict(self._last_stats)

    # -- internals ----------------------------------------------------------------------------

    def _put_locked(self, message: Message, *, force: bool = False) -> bool:
        """Queue ``message`` for the sender (made with the first one); ``False``: refused."""
        if self._delivery is None:
            self._delivery = start_delivery(self, self._api_key, self._run, _logger)
            self._durable = DurablePoints(self._delivery.done_points, None, OUTBOX_AFTER_S)
            self._delivery.on_stored = self._durable.check
        durable = self._durable
        taken = self._delivery.put(message, force=force)
        if taken and durable is not None:
            durable.accepted_message(message)
            if message[0] == "register" and durable.outbox is None:
                self._recover_locked(durable)  # the run is named for good now: its outbox
        return taken

    def _recover_locked(self, durable: DurablePoints) -> None:
        """Open this run's outbox and send first what a dead handler of the run left in it
        (numbered ahead of the points waiting here: the collector counts no gap)."""
        durable.outbox = outbox = run_outbox(self.name, str(self.server_url), self.run_id)
        saved = outbox.recover()
        if saved:
            n = len(saved)
            self._pending = [(seq + n, *rest) for seq, *rest in self._pending]  # type: ignore[misc]
            self._seq += n
            for message in resend_messages(
                saved, run_path(self.run_id, "points"), self.buffer_size
            ):
                self._put_locked(message, force=True)
            durable.recovered(durable.accepted)
            report(
                f"remote [{self.name}]: {n} points a dead host took are sent again from {outbox.path}"
            )

    def when_durable(self, callback: Callable[[], object]) -> None:
        """The host's hook: ``callback`` once every point taken so far is stored by the
        collector or in this run's outbox; only then does the host acknowledge the batches
        they came in (ADR 0069)."""
        durable = self._durable
        if durable is None:
            callback()
        else:
            durable.when_durable(callback)

    def _flush_locked(self) -> None:
        """Queue the pending points as one batch (none pending: nothing)."""
        if not self._pending:
            return
        if not self._run.registered:
            self._run.register_locked()  # lazy registration on the first flush
        batch, self._pending = self._pending, []  # tuples: the sender thread encodes them
        path = run_path(self.run_id, "points")
        self._put_locked(("points", path, {"points": batch}, len(batch)))
