"""``WorkerPool``: episodes run in worker processes, their outcomes come back in plan order.

Each worker is a ``WorkerChannel`` (``channel.py``): a fresh interpreter building the runtime
from a ``RuntimeSpec`` and forwarding its events to the goggles bus. The pool keeps one
episode per worker in flight. Learning episodes run one after another on the *learner* (the
lowest live worker), since each changes the memory the next one starts from. Before the first
non-learning episode after learning, the learner's memory is dumped (plain data) and loaded
into every worker, and each non-learning episode starts by reloading it: its outcome depends
only on that memory and its own arguments, whichever worker runs it.

A worker whose pipe closes mid-episode (killed, crashed) makes that episode *lost*; the others
go on. A worker is free for the next episode once it said ``ran`` (its flush goes on in the
background, ADR 0075). When an episode is complete (its end marker after ``ran``, or the
worker's ``done`` after its flush and a bounded wait) and the outcome it becomes are decided in
``completion.py``.
"""

from __future__ import annotations

import os
import secrets
import shutil
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator, Mapping
from functools import partial
from typing import Any

import goggles_io
from experiment_telemetry._validate import check_int
from experiment_telemetry.exceptions import ExperimentValueError, WorkerError
from experiment_telemetry.workers.channel import WorkerChannel, worker_env
from experiment_telemetry.workers.completion import AGAIN, RERUN, EpisodeCompletion, Slot
from experiment_telemetry.workers.inbox import EpisodeInbox
from experiment_telemetry.workers.outcomes import (
    EpisodeOutcome,
    EpisodeTask,
    WorkerLoss,
    WorkerReport,
)
from experiment_telemetry.workers.pause import CollectorPause
from experiment_telemetry.workers.spec import RuntimeSpec

__all__ = ["WorkerPool"]

_START_TIMEOUT_S = 120.0


class _Worker(WorkerChannel):
    """A worker's channel with the pool's bookkeeping: ready, its episode, other replies."""

    def __init__(self, index: int, env: Mapping[str, str], pool: WorkerPool) -> None:
        super().__init__(
            index, env, on_reply=partial(pool._on_reply, self), on_exit=partial(pool._on_exit, self)
        )
        self.ready = False
        self.slot: Slot | None = None
        """The episode the worker is running (None once it said ``ran``)."""
        self.flushing: deque[Slot] = deque()
        """Episodes it ran whose ``done`` (the flush after them) has not come yet, in order."""
        self.replies: deque[dict[str, Any]] = deque()
        self.last = -1
        """When it was last sent an episode (the pool's dispatch count then; -1: never)."""


class WorkerPool:
    """``num_workers`` worker processes running one runtime's episodes for one experiment.

    Needs the goggles_io socket transport (workers and experiment share its host). Use as a
    context manager or call ``start()`` and ``close()``.

    Args:
        num_workers: worker processes (>= 1).
        spec: how each worker builds and drives the runtime.
        levels: ``runtime_telemetry.configure`` levels applied in every worker.
        flush_timeout_s: bound of a worker's flush after each episode, and of the wait for a
            complete episode's events after that (past it, the episode is undelivered).

    Raises:
        ExperimentValueError: ``num_workers`` < 1, or goggles_io runs in-process.
    """

    def __init__(
        self,
        num_workers: int,
        spec: RuntimeSpec,
        *,
        levels: Mapping[str, str | int] | None = None,
        flush_timeout_s: float = 30.0,
    ) -> None:
        check_int("num_workers", num_workers, 1)
        self.num_workers = num_workers
        self.spec = spec
        self.levels = dict(levels or {"telemetry": "INFO"})
        self.flush_timeout_s = flush_timeout_s
        self.scope = f"experiment_workers.p{os.getpid()}x{secrets.token_hex(4)}"
        self.report = WorkerReport(num_workers=num_workers)
        self._cond = threading.Condition()
        self._version = 0
        self._sent = 0
        """Episodes sent so far (stamps each worker's last dispatch)."""
        self._workers: list[_Worker] = []
        self._inbox: EpisodeInbox | None = None
        self._completion: EpisodeCompletion | None = None
        self._dirty = True  # the workers' shared memory must come from the learner first
        self._remote_dir: str | None = None  # the workers' own socket dir, via a broker
        self._learner: _Worker | None = None
        self._pause = CollectorPause()
        """No cyclic collections from an episode's decode until the next outcome is asked for."""

    # -- lifecycle ---------------------------------------------------------------------------
    def __enter__(self) -> WorkerPool:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def start(self) -> None:
        """Subscribe to the bridge scope, start the workers and wait until each is ready.

        Raises:
            ExperimentValueError: goggles_io runs in-process (workers could not reach it).
            WorkerError: a worker exited or stayed silent during start.
        """
        if isinstance(goggles_io.get_bus(), goggles_io.EventBus):
            msg = (
                "num_workers needs the goggles_io socket transport, but GOGGLES_TRANSPORT="
                f"{os.environ.get('GOGGLES_TRANSPORT')!r} keeps it in this process; unset it "
                "or set it to 'socket'."
            )
            raise ExperimentValueError(msg, os.environ.get("GOGGLES_TRANSPORT"))
        # Via a broker, workers stand for other machines: their own host, on a socket of theirs.
        env, self._remote_dir = worker_env(self.scope)
        if self._remote_dir is not None:
            # No event could reach this process: fail now, not one wait per episode later.
            problem = goggles_io.check_broker()
            if problem is not None:
                shutil.rmtree(self._remote_dir, ignore_errors=True)
                self._remote_dir = None
                msg = f"the workers reach this process only through the broker, but {problem}."
                raise WorkerError(msg, None, None)
        self._inbox = EpisodeInbox(self.scope, self._cond, from_broker=self._remote_dir is not None)
        self._completion = EpisodeCompletion(
            self._inbox, self._cond, self.flush_timeout_s, self._pause
        )
        setup = {
            "scope": self.scope,
            "runtime": self.spec.to_dict(),
            "levels": self.levels,
            "flush_timeout_s": self.flush_timeout_s,
        }
        for index in range(self.num_workers):
            worker = _Worker(index, env, self)
            self._workers.append(worker)
            worker.send({**setup, "worker": index})
            worker.start_reading()
        deadline = time.monotonic() + _START_TIMEOUT_S
        with self._cond:
            while not all(w.ready for w in self._workers):
                dead = [w for w in self._workers if not w.alive and not w.ready]
                if dead:
                    w = dead[0]
                    msg = (
                        f"worker {w.index} (pid {w.pid}) exited with code {w.proc.returncode} "
                        f"while starting; its stderr above says why (runtime {self.spec.factory!r})."
                    )
                    raise WorkerError(msg, w.index, None)
                left = deadline - time.monotonic()
                if left <= 0:
                    msg = f"workers did not start within {_START_TIMEOUT_S:.0f} s."
                    raise WorkerError(msg, None, None)
                self._cond.wait(left)
        self._learner = self._workers[0]

    def close(self, timeout_s: float = 30.0) -> None:
        """End the workers (EOF on their stdin: they finish goggles_io and exit; killed after
        ``timeout_s``), then the subscription. Idempotent."""
        for worker in self._workers:
            worker.close_input()
        deadline = time.monotonic() + timeout_s
        for worker in self._workers:
            worker.wait(deadline - time.monotonic())
        for worker in self._workers:
            worker.join(5.0)
        if self._inbox is not None:
            self.report.subscription_dropped = self._inbox.dropped
            self._inbox.close()
            self._inbox = None
            self._completion = None
        if self._remote_dir is not None:
            shutil.rmtree(self._remote_dir, ignore_errors=True)
            self._remote_dir = None

    # -- running episodes --------------------------------------------------------------------
    def run(self, tasks: Iterable[EpisodeTask]) -> Iterator[EpisodeOutcome]:
        """Run ``tasks`` and yield their outcomes in the order given.

        ``tasks`` is consumed lazily, at most two per worker ahead of the outcome yielded.

        Raises:
            WorkerError: every worker is gone while episodes remain.
        """
        try:
            yield from self._run(tasks)
        finally:
            self._pause.release()  # the caller stopped early, or the pool raised

    def _run(self, tasks: Iterable[EpisodeTask]) -> Iterator[EpisodeOutcome]:
        source = iter(tasks)
        pending: deque[Slot] = deque()
        todo: deque[Slot] = deque()
        exhausted = False
        while True:
            while not exhausted and len(pending) < 2 * self.num_workers:
                task = next(source, None)
                if task is None:
                    exhausted = True
                    break
                slot = Slot(task)
                pending.append(slot)
                todo.append(slot)
            with self._cond:
                seen = self._changes()
            self._dispatch(todo)
            if not pending:
                return
            completion = self._completion
            assert completion is not None
            outcome = completion.settle(pending[0])
            if outcome is AGAIN:
                continue
            if outcome is RERUN:
                slot = pending[0]
                slot.reset()
                todo.appendleft(slot)
                continue
            if isinstance(outcome, EpisodeOutcome):
                pending.popleft()
                self.report.count(outcome)
                yield outcome
                # The caller is done with it: collections again (ADR 0084); its events are
                # freed when the caller drops the outcome, while the next episode decodes.
                self._pause.release()
                continue
            with self._cond:
                if not any(w.alive for w in self._workers):
                    msg = f"all {self.num_workers} workers were lost; {len(pending)} episodes not run."
                    raise WorkerError(msg, None, pending[0].task.context.episode)
                while self._changes() == seen:
                    self._cond.wait(self._wait_s(pending[0]))
                    if pending[0].deadline is not None and time.monotonic() > pending[0].deadline:
                        break

    def _changes(self) -> int:
        inbox = self._inbox
        return self._version + (0 if inbox is None else inbox.arrivals)

    @staticmethod
    def _wait_s(slot: Slot) -> float | None:
        return None if slot.deadline is None else max(0.0, slot.deadline - time.monotonic())

    def _live(self) -> list[_Worker]:
        return [w for w in self._workers if w.alive]

    def _get_learner(self) -> _Worker | None:
        if self._learner is None or not self._learner.alive:
            live = self._live()
            self._learner = live[0] if live else None
        return self._learner

    def _dispatch(self, todo: deque[Slot]) -> None:
        """Send episodes in plan order while a suitable worker is idle (a parallel episode to
        the free worker idle the longest)."""
        while todo:
            slot = todo[0]
            if slot.task.learns:
                worker = self._get_learner()
                if worker is None or worker.slot is not None:
                    return
                self._dirty = True
            else:
                if self._dirty and not self._share_memory():
                    return
                # The free worker idle the longest: an episode that ends before the next is
                # sent (a fast runtime) must not keep the queue on one worker while the rest idle.
                free = [w for w in self._workers if w.alive and w.slot is None]
                if not free:
                    return
                worker = min(free, key=lambda w: w.last)
            message = {
                "op": "episode",
                "episode": slot.task.context.episode,
                "kwargs": dict(slot.task.kwargs),
                "reload": not slot.task.learns,
            }
            with self._cond:
                worker.slot = slot
                slot.worker = worker
            self._sent += 1
            worker.last = self._sent
            todo.popleft()
            worker.send(message)  # a dead pipe shows as the worker's death: the slot is lost

    def _share_memory(self) -> bool:
        """Dump the learner's memory and load it into every live worker; False: not yet."""
        learner = self._get_learner()
        if learner is None or learner.slot is not None:
            return False
        with self._cond:
            learner.replies.clear()
        learner.send({"op": "dump"})
        with self._cond:
            while learner.alive and not learner.replies:
                self._cond.wait()
            if not learner.replies:
                return False  # the learner died; the next call picks another one
            reply = learner.replies.popleft()
        if "memory" not in reply:
            msg = (
                f"worker {learner.index} (pid {learner.pid}) could not dump the runtime's "
                f"memory for the parallel episodes:\n{reply.get('error')}"
            )
            raise WorkerError(msg, learner.index, None)
        memory = reply["memory"]
        for worker in self._live():
            worker.send({"op": "load", "memory": memory})
        self._dirty = False
        return True

    # -- what the reader thread of each worker reports ---------------------------------------
    def _on_reply(self, worker: _Worker, message: dict[str, Any]) -> None:
        with self._cond:
            op = message.get("op")
            if op == "ready":
                worker.ready = True
            elif op == "ran" and worker.slot is not None:
                worker.slot.ran = message  # the worker is free; its flush goes on (ADR 0075)
                worker.flushing.append(worker.slot)
                worker.slot = None
            elif op == "done":
                if worker.flushing:
                    slot = worker.flushing.popleft()
                elif worker.slot is not None:  # a worker that said done without ran first
                    slot, worker.slot = worker.slot, None
                else:
                    slot = None
                if slot is not None:
                    slot.done = message
                    slot.done_at = time.monotonic()
            else:
                worker.replies.append(message)
            self._version += 1
            self._cond.notify_all()

    def _on_exit(self, worker: _Worker, returncode: int) -> None:
        with self._cond:
            worker.alive = False
            slot, worker.slot = worker.slot, None
            closing = worker.input_closed
            if slot is not None:
                slot.lost = True
            # Episodes it ran but had not flushed: their events may have died with it (settled
            # in completion.py: scored if the end marker came, else run again).
            now = time.monotonic()
            for ran in worker.flushing:
                ran.orphaned = True
                ran.done_at = now
            worker.flushing.clear()
            if not closing or slot is not None:
                episode = None if slot is None else slot.task.context.episode
                self.report.losses.append(WorkerLoss(worker.index, worker.pid, returncode, episode))
            self._version += 1
            self._cond.notify_all()
