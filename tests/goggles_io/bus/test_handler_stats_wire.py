"""A handler's tally crosses from the host to the client whole: every field, by position."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from goggles_io._bus.transport import HandlerStats

_counts = st.integers(min_value=0, max_value=10**12)


@given(
    delivered=_counts,
    dropped=_counts,
    errors=_counts,
    losses=st.dictionaries(st.text(max_size=20), _counts, max_size=4),
    failed=_counts,
    logged=st.none() | _counts,
    not_in_time=_counts,
)
def test_the_wire_form_reads_back_equal(**fields: object) -> None:
    stats = HandlerStats(**fields)  # type: ignore[arg-type]

    assert stats == HandlerStats.from_wire(stats.to_wire())


def test_an_older_hosts_four_fields_read_back_with_the_rest_unknown() -> None:
    got = HandlerStats.from_wire([3, 1, 0, {"disk full": 1}])

    assert HandlerStats(3, 1, 0, {"disk full": 1}) == got
    assert got.logged is None
