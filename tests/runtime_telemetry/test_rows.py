"""``runtime_telemetry.rows``: a schema's field values, packed with msgpack and set back on a
new instance, give an object equal to the sender's, field types included; classes that cannot
come back exactly have no row form, and layouts this code does not define get no decoder."""

from __future__ import annotations

from typing import Any

import attrs
import msgpack
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from runtime_telemetry import TelemetrySchema, from_dict, to_dict
from runtime_telemetry.events import LearningModuleStep, MostLikelyHypothesis
from runtime_telemetry.events.learning_module import LearningModuleEvidenceSnapshot
from runtime_telemetry.rows import row_fields, row_maker, row_values
from strategies import SHIPPED_SCHEMAS, schema_instances

_WITH_ROWS = [cls for cls in SHIPPED_SCHEMAS if row_fields(cls) is not None]


def _shape(value: Any) -> Any:
    """The value's types, all the way down (tuples and lists told apart)."""
    if isinstance(value, (tuple, list)):
        return (type(value), tuple(_shape(v) for v in value))
    if isinstance(value, dict):
        return (dict, tuple((type(k), _shape(v)) for k, v in value.items()))
    return type(value)


def test_most_shipped_events_have_rows() -> None:
    """Every shipped event has a row form; snapshots with arrays keep to_dict."""
    without = {cls.__name__ for cls in SHIPPED_SCHEMAS if row_fields(cls) is None}
    assert "LearningModuleEvidenceSnapshot" in without
    assert all("Snapshot" in name for name in without)


@pytest.mark.parametrize("cls", _WITH_ROWS, ids=lambda c: c.__name__)
@settings(max_examples=40, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_row_round_trip_is_the_senders_object(
    cls: type[TelemetrySchema], data: st.DataObject
) -> None:
    """Packed, unpacked and rebuilt: equal to the original and to from_dict(to_dict(...)),
    with the same types in every field."""
    schema = data.draw(schema_instances(cls))
    try:
        packed = msgpack.packb((7, *row_values(schema)))
    except (OverflowError, ValueError):
        assume(False)  # an int beyond 64 bits: the forwarder counts such an event as an error
    fields = row_fields(cls)
    assert fields is not None
    maker = row_maker(cls.kind, cls.version, fields, offset=1)
    assert maker is not None
    rebuilt = maker(msgpack.unpackb(packed))

    assert schema == rebuilt == from_dict(to_dict(schema))
    for field in attrs.fields(cls):
        assert _shape(getattr(schema, field.name)) == _shape(getattr(rebuilt, field.name))


def test_a_class_with_arrays_has_no_row_form() -> None:
    assert row_fields(LearningModuleEvidenceSnapshot) is None
    with pytest.raises(TypeError, match="no row form"):
        row_values(object.__new__(LearningModuleEvidenceSnapshot))


def test_layouts_this_code_does_not_define_get_no_decoder() -> None:
    """Another version, other fields, an unknown kind: None (from_dict says why)."""
    fields = row_fields(LearningModuleStep)
    assert fields is not None
    kind, version = LearningModuleStep.kind, LearningModuleStep.version
    assert row_maker(kind, version + 1, fields) is None
    assert row_maker(kind, version, fields[:-1]) is None
    assert row_maker(kind, version, (*fields[1:], fields[0])) is None
    assert row_maker("no_such_kind", 1, fields) is None
    assert row_maker(kind, version, [1, 2]) is None  # type: ignore[list-item]


def test_a_row_of_another_length_raises() -> None:
    fields = row_fields(MostLikelyHypothesis)
    assert fields is not None
    maker = row_maker(MostLikelyHypothesis.kind, MostLikelyHypothesis.version, fields)
    assert maker is not None
    with pytest.raises(ValueError):
        maker([1.0, "lm_0"])
