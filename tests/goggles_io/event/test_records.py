"""Event and Kind: dict round-trip and equality with array payloads."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from goggles_io import Event, Kind

_scalars = st.one_of(st.integers(-(2**53), 2**53), st.floats(allow_nan=True), st.text(max_size=8))
_payloads = st.one_of(
    st.text(max_size=20),
    st.dictionaries(st.text(min_size=1, max_size=8), _scalars, max_size=4),
    arrays(np.float32, st.tuples(st.integers(1, 4), st.integers(1, 4))),
    arrays(np.uint8, st.tuples(st.integers(1, 4), st.integers(1, 4), st.just(3))),
    st.binary(max_size=16),
)
_events = st.builds(
    Event,
    kind=st.sampled_from(Kind),
    scope=st.sampled_from(["global", "global.eval", "episode_1"]),
    payload=_payloads,
    level=st.one_of(st.none(), st.integers(0, 50)),
    step=st.one_of(st.none(), st.integers(0, 10**9)),
    timestamp=st.floats(0, 2e9),
    logger=st.text(max_size=10),
    pid=st.integers(1, 2**22),
    filepath=st.one_of(st.none(), st.text(max_size=20)),
    lineno=st.one_of(st.none(), st.integers(1, 10**5)),
    extra=st.dictionaries(st.text(min_size=1, max_size=6), _scalars, max_size=3),
    time=st.one_of(st.none(), st.floats(-1e9, 1e9)),
)


class TestEvent:
    @given(_events)
    def test_round_trips_through_dict(self, event: Event) -> None:
        """from_dict(to_dict(e)) equals e for every kind and payload."""
        assert event == Event.from_dict(event.to_dict())

    def test_to_dict_holds_kind_as_plain_string(self) -> None:
        """to_dict writes the kind's string value, so msgpack/JSON can encode it."""
        event = Event(kind=Kind.METRIC, scope="global", payload={"a": 1.0})

        assert "metric" == event.to_dict()["kind"]
        assert type(event.to_dict()["kind"]) is str

    def test_from_dict_accepts_robo_goggles_layout(self) -> None:
        """A dict with ``time`` and flat ``extra.<key>`` entries (robo-goggles) is understood."""
        data = {
            "kind": "log",
            "scope": "global",
            "payload": "hi",
            "filepath": "f",
            "lineno": 3,
            "time": 12.5,
            "extra.name": "x",
        }

        event = Event.from_dict(data)

        assert (12.5, {"name": "x"}) == (event.time, dict(event.extra))

    def test_plain_string_kind_is_routed_as_its_kind(self) -> None:
        """Event(kind="image") built as robo-goggles' handlers do reaches an image handler."""
        from goggles_io.testing import MemoryHandler

        bus = __import__("goggles_io").EventBus()
        handler = MemoryHandler(name="m")
        bus.attach(handler, ["global"])
        bus.emit(Event(kind="image", scope="global", payload=np.zeros((2, 2), np.uint8)))  # type: ignore[arg-type]
        bus.finish(5)

        assert [Kind.IMAGE] == [e.kind for e in handler.events]

    def test_array_payloads_compare_by_value(self) -> None:
        """Two events with equal arrays are equal; different arrays are not."""
        a = Event(kind=Kind.IMAGE, scope="g", payload=np.zeros((2, 2), np.uint8))
        b = Event(kind=Kind.IMAGE, scope="g", payload=np.zeros((2, 2), np.uint8))
        c = Event(kind=Kind.IMAGE, scope="g", payload=np.ones((2, 2), np.uint8))

        assert a == b
        assert a != c


class TestKind:
    def test_is_a_string_enum(self) -> None:
        """Kind members compare equal to their string values."""
        assert Kind.METRIC == "metric"
        assert Kind("video") is Kind.VIDEO
