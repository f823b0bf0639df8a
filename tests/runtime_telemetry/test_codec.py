"""The codec: tagged dicts and JSON lines round-trip every schema; bad input fails clearly."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import attrs
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime_telemetry import (
    TelemetryEvent,
    TelemetrySchema,
    TelemetrySnapshot,
    array_eq_key,
    from_dict,
    from_json,
    read_jsonl,
    to_dict,
    to_json,
    write_jsonl,
)
from runtime_telemetry.events import LearningModuleStep, SensorPatchSnapshot
from runtime_telemetry.exceptions import (
    SchemaDecodeError,
    SchemaEncodeError,
    SchemaTypeError,
    UnknownKindError,
)
from strategies import SHIPPED_SCHEMAS, arrays, json_values, schema_instances

_settings = settings(deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow])


@attrs.frozen(kw_only=True)
class CodecTestBlob(TelemetrySnapshot):
    blob: np.ndarray = attrs.field(eq=array_eq_key)


def _version(kind: str) -> int:
    return next(cls.version for cls in SHIPPED_SCHEMAS if cls.kind == kind)


def _step(**overrides: Any) -> dict[str, Any]:
    data = to_dict(LearningModuleStep(lm_id="lm_0", step=3, possible_matches=("mug",)))
    data.update(overrides)
    return data


class TestRoundTrip:
    @pytest.mark.parametrize("cls", SHIPPED_SCHEMAS, ids=lambda c: c.__name__)
    @_settings
    @given(data=st.data())
    def test_dict_round_trip(self, cls: type[TelemetrySchema], data: st.DataObject) -> None:
        """from_dict(to_dict(x)) == x for every shipped schema."""
        schema = data.draw(schema_instances(cls))

        assert schema == from_dict(to_dict(schema))

    @pytest.mark.parametrize("cls", SHIPPED_SCHEMAS, ids=lambda c: c.__name__)
    @_settings
    @given(data=st.data())
    def test_json_round_trip(self, cls: type[TelemetrySchema], data: st.DataObject) -> None:
        """from_json(to_json(x)) == x for every shipped schema."""
        schema = data.draw(schema_instances(cls))

        assert schema == from_json(to_json(schema))

    @_settings
    @given(array=arrays())
    def test_arrays_keep_dtype_shape_and_bytes(self, array: np.ndarray) -> None:
        """An array inside a snapshot comes back with its dtype, shape and exact bytes."""
        back = from_json(to_json(CodecTestBlob(blob=array))).blob  # type: ignore[attr-defined]

        assert (array.dtype, array.shape, array.tobytes()) == (
            back.dtype,
            back.shape,
            back.tobytes(),
        )

    def test_dict_is_tagged_with_kind_and_version_first(self) -> None:
        """The first two keys are kind and version."""

        assert ["kind", "version"] == list(_step())[:2]

    def test_dict_holds_only_json_types(self) -> None:
        """to_dict output survives json.dumps/loads unchanged (tuples become lists)."""
        data = _step()

        assert data == json.loads(json.dumps(data))

    def test_decoding_imports_the_shipped_vocabulary(self) -> None:
        """A shipped kind decodes even if runtime_telemetry.events was never imported by name."""
        schema = from_dict(_step())

        assert isinstance(schema, LearningModuleStep)


class TestDecodeErrors:
    def test_unknown_kind_raises_unknown_kind_error(self) -> None:
        """A kind no class registers raises UnknownKindError naming the kind."""
        with pytest.raises(UnknownKindError, match="no_such_kind") as info:
            from_dict(_step(kind="no_such_kind"))

        assert "no_such_kind" == info.value.kind

    def test_unknown_kind_error_is_a_key_error(self) -> None:
        """UnknownKindError refines KeyError, yet prints its message unquoted."""
        with pytest.raises(KeyError) as info:
            from_dict(_step(kind="no_such_kind"))

        assert str(info.value).startswith("unknown kind 'no_such_kind'")

    def test_missing_field_names_kind_and_field(self) -> None:
        """A missing field raises SchemaDecodeError naming the kind and the field."""
        data = _step()
        del data["step"]

        with pytest.raises(SchemaDecodeError, match=r"learning_module_step.*step") as info:
            from_dict(data)

        assert ("learning_module_step", "step") == (info.value.kind, info.value.field)

    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("step", "3"),
            ("step", 2.5),
            ("step", True),
            ("lm_id", 7),
            ("on_object", 1),
            ("possible_matches", "mug"),
            ("timestamp", "now"),
        ],
    )
    def test_ill_typed_field_names_it(self, field: str, value: object) -> None:
        """A value of the wrong type is refused, never coerced, and the field is named."""
        with pytest.raises(SchemaDecodeError, match=field) as info:
            from_dict(_step(**{field: value}))

        assert field == info.value.field

    def test_ill_typed_list_item_is_refused(self) -> None:
        """A non-string graph id inside possible_matches is refused."""
        with pytest.raises(SchemaDecodeError, match=r"possible_matches.*item \[1\]") as info:
            from_dict(_step(possible_matches=["mug", 3]))

        assert "possible_matches" == info.value.field

    def test_unexpected_field_is_refused(self) -> None:
        """A field the schema does not define raises, so nothing is silently dropped."""
        with pytest.raises(SchemaDecodeError, match="episode") as info:
            from_dict(_step(episode=4))

        assert "episode" == info.value.field

    def test_version_mismatch_is_refused(self) -> None:
        """Data written by another schema version (a version-1 step) raises, naming both."""
        with pytest.raises(SchemaDecodeError, match=r"version 1 in the data.*version 2") as info:
            from_dict(_step(version=1))

        assert "version" == info.value.field

    @pytest.mark.parametrize("tag", ["kind", "version"])
    def test_missing_tag_is_refused(self, tag: str) -> None:
        """Data without a kind or version tag raises SchemaDecodeError naming the tag."""
        data = _step()
        del data[tag]

        with pytest.raises(SchemaDecodeError, match=tag):
            from_dict(data)

    def test_non_mapping_is_a_type_error(self) -> None:
        """from_dict of something that is not a mapping raises a TypeError."""
        with pytest.raises(TypeError, match="mapping"):
            from_dict(["learning_module_step"])  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        "encoded",
        [
            [1, 2],
            {"dtype": "<f8", "shape": [2]},
            {"dtype": "nonsense", "shape": [1], "data": ""},
            {"dtype": "<f8", "shape": [3], "data": "AAAAAAAAAAA="},
            {"dtype": "<f8", "shape": [-1], "data": ""},
            {"dtype": "|O", "shape": [0], "data": ""},
            {"dtype": "<f8", "shape": [1], "data": "not base64!"},
        ],
    )
    def test_bad_array_encoding_names_the_field(self, encoded: object) -> None:
        """A malformed encoded array raises SchemaDecodeError naming the array field."""
        data = to_dict(
            SensorPatchSnapshot(
                sensor_id="s", step=0, rgba=np.zeros((1, 1, 4), np.uint8), depth=np.zeros((1, 1))
            )
        )
        data["depth"] = encoded

        with pytest.raises(SchemaDecodeError, match="depth") as info:
            from_dict(data)

        assert "depth" == info.value.field

    @settings(deadline=None, max_examples=200)
    @given(
        kind=st.sampled_from([cls.kind for cls in SHIPPED_SCHEMAS]),
        fields=st.dictionaries(st.text(max_size=12), json_values, max_size=6),
        mutate=st.sampled_from(["replace", "merge"]),
    )
    def test_any_json_object_decodes_or_raises_decode_error(
        self, kind: str, fields: dict[str, Any], mutate: str
    ) -> None:
        """For arbitrary JSON fields, from_dict returns a schema of the kind the data names, or
        raises SchemaDecodeError; UnknownKindError only where the merged fields replaced the kind
        with one no class registers (``{"kind": None}`` did, found by Hypothesis in CI)."""
        base = {"kind": kind, "version": _version(kind)}
        if mutate == "merge":
            base.update(fields)
        else:
            base = {**fields, **base}
        shipped = {cls.kind for cls in SHIPPED_SCHEMAS}
        try:
            result = from_dict(base)
        except SchemaDecodeError:
            return
        except UnknownKindError:
            assert base["kind"] not in shipped
            return

        assert base["kind"] == result.kind


class TestEncodeErrors:
    def test_non_schema_is_a_type_error(self) -> None:
        """to_dict of a plain object raises SchemaTypeError (a TypeError)."""
        with pytest.raises(SchemaTypeError):
            to_dict({"kind": "x"})  # type: ignore[arg-type]

    def test_object_array_names_kind_and_field(self) -> None:
        """An object-dtype array cannot be encoded losslessly and is refused by name."""
        snapshot = CodecTestBlob(blob=np.array([object()], dtype=object))

        with pytest.raises(SchemaEncodeError, match="blob") as info:
            to_dict(snapshot)

        assert ("codec_test_blob", "blob") == (info.value.kind, info.value.field)

    def test_abstract_instance_is_refused(self) -> None:
        """An instance of an abstract base has no kind, so it cannot be encoded."""
        with pytest.raises(SchemaTypeError):
            to_dict(TelemetryEvent())


class TestJsonLines:
    def test_write_then_read_a_path(self, tmp_path: Path) -> None:
        """Schemas written to a path read back equal and in order."""
        events = [LearningModuleStep(lm_id="lm_0", step=i, possible_matches=()) for i in range(3)]
        path = tmp_path / "events.jsonl"

        count = write_jsonl(events, path)

        assert (3, events) == (count, list(read_jsonl(path)))

    def test_write_appends(self, tmp_path: Path) -> None:
        """A second write to the same path appends instead of overwriting."""
        path = tmp_path / "events.jsonl"
        event = LearningModuleStep(lm_id="lm_0", step=0, possible_matches=())

        write_jsonl([event], path)
        write_jsonl([event], path)

        assert 2 == len(list(read_jsonl(path)))

    def test_read_a_file_object_skipping_blank_lines(self) -> None:
        """read_jsonl takes a text file and ignores blank lines."""
        event = LearningModuleStep(lm_id="lm_0", step=0, possible_matches=())
        text = io.StringIO("\n" + to_json(event) + "\n\n")

        assert [event] == list(read_jsonl(text))

    def test_bad_line_reports_its_number(self) -> None:
        """A line that does not decode raises SchemaDecodeError with its 1-based number."""
        good = to_json(LearningModuleStep(lm_id="lm_0", step=0, possible_matches=()))
        text = io.StringIO(good + "\n" + good.replace('"step":0', '"step":"x"') + "\n")

        with pytest.raises(SchemaDecodeError, match="line 2"):
            list(read_jsonl(text))

    def test_unknown_kind_line_reports_its_number(self) -> None:
        """An unknown kind in a file raises UnknownKindError with the line number."""
        text = io.StringIO('{"kind":"nope","version":1}\n')

        with pytest.raises(UnknownKindError, match="line 1"):
            list(read_jsonl(text))

    @pytest.mark.parametrize("line", ["{not json", "[1, 2]", '"text"'])
    def test_non_object_line_is_a_decode_error(self, line: str) -> None:
        """A line that is not a JSON object raises SchemaDecodeError."""
        with pytest.raises(SchemaDecodeError):
            from_json(line)


class TestExactTypesFastPath:
    """Issue 35: values that already have their exact type skip the per-item hooks; the rest
    still go through them, so the result and the refusals are the same either way."""

    def _mlh(self, **overrides: Any) -> dict[str, Any]:
        from runtime_telemetry.events import MostLikelyHypothesis

        data = to_dict(
            MostLikelyHypothesis(
                lm_id="lm_0", step=1, graph_id="g0", location=(0.5, 0.0, 1.0),
                rotation=(1.0, 0.0, 0.0, 0.0), evidence=2.0,
            )
        )  # fmt: skip
        data.update(overrides)
        return data

    def test_lists_of_exact_floats_come_back_as_tuples_of_the_same_values(self) -> None:
        got = from_dict(self._mlh(location=[0.25, 1.5, -2.0]))
        assert ((0.25, 1.5, -2.0), tuple) == (got.location, type(got.location))  # type: ignore[attr-defined]

    def test_ints_among_floats_are_still_made_floats(self) -> None:
        got = from_dict(self._mlh(location=[0, 1.5, 2], rotation=[1, 0, 0, 0]))
        assert [float] * 7 == [type(v) for v in (*got.location, *got.rotation)]  # type: ignore[attr-defined]

    @pytest.mark.parametrize("bad", [[True, 0.0, 0.0], [0.0, "1", 0.0], [0.0, 1.0]])
    def test_bools_strings_and_wrong_lengths_are_still_refused(self, bad: list[Any]) -> None:
        with pytest.raises(SchemaDecodeError, match="location"):
            from_dict(self._mlh(location=bad))
