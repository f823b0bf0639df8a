"""``collector_paused``: off inside, as it was after, whatever the block did."""

from __future__ import annotations

import gc
import threading
import weakref
from collections.abc import Iterator

import pytest

from goggles_io._util.collector import collector_paused


@pytest.fixture(autouse=True)
def _collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    try:
        yield
    finally:
        (gc.enable if was else gc.disable)()


class _Node:
    def __init__(self) -> None:
        self.other: _Node | None = None


def _cycle() -> weakref.ref[_Node]:
    a, b = _Node(), _Node()
    a.other, b.other = b, a
    return weakref.ref(a)


def test_off_inside_and_on_after() -> None:
    with collector_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_on_again_after_the_block_raises() -> None:
    with pytest.raises(KeyboardInterrupt), collector_paused():
        raise KeyboardInterrupt
    assert gc.isenabled()


def test_a_collector_that_was_off_stays_off() -> None:
    gc.disable()
    with collector_paused():
        assert not gc.isenabled()
    assert not gc.isenabled()


def test_nested_pauses_restore_the_outer_state() -> None:
    with collector_paused():
        with collector_paused():
            pass
        assert not gc.isenabled()  # the inner block found it off and left it off
    assert gc.isenabled()


def test_cycles_made_inside_are_collected_after() -> None:
    """Nothing made meanwhile is lost to the collector: the first collection after takes it
    (and an explicit ``gc.collect`` works even inside)."""
    with collector_paused():
        inside = _cycle()
        assert inside() is not None  # no automatic collection while paused
        explicit = _cycle()
        gc.collect()
        assert explicit() is None
    gc.collect()
    assert inside() is None


def test_another_threads_collection_is_not_blocked() -> None:
    """The pause is process-wide for automatic collections only: another thread's explicit
    ``gc.collect`` runs, and so does this thread after the block."""
    done = threading.Event()
    ref: list[weakref.ref[_Node]] = []

    def other() -> None:
        ref.append(_cycle())
        gc.collect()
        done.set()

    with collector_paused():
        thread = threading.Thread(target=other)
        thread.start()
        assert done.wait(30)
        thread.join(30)
    assert ref[0]() is None
