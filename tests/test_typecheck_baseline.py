""".ci/typecheck.py: strict modules must be clean, every other module may only lose errors."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[1]


def _typecheck() -> ModuleType:
    spec = importlib.util.spec_from_file_location("ci_typecheck", ROOT / ".ci" / "typecheck.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tc = _typecheck()
PUBLIC = {"goggles_io", "goggles_io._api.functions"}


class TestCompare:
    def test_a_count_that_grew_fails_and_shows_before_and_after(self) -> None:
        """One more error in a baselined module fails, naming both counts."""
        failures, report = tc.compare({"goggles_io._x": 2}, {"goggles_io._x": 3}, PUBLIC)

        assert ["goggles_io._x: 2 -> 3 errors (the baseline may only shrink)"] == failures
        assert ["goggles_io._x", "2", "->", "3"] == report[0].split()

    def test_a_count_that_fell_passes_and_is_reported(self) -> None:
        """Fewer errors pass; the report says which module improved."""
        failures, report = tc.compare({"goggles_io._x": 3}, {"goggles_io._x": 1}, PUBLIC)

        assert [] == failures
        assert ["goggles_io._x", "3", "->", "1"] == report[0].split()

    def test_a_new_module_with_errors_fails(self) -> None:
        """A module absent from the baseline may have no error."""
        failures, _ = tc.compare({}, {"experiment_telemetry._new": 1}, PUBLIC)

        assert [
            "experiment_telemetry._new: 0 -> 1 errors (the baseline may only shrink)"
        ] == failures

    def test_strict_modules_fail_on_any_error_even_if_baselined(self) -> None:
        """runtime_telemetry and public modules must be clean, whatever the baseline says."""
        counts = {"runtime_telemetry._emitter": 1, "goggles_io._api.functions": 1}
        failures, _ = tc.compare(dict(counts), counts, PUBLIC)

        assert 2 == len(failures)
        assert all("strict module" in failure for failure in failures)


class TestParsing:
    def test_errors_are_counted_per_module_and_notes_ignored(self) -> None:
        """Only ``error:`` lines count; a package's ``__init__`` is the package."""
        output = (
            "src/goggles_io/_api/state.py:111: error: Argument 1  [arg-type]\n"
            "src/goggles_io/_api/state.py:111: note: Following member(s)\n"
            "src/goggles_io/_api/state.py:120:5: error: Other  [misc]\n"
            "src/goggles_io/__init__.py:3: error: X  [misc]\n"
            "Found 3 errors in 2 files\n"
        )

        assert {"goggles_io._api.state": 2, "goggles_io": 1} == dict(tc.count_errors(output))

    def test_the_baseline_is_json_and_names_no_strict_module(self) -> None:
        """The recorded baseline is strict JSON and holds only modules outside the strict set."""
        baseline = json.loads((ROOT / ".ci" / "mypy-baseline.json").read_text())
        public = tc.public_modules()

        assert all(isinstance(n, int) and n > 0 for n in baseline.values())
        assert [] == [m for m in baseline if tc.is_strict(m, public)]


def test_public_modules_include_the_code_behind_each_public_name() -> None:
    """``goggles_io.get_logger`` is defined in a private module; that module is strict."""
    public = tc.public_modules()

    assert {"goggles_io", "goggles_io._api.get_logger", "runtime_telemetry._emitter"} <= public
