"""ADR 0084: the pool pauses the cyclic collector from an episode's decode until the caller asks
for the next outcome, and leaves it as it found it whatever happens: the caller stops early,
raises, had it disabled itself, or a worker is SIGKILLed at a seeded moment mid-run."""

from __future__ import annotations

import gc
import os
import random
import signal
import weakref
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from experiment_telemetry.context import EpisodeContext
from experiment_telemetry.workers import EpisodeOutcome, EpisodeTask, RuntimeSpec, WorkerPool
from experiment_telemetry.workers.pause import CollectorPause
from support import wait_until

pytestmark = pytest.mark.usefixtures("socket_bus")

_STEPS = 40


def _tasks(count: int) -> Iterator[EpisodeTask]:
    for episode in range(count):
        context = EpisodeContext(mode="eval", epoch=0, episode=episode, target="toy", seed=episode)
        yield EpisodeTask(context, False, {"seed": episode, "learn": False})


def _pool(workers: int, steps: int = _STEPS) -> WorkerPool:
    spec = RuntimeSpec(factory="toy_runtime:ToyRuntime", kwargs={"steps": steps})
    return WorkerPool(workers, spec, flush_timeout_s=60.0)


def _whole(outcome: EpisodeOutcome, steps: int) -> bool:
    """Every event of the episode, in the order the runtime emitted them (never part of one)."""
    schemas = [event[2] for event in outcome.events]
    wanted = [*(("learning_module_step", s) for s in range(1, steps + 1))]
    wanted.append(("learning_module_timed_out", steps))
    return [(s.kind, s.step) for s in schemas] == wanted


class _Cycle:
    def __init__(self) -> None:
        self.me = self


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    """Each test starts with the collector enabled and leaves it so, whatever it asserted."""
    gc.enable()
    try:
        yield
    finally:
        gc.enable()


class TestCollectorPause:
    def test_hold_and_release_restore_what_they_found(self) -> None:
        pause = CollectorPause()
        pause.hold()
        pause.hold()
        held = (gc.isenabled(), pause.held)
        pause.release()
        pause.release()
        gc.disable()
        pause.hold()  # the caller disabled it: not ours to enable again
        pause.release()

        assert (False, True) == held
        assert (False, False) == (gc.isenabled(), pause.held)

    @given(st.booleans(), st.lists(st.sampled_from(["hold", "release"]), max_size=12))
    def test_any_hold_release_sequence_ends_where_it_started(
        self, enabled: bool, calls: list[str]
    ) -> None:
        """Whatever the order of holds and releases, a final release leaves the collector as
        the caller had it; in between it is off exactly while a hold is outstanding."""
        (gc.enable if enabled else gc.disable)()
        pause = CollectorPause()
        try:
            for call in calls:
                getattr(pause, call)()
                assert gc.isenabled() == (enabled and not pause.held)
            pause.release()
            assert (enabled, False) == (gc.isenabled(), pause.held)
        finally:
            gc.enable()

    def test_paused_while_an_outcome_is_in_hand_and_collecting_after(self) -> None:
        """Each outcome with events is in the caller's hand with the collector paused; cycles
        the caller made meanwhile are collected once the run is over; every episode whole."""
        during: list[bool] = []
        cycles: list[weakref.ref[Any]] = []
        with _pool(2) as pool:
            outcomes = []
            for outcome in pool.run(_tasks(12)):
                during.append(gc.isenabled())
                cycles.append(weakref.ref(_Cycle()))
                outcomes.append(outcome)
            after = gc.isenabled()
        gc.collect()

        assert [False] * 12 == during
        assert after
        assert list(range(12)) == [o.task.context.episode for o in outcomes]
        assert all(_whole(o, _STEPS) for o in outcomes)
        assert [None] * 12 == [ref() for ref in cycles]

    def test_caller_that_stops_early_or_raises_gets_the_collector_back(self) -> None:
        with _pool(1) as pool:
            runs = pool.run(_tasks(6))
            for outcome in runs:
                if outcome.task.context.episode == 2:
                    break
            runs.close()  # what the end of a for statement's frame does for it
            after_break = gc.isenabled()

            class Stop(Exception):
                pass

            with pytest.raises(Stop):
                for outcome in pool.run(_tasks(4)):
                    raise Stop(outcome.task.context.episode)
            after_raise = gc.isenabled()

        assert (True, True) == (after_break, after_raise)

    def test_collector_the_caller_disabled_stays_disabled(self) -> None:
        gc.disable()
        with _pool(1) as pool:
            states = [gc.isenabled() for _ in pool.run(_tasks(3))]
        assert ([False] * 3, False) == (states, gc.isenabled())

    @pytest.mark.parametrize("seed", [3, 11, 29])
    def test_sigkill_at_a_seeded_moment_never_scores_part_of_an_episode(self, seed: int) -> None:
        """A seeded worker SIGKILLed at a seeded moment (after a seeded number of outcomes,
        while the caller holds one and the collector is paused; the workers are two episodes
        ahead, so it dies mid-episode): each outcome is whole or lost (an episode it had run
        but not flushed runs again), in plan order, and the collector is on after."""
        rng = random.Random(seed)
        steps = 400
        at = rng.randrange(1, 9)
        episodes = 24
        outcomes: list[EpisodeOutcome] = []
        with _pool(3, steps) as pool:
            victim = rng.choice([w.pid for w in pool._workers])
            for outcome in pool.run(_tasks(episodes)):
                outcomes.append(outcome)
                if len(outcomes) == at:
                    os.kill(victim, signal.SIGKILL)
            after = gc.isenabled()
            # Dead after its last episode, perhaps: its reader thread reports it by itself.
            wait_until(lambda: pool.report.losses, 60, what="the kill reported")
            losses = list(pool.report.losses)

        lost = [o.task.context.episode for o in outcomes if o.lost]
        assert list(range(episodes)) == [o.task.context.episode for o in outcomes]
        assert all(_whole(o, steps) for o in outcomes if not o.lost)
        assert all(not o.events for o in outcomes if o.lost)
        assert len(lost) <= 1
        assert [victim] == [loss.pid for loss in losses]
        assert after
