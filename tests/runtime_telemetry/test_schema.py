"""Schema base classes: kinds, versions, timestamps, immutability, the registry."""

from __future__ import annotations

import time

import attrs
import numpy as np
import pytest

from runtime_telemetry import (
    TelemetryEvent,
    TelemetrySchema,
    TelemetrySnapshot,
    array_eq_key,
    from_dict,
    to_dict,
)
from runtime_telemetry.exceptions import (
    DuplicateKindError,
    SchemaDefinitionError,
    TelemetryError,
    UnknownKindError,
)


@attrs.frozen(kw_only=True)
class SchemaTestArmMoved(TelemetryEvent):
    joint: str
    angle: float


@attrs.frozen(kw_only=True)
class SchemaTestRenamed(TelemetryEvent):
    kind = "schema_test.custom_kind"
    version = 3
    value: int


@attrs.frozen(kw_only=True)
class SchemaTestHTTPStatus(TelemetryEvent):
    code: int


@attrs.frozen(kw_only=True)
class SchemaTestBase(TelemetryEvent, abstract=True):
    source: str


@attrs.frozen(kw_only=True)
class SchemaTestChild(SchemaTestBase):
    count: int


@attrs.frozen(kw_only=True)
class SchemaTestImage(TelemetrySnapshot):
    pixels: np.ndarray = attrs.field(eq=array_eq_key)


class TestKind:
    def test_default_kind_is_snake_case_of_class_name(self) -> None:
        """A class without an explicit kind gets its name in snake_case."""

        assert "schema_test_arm_moved" == SchemaTestArmMoved.kind

    def test_acronyms_stay_one_word(self) -> None:
        """Runs of capitals are one word: HTTPStatus -> http_status."""

        assert "schema_test_http_status" == SchemaTestHTTPStatus.kind

    def test_kind_can_be_overridden(self) -> None:
        """A class body's ``kind = ...`` replaces the default."""

        assert "schema_test.custom_kind" == SchemaTestRenamed.kind

    def test_str_of_an_event_is_its_kind(self) -> None:
        """``str(event)`` is the kind, so log lines read well."""
        event = SchemaTestArmMoved(joint="elbow", angle=0.5)

        assert "schema_test_arm_moved" == str(event)

    def test_second_class_with_the_same_kind_raises(self) -> None:
        """Defining another class that claims an existing kind raises DuplicateKindError."""
        with pytest.raises(DuplicateKindError, match="schema_test_arm_moved") as info:

            class SchemaTestClash(TelemetryEvent):
                kind = "schema_test_arm_moved"

        assert (SchemaTestArmMoved, "schema_test_arm_moved") == (
            info.value.existing,
            info.value.kind,
        )

    def test_duplicate_kind_error_is_a_value_error(self) -> None:
        """DuplicateKindError refines both TelemetryError and ValueError."""

        assert issubclass(DuplicateKindError, TelemetryError)
        assert issubclass(DuplicateKindError, ValueError)

    def test_redefining_the_same_class_replaces_it(self) -> None:
        """The same class defined again at the same place (a reload) replaces the old one."""

        def define() -> type[TelemetryEvent]:
            @attrs.frozen(kw_only=True)
            class SchemaTestReloaded(TelemetryEvent):
                value: int

            return SchemaTestReloaded

        define()
        second = define()

        assert second is type(from_dict(to_dict(second(value=1))))

    def test_annotated_kind_raises(self) -> None:
        """Annotating ``kind`` would make it a field, so the class is refused."""
        with pytest.raises(SchemaDefinitionError, match="'kind'"):

            class SchemaTestAnnotated(TelemetryEvent):
                kind: str = "schema_test_annotated"

    def test_abstract_base_has_no_kind_and_does_not_decode(self) -> None:
        """An ``abstract=True`` base has an empty kind and is never registered."""
        with pytest.raises(UnknownKindError):
            from_dict({"kind": "schema_test_base", "version": 1, "source": "x"})

        assert "" == SchemaTestBase.kind

    def test_subclass_of_abstract_base_inherits_its_fields(self) -> None:
        """A concrete subclass of an abstract base has the base's fields and its own kind."""
        child = SchemaTestChild(source="lm", count=2)

        assert ("schema_test_child", "lm") == (child.kind, child.source)


class TestVersionAndTimestamp:
    def test_version_defaults_to_one(self) -> None:
        """Schemas start at version 1."""

        assert 1 == SchemaTestArmMoved.version

    def test_version_can_be_set(self) -> None:
        """A class body's ``version = N`` sets the schema version."""

        assert 3 == SchemaTestRenamed.version

    def test_bad_version_raises(self) -> None:
        """A version that is not an int >= 1 is refused at class definition."""
        with pytest.raises(SchemaDefinitionError, match="version"):

            class SchemaTestBadVersion(TelemetryEvent):
                version = 0

    def test_timestamp_defaults_to_wall_clock(self) -> None:
        """``timestamp`` is time.time() at construction."""
        before = time.time()
        event = SchemaTestArmMoved(joint="elbow", angle=0.5)
        after = time.time()

        assert before <= event.timestamp <= after

    def test_timestamp_can_be_given(self) -> None:
        """An explicit timestamp is kept as given."""
        event = SchemaTestArmMoved(joint="elbow", angle=0.5, timestamp=12.5)

        assert 12.5 == event.timestamp


class TestImmutability:
    def test_events_are_frozen(self) -> None:
        """Assigning to a field raises attrs' FrozenInstanceError."""
        event = SchemaTestArmMoved(joint="elbow", angle=0.5)

        with pytest.raises(attrs.exceptions.FrozenInstanceError):
            event.angle = 1.0  # type: ignore[misc]

    def test_fields_are_keyword_only(self) -> None:
        """Positional arguments are refused, so field order never matters."""
        with pytest.raises(TypeError):
            SchemaTestArmMoved("elbow", 0.5)  # type: ignore[misc]

    def test_equal_events_hash_equal(self) -> None:
        """Frozen events are hashable and equal by value."""
        a = SchemaTestArmMoved(joint="elbow", angle=0.5, timestamp=1.0)
        b = SchemaTestArmMoved(joint="elbow", angle=0.5, timestamp=1.0)

        assert (a, hash(a)) == (b, hash(b))


class TestArrayEqKey:
    def test_arrays_with_same_dtype_shape_and_bytes_are_equal(self) -> None:
        """Snapshots holding equal arrays compare equal and hash equal."""
        a = SchemaTestImage(pixels=np.array([1.0, np.nan]), timestamp=1.0)
        b = SchemaTestImage(pixels=np.array([1.0, np.nan]), timestamp=1.0)

        assert (a, hash(a)) == (b, hash(b))

    def test_arrays_with_different_dtype_are_not_equal(self) -> None:
        """Equal values in different dtypes are different snapshots."""
        a = SchemaTestImage(pixels=np.arange(3, dtype=np.int32), timestamp=1.0)
        b = SchemaTestImage(pixels=np.arange(3, dtype=np.int64), timestamp=1.0)

        assert a != b

    def test_snapshots_and_events_share_the_schema_base(self) -> None:
        """Both kinds of schema are TelemetrySchema subclasses."""

        assert issubclass(SchemaTestImage, TelemetrySchema)
        assert issubclass(SchemaTestArmMoved, TelemetrySchema)
