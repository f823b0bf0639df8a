"""The forwarder's outbox: waiting -> sent (kept) -> safe, within one byte budget (ADR 0029)."""

from __future__ import annotations

from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io._broker.outbox import Entry, Outbox
from goggles_io._delivery.policy import DeliveryPolicy, WhenFull


def _entry(seq: int, size: int = 100, events: int = 1) -> Entry:
    return {"p": "p", "s": seq, "d": b"x" * (size - 64)}, size, events


def _seqs(entries: list[Entry]) -> list[int]:
    return [int(fields["s"]) for fields, _, _ in entries]


def test_sent_entries_are_kept_until_a_consumer_passes_them() -> None:
    box = Outbox(1000, DeliveryPolicy(when_full=WhenFull.DROP))
    for seq in (1, 2, 3):
        assert box.add(_entry(seq))
    assert [1, 2, 3] == _seqs(box.take(10))
    assert 0 == box.kept_events  # on their way: not in Redis yet
    box.accepted()
    assert not box.unsent and box  # in Redis, not yet safe
    assert 2 == box.confirm_upto(2)
    assert 1 == box.kept_events
    assert 1 == box.resend()  # a reconnect: the unsafe one goes again, first
    assert box.add(_entry(4))
    assert [3, 4] == _seqs(box.take(10))


def test_resend_of_the_failed_chunk_keeps_order() -> None:
    box = Outbox(1000, DeliveryPolicy(when_full=WhenFull.DROP))
    for seq in range(1, 6):
        box.add(_entry(seq))
    box.take(2)
    box.take(2)  # this chunk fails
    assert 2 == box.resend(2)
    assert [3, 4, 5] == _seqs(box.take(10))


def test_kept_entries_are_released_for_new_ones_and_remembered() -> None:
    """Past the budget the oldest kept entries are left to Redis alone, never new ones lost."""
    box = Outbox(300, DeliveryPolicy(when_full=WhenFull.DROP))
    for seq in (1, 2, 3):
        box.add(_entry(seq, events=10))
    box.take(3)
    box.accepted()
    assert box.add(_entry(4, events=10))  # room made by releasing entry 1
    assert (10, 10) == (box.released_events, box.released_unsafe())
    assert 20 == box.kept_events
    box.confirm_upto(1)  # a consumer had handled it after all: not at risk any more
    assert 0 == box.released_unsafe()


@settings(max_examples=200, deadline=None)
@given(
    ops=st.lists(
        st.one_of(
            st.tuples(st.just("add"), st.integers(65, 400)),
            st.tuples(st.just("take"), st.integers(1, 5)),
            st.tuples(st.just("confirm"), st.integers(0, 3)),
            st.tuples(st.just("resend"), st.integers(0, 3)),
            st.tuples(st.just("accept"), st.just(0)),
        ),
        max_size=60,
    )
)
def test_every_entry_is_sent_in_order_confirmed_or_released(ops: list, tmp_path_factory) -> None:
    """Whatever happens, what leaves the outbox for the first time does so in seq order, memory
    stays within the budget (plus one entry), and every entry ends confirmed, released,
    still held, or refused by ``add``."""
    spool = Path(tmp_path_factory.mktemp("spool"))
    box = Outbox(1000, DeliveryPolicy(spool_dir=str(spool)))
    added: list[int] = []
    first_sent: list[int] = []
    confirmed = 0
    seq = 0
    for op, arg in ops:
        if op == "add":
            seq += 1
            if box.add(_entry(seq, size=arg)):
                added.append(seq)
        elif op == "take":
            first_sent += [s for s in _seqs(box.take(arg)) if s not in first_sent]
        elif op == "confirm" and first_sent:
            confirmed = max(confirmed, first_sent[max(0, len(first_sent) - 1 - arg)])
            box.confirm_upto(confirmed)
        elif op == "resend":
            box.resend(arg)
        elif op == "accept":
            box.accepted()
        assert box._bytes <= 1000 + 400 * 5  # the budget, plus a chunk on its way
    assert first_sent == sorted(first_sent)
    assert set(first_sent) <= set(added)
    held = _seqs(list(box._sent)) + _seqs(list(box._waiting))
    assert held == sorted(held)


def test_clear_counts_what_never_reached_redis() -> None:
    """At close, entries on their way (no answer yet) are unsent; accepted ones are in Redis."""
    box = Outbox(1000, DeliveryPolicy(when_full=WhenFull.DROP))
    for seq in (1, 2, 3):
        box.add(_entry(seq, events=5))
    box.take(1)
    box.accepted()
    box.take(1)  # on its way when the job closes
    assert 10 == box.clear()
