"""``TelemetryHandler``: Monty's own telemetry stream (``tbp.monty.telemetry``) into a run.

Monty's publishers are ``telemetry.tbp.monty.<module>`` loggers that do not propagate, and
Monty's logging setup replaces the handlers of ``telemetry.tbp.monty`` with the ones its
``+telemetry=<name>`` config declares: a handler added to those loggers beforehand receives
nothing. So this handler is declared the way Monty's own JSON console handler is, in a Hydra
telemetry config this project ships (``+telemetry=split_telemetry``, found through the
search-path plugin in ``hydra_plugins/split_telemetry_searchpath``).

Each record's event (a pydantic ``TelemetryEvent``, ``record.msg``) is dumped to plain JSON at
``emit`` time (its extras may be live objects that change later), stamped with the run and the
run-wide episode, and handed to the run (``Session.monty_event``): the event log, every
subscriber of the runtime stream, and its numbers as ``monty/<kind>/<field>`` on the bus.
"""

from __future__ import annotations

import json
import logging
import threading
from collections import deque
from typing import Any

from experiment_telemetry.monty import _session
from experiment_telemetry.monty.events import MontyTelemetryEvent

__all__ = ["TelemetryHandler", "dump_event"]

_WAITING_MAX = 100_000


def _plain(value: Any) -> Any:
    """What pydantic cannot serialise itself: numpy arrays and scalars, anything else as text."""
    tolist = getattr(value, "tolist", None)
    if callable(tolist):
        return tolist()
    return str(value)


def dump_event(record: logging.LogRecord) -> tuple[str, dict[str, Any], int]:
    """Monty's kind, the event as plain JSON data (``kind`` included) and its schema version.

    A record whose message is not a pydantic model (a plain log line on a telemetry logger)
    becomes ``{"kind": "log", "message": ...}``.
    """
    schema = record.msg
    dump = getattr(schema, "model_dump", None)
    if not callable(dump):
        return "log", {"kind": "log", "message": record.getMessage()}, 1
    try:
        data = dump(mode="json", fallback=_plain)
    except TypeError:  # pydantic before 2.11 has no fallback
        data = json.loads(json.dumps(dump(), default=_plain))
    kind = str(data.get("kind") or record.getMessage())
    version = getattr(type(schema), "VERSION", 1)
    return kind, data, version if isinstance(version, int) else 1


def _numbers(data: dict[str, Any]) -> dict[str, float]:
    return {
        key: float(value)
        for key, value in data.items()
        if isinstance(value, (int, float)) and not isinstance(value, bool)
    }


class TelemetryHandler(logging.Handler):
    """A ``logging.Handler`` for Monty's ``telemetry.*`` loggers that records into the run.

    Args (all optional; as in Monty's telemetry config, beside ``class:``):
        level: the handler's level.
        root: where the run's folder goes (the shipped config: Monty's output folder).
        project, slug, wandb, console: the run's, see ``experiment_telemetry.monty``.

    ``received`` counts the events taken, by Monty kind; ``errors`` those that could not be
    dumped (the stdlib's ``handleError`` reports each).
    """

    def __init__(
        self,
        level: int | str = logging.NOTSET,
        *,
        root: str | None = None,
        project: str | None = None,
        slug: str | None = None,
        wandb: bool | None = None,
        console: bool | None = None,
    ) -> None:
        super().__init__(level)
        _session.configure(root=root, project=project, slug=slug, wandb=wandb, console=console)
        self.errors = 0
        self._held: _session.Session | None = None
        self._waiting: deque[tuple[MontyTelemetryEvent, dict[str, float]]] = deque()
        self._dropped = 0
        self._mutex = threading.Lock()

    def __reduce__(self) -> tuple[Any, ...]:
        """Monty saves its config with ``torch.save``; a copy is a fresh handler, not this run."""
        return (type(self), (self.level,))

    def emit(self, record: logging.LogRecord) -> None:
        try:
            kind, data, version = dump_event(record)
            fields = json.dumps(data, allow_nan=False, default=_plain)
        except Exception:
            self.errors += 1
            self.handleError(record)
            return
        with self._mutex:
            session = self._run()
            run_id, episode, mode = session.stamp() if session is not None else ("", 0, None)
            event = MontyTelemetryEvent(
                timestamp=record.created,
                monty_kind=kind,
                logger=record.name,
                level=record.levelname,
                fields=fields,
                schema_version=version,
                run_id=run_id,
                episode=episode,
                mode=mode,
            )
            if session is None:
                _session.on_open(self.flush_waiting)
                if len(self._waiting) < _WAITING_MAX:
                    self._waiting.append((event, _numbers(data)))
                else:
                    self._dropped += 1
                return
            session.monty_event(event, _numbers(data))

    @property
    def received(self) -> dict[str, int]:
        """Events handed to the run, by Monty's kind."""
        held = self._held
        return dict(held.telemetry_counts) if held is not None else {}

    def _run(self) -> _session.Session | None:
        """The run to send to; None while a step hook is still to open it (events wait)."""
        held = self._held
        if held is not None and not held.closed:
            return held
        if _session.waiting_for_hook():
            return None
        self._held = held = _session.acquire()
        self._flush(held)
        return held

    def _flush(self, session: _session.Session) -> None:
        run_id, _, mode = session.stamp()
        while self._waiting:  # they came before the run opened: in its first episode
            event, numbers = self._waiting.popleft()
            session.monty_event(_restamp(event, run_id, mode), numbers)
        if self._dropped:
            logging.getLogger(__name__).warning(
                "Monty telemetry: %d events arrived before the run opened and were dropped",
                self._dropped,
            )
            self._dropped = 0

    def flush_waiting(self) -> None:
        """Hand over events that waited for the step hook (the hook opened the run)."""
        with self._mutex:
            if self._waiting:
                self._run()

    def close(self) -> None:
        """Deliver what waits, then let go of the run (the last piece to let go closes it)."""
        with self._mutex:
            if self._waiting:
                held = self._held
                if held is None or held.closed:
                    held = self._held = _session.acquire()
                self._flush(held)
            held, self._held = self._held, None
        if held is not None and not held.closed:
            _session.release(held)
        super().close()


def _restamp(event: MontyTelemetryEvent, run_id: str, mode: str | None) -> MontyTelemetryEvent:
    import attrs

    return attrs.evolve(event, run_id=run_id, mode=event.mode or mode)
