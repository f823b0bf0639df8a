"""CsvHandler: a wide metrics.csv, one row per step, growing header, config as key=value."""

from __future__ import annotations

import csv
import math
import os
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import goggles_io as gg
from goggles_io.exceptions import ConfigurationError
from goggles_io.handlers.base import handler_from_dict
from goggles_io.handlers.csv import CONFIG_FILE, METRICS_FILE, TIME_COLUMN
from goggles_io.runs import RunContext, register_run


def _metric(payload: dict[str, Any], step: int | None) -> gg.Event:
    return gg.Event(kind=gg.Kind.METRIC, scope="global", payload=payload, step=step)


def _write(path: Path, *events: gg.Event, **options: Any) -> gg.CsvHandler:
    handler = gg.CsvHandler(path, **options)
    handler.open()
    for event in events:
        handler.handle(event)
    handler.close()
    return handler


def _rows(path: Path) -> list[list[str]]:
    """The table without its ``wall_time`` column (:class:`TestWallTime` checks that one)."""
    with open(path, encoding="utf-8", newline="") as handle:
        rows = list(csv.reader(handle))
    if rows and rows[0][1:2] == [TIME_COLUMN]:
        return [row[:1] + row[2:] for row in rows]
    return rows


class TestCsvRows:
    def test_values_of_one_step_share_a_row(self, tmp_path: Path) -> None:
        """Metrics logged separately for the same step end up in one row, step first."""
        _write(
            tmp_path,
            _metric({"loss": 1.0}, 0),
            _metric({"acc": 0.5}, 0),
            _metric({"loss": 0.5, "acc": 0.75}, 1),
        )

        assert [["step", "loss", "acc"], ["0", "1.0", "0.5"], ["1", "0.5", "0.75"]] == _rows(
            tmp_path / METRICS_FILE
        )

    def test_new_metric_after_written_rows_extends_the_header(self, tmp_path: Path) -> None:
        """A metric first seen after rows were written rewrites the table with one more column."""
        handler = gg.CsvHandler(tmp_path, rows_per_batch=1)
        handler.open()
        handler.handle(_metric({"loss": 1.0}, 0))
        handler.handle(_metric({"loss": 0.9}, 1))
        handler.flush()
        handler.handle(_metric({"loss": 0.8, "eval_return": 3}, 2))
        handler.close()

        assert [
            ["step", "loss", "eval_return"],
            ["0", "1.0", ""],
            ["1", "0.9", ""],
            ["2", "0.8", "3"],
        ] == _rows(tmp_path / METRICS_FILE)

    def test_reopening_continues_the_existing_columns(self, tmp_path: Path) -> None:
        """A second handler on the same directory appends rows under the existing header."""
        _write(tmp_path, _metric({"a": 1}, 0), _metric({"b": 2}, 0))
        _write(tmp_path, _metric({"b": 3}, 1))

        assert [["step", "a", "b"], ["0", "1", "2"], ["1", "", "3"]] == _rows(
            tmp_path / METRICS_FILE
        )

    def test_same_metric_and_step_twice_keeps_both_values(self, tmp_path: Path) -> None:
        """A second value for a metric at the same step starts a new row instead of overwriting."""
        _write(tmp_path, _metric({"loss": 1.0}, 5), _metric({"loss": 2.0}, 5))

        assert [["5", "1.0"], ["5", "2.0"]] == _rows(tmp_path / METRICS_FILE)[1:]

    def test_late_step_after_its_batch_was_written_gets_its_own_row(self, tmp_path: Path) -> None:
        """An eval at step 1 logged after the step-1 row left the buffer is kept in a new row."""
        _write(
            tmp_path,
            _metric({"loss": 1.0}, 1),
            _metric({"loss": 0.5}, 2),
            _metric({"eval": 9.0}, 1),
            rows_per_batch=1,
        )

        assert [["1", "1.0", ""], ["2", "0.5", ""], ["1", "", "9.0"]] == _rows(
            tmp_path / METRICS_FILE
        )[1:]

    def test_rows_of_one_batch_are_sorted_by_step(self, tmp_path: Path) -> None:
        """Within a batch, rows are written in step order; events without a step come last."""
        _write(tmp_path, _metric({"x": 1}, 3), _metric({"x": 2}, None), _metric({"x": 3}, 1))

        assert [["1", "3"], ["3", "1"], ["", "2"]] == _rows(tmp_path / METRICS_FILE)[1:]

    def test_non_finite_values_read_back_with_float(self, tmp_path: Path) -> None:
        """NaN and infinities are written as nan/inf/-inf and float() reads them back."""
        _write(tmp_path, _metric({"a": math.nan, "b": math.inf, "c": -math.inf}, 0))
        row = _rows(tmp_path / METRICS_FILE)[1]

        values = [float(cell) for cell in row[1:]]

        assert math.isnan(values[0])
        assert [math.inf, -math.inf] == values[1:]

    def test_metric_named_step_does_not_shadow_the_step_column(self, tmp_path: Path) -> None:
        """A metric called ``step`` is written under ``step (metric)``."""
        _write(tmp_path, _metric({"step": 7}, 2))

        assert [["step", "step (metric)"], ["2", "7"]] == _rows(tmp_path / METRICS_FILE)

    def test_awkward_metric_names_are_quoted(self, tmp_path: Path) -> None:
        """Names with commas, quotes and slashes survive as header cells."""
        names = ["a,b", 'say "hi"', "train/loss"]
        _write(tmp_path, _metric(dict.fromkeys(names, 1), 0))

        assert ["step", *names] == _rows(tmp_path / METRICS_FILE)[0]

    def test_torn_last_row_is_removed_before_appending(self, tmp_path: Path) -> None:
        """A row a crash cut ("1,2" of "1,2.5") would read as a wrong value: it is removed."""
        _write(tmp_path, _metric({"loss": 1.25}, 0), _metric({"loss": 2.5}, 1))
        table = tmp_path / METRICS_FILE
        os.truncate(table, table.stat().st_size - 3)
        _write(tmp_path, _metric({"loss": 3.0}, 2))

        assert [["0", "1.25"], ["2", "3.0"]] == _rows(table)[1:]

    def test_torn_header_is_removed_and_written_again(self, tmp_path: Path) -> None:
        """A crash that cut the header itself leaves a table that starts over, whole."""
        table = tmp_path / METRICS_FILE
        table.write_bytes(b"step,lo")
        _write(tmp_path, _metric({"loss": 3.0}, 2))

        assert [["step", "loss"], ["2", "3.0"]] == _rows(table)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(
        logged=st.lists(
            st.tuples(
                st.none() | st.integers(0, 5),
                st.sampled_from(["loss", "acc", "step", "a,b"]),
                st.floats(allow_nan=False) | st.integers(-(10**6), 10**6),
            ),
            max_size=30,
        ),
        rows_per_batch=st.integers(1, 4),
    )
    def test_every_logged_value_is_in_the_table(
        self,
        tmp_path_factory: Any,
        logged: list[tuple[int | None, str, float]],
        rows_per_batch: int,
    ) -> None:
        """Whatever the order of steps and metrics, each logged value appears once in its row."""
        root = tmp_path_factory.mktemp("csv")
        _write(root, *(_metric({m: v}, s) for s, m, v in logged), rows_per_batch=rows_per_batch)
        table = _rows(root / METRICS_FILE) if logged else [["step"]]
        header = ["step" if c == "step (metric)" else c for c in table[0]]

        found = sorted(
            ("" if s is None else str(s), m, repr(v) if isinstance(v, float) else str(v))
            for s, m, v in logged
        )
        cells = sorted(
            (row[0], header[i], cell)
            for row in table[1:]
            for i, cell in enumerate(row)
            if i and cell
        )

        assert found == cells


class TestWallTime:
    def test_each_row_carries_the_latest_log_time_of_its_step(self, tmp_path: Path) -> None:
        """``wall_time`` follows ``step``: the timestamp of the row's last event, exactly."""
        events = [
            gg.Event(kind=gg.Kind.METRIC, scope="global", payload=p, step=s, timestamp=t)
            for p, s, t in [({"loss": 1.0}, 0, 1700000000.25), ({"acc": 0.5}, 0, 1700000000.5),
                            ({"loss": 0.5}, 1, 1700000001.125)]
        ]  # fmt: skip
        _write(tmp_path, *events)

        with open(tmp_path / METRICS_FILE, encoding="utf-8", newline="") as handle:
            rows = list(csv.reader(handle))
        assert ["step", "wall_time", "loss", "acc"] == rows[0]
        assert [["0", "1700000000.5", "1.0", "0.5"], ["1", "1700000001.125", "0.5", ""]] == rows[1:]

    def test_the_run_reader_finds_a_wall_time_axis(self, tmp_path: Path) -> None:
        """A CsvHandler run has wall time for the dashboard and open_run (issue 30)."""
        from goggles_io.runs.lines import csv_rows

        times = [1700000000.0 + 0.1 * s for s in range(3)]
        _write(tmp_path, *[
            gg.Event(kind=gg.Kind.METRIC, scope="global", payload={"loss": 1.0}, step=s,
                     timestamp=t) for s, t in enumerate(times)
        ])  # fmt: skip

        parsed, _ = csv_rows((tmp_path / METRICS_FILE).read_text(), None)
        assert ["loss"] == list(parsed.metrics)
        assert times == list(parsed.metrics["loss"].time)

    def test_a_table_written_before_the_column_is_continued_without_it(
        self, tmp_path: Path
    ) -> None:
        """An old ``step,loss`` table gets rows of the same width, no column inserted."""
        (tmp_path / METRICS_FILE).write_text("step,loss\n0,1.0\n")
        _write(tmp_path, gg.Event(kind=gg.Kind.METRIC, scope="global", payload={"loss": 0.5},
                                  step=1, timestamp=1700000000.0))  # fmt: skip

        assert "step,loss\n0,1.0\n1,0.5\n" == (tmp_path / METRICS_FILE).read_text()

    def test_metric_named_wall_time_does_not_shadow_the_column(self, tmp_path: Path) -> None:
        """A metric literally called ``wall_time`` gets its own column."""
        _write(tmp_path, _metric({"wall_time": 3.5}, 0))

        assert ["step", "wall_time (metric)"] == _rows(tmp_path / METRICS_FILE)[0]


class TestCsvConfig:
    def test_record_config_writes_key_value_lines(self, tmp_path: Path) -> None:
        """Recorded settings land in metrics.config.kv as key=value lines."""
        handler = gg.CsvHandler(tmp_path)

        handler.record_config({"algo": "sac", "lr": 0.0003})

        assert "algo=sac\nlr=0.0003\n" == (tmp_path / CONFIG_FILE).read_text()

    def test_record_config_merges_later_keys(self, tmp_path: Path) -> None:
        """A later call adds keys and updates recorded ones, keeping the rest."""
        handler = gg.CsvHandler(tmp_path)
        handler.record_config({"algo": "sac", "env": "cheetah"})

        handler.record_config({"env": "hopper", "seed": 3})

        assert "algo=sac\nenv=hopper\nseed=3\n" == (tmp_path / CONFIG_FILE).read_text()

    @pytest.mark.parametrize("key", ["a=b", "line\nbreak", "", 3])
    def test_bad_config_key_raises_and_writes_nothing(self, tmp_path: Path, key: Any) -> None:
        """A key that would corrupt the kv file raises ConfigurationError; no file appears."""
        handler = gg.CsvHandler(tmp_path)

        with pytest.raises(ConfigurationError, match="config key"):
            handler.record_config({"ok": 1, key: 2})

        assert not (tmp_path / CONFIG_FILE).exists()

    def test_csv_file_path_puts_config_beside_it(self, tmp_path: Path) -> None:
        """Given a *.csv path, the table is that file and the config is <stem>.config.kv."""
        handler = _write(tmp_path / "run_metrics.csv", _metric({"x": 1}, 0))
        handler.record_config({"algo": "dqn"})

        assert (tmp_path / "run_metrics.csv").is_file()
        assert "algo=dqn\n" == (tmp_path / "run_metrics.config.kv").read_text()

    def test_run_context_set_config_reaches_the_kv_file(self, tmp_path: Path) -> None:
        """RunContext forwards config recorded before and after register_run to the kv file."""
        with RunContext(project="p", driver="d.py", slug="s", root=tmp_path) as run:
            handler = gg.CsvHandler(run.dir)
            run.set_config("algo", "sac")
            register_run(run, handler)
            run.set_config({"lr": 0.1})

        assert "algo=sac\nlr=0.1\n" == (run.dir / CONFIG_FILE).read_text()


class TestCsvHandlerOptions:
    def test_foreign_csv_at_the_path_is_refused_on_open(self, tmp_path: Path) -> None:
        """An existing metrics.csv without a leading step column is not appended to."""
        (tmp_path / METRICS_FILE).write_text("name,value\nloss,1\n")
        handler = gg.CsvHandler(tmp_path)

        with pytest.raises(ConfigurationError, match="not a CsvHandler table"):
            handler.open()

        assert "name,value\nloss,1\n" == (tmp_path / METRICS_FILE).read_text()

    @pytest.mark.parametrize(
        ("kwargs", "key"),
        [
            ({"path": ""}, "path"),
            ({"path": "x", "rows_per_batch": 0}, "rows_per_batch"),
            ({"path": "x", "rows_per_batch": True}, "rows_per_batch"),
        ],
    )
    def test_bad_options_raise_configuration_error(self, kwargs: Any, key: str) -> None:
        """An empty path or a rows_per_batch below 1 raises naming the option."""
        with pytest.raises(ConfigurationError, match=key):
            gg.CsvHandler(**kwargs)

    def test_only_metrics_are_routed_here(self) -> None:
        """The handler declares METRIC as its only capability."""
        assert frozenset({gg.Kind.METRIC}) == gg.CsvHandler("x").capabilities

    def test_spec_round_trips(self, tmp_path: Path) -> None:
        """from_dict(to_dict()) rebuilds the same configuration."""
        handler = gg.CsvHandler(tmp_path, rows_per_batch=4)

        assert handler.to_dict() == handler_from_dict(handler.to_dict()).to_dict()


class TestCsvHandlerThroughBus:
    def test_logger_scalars_become_rows_per_step(self, tmp_path: Path) -> None:
        """Through attach/get_logger/finish, scalar and push calls make one row per step."""
        gg.attach(gg.CsvHandler(tmp_path, name="test.csv"), scopes=["global"])
        logger = gg.get_logger("test.csv", with_metrics=True)
        for step in range(3):
            logger.scalar("loss", 1.0 / (step + 1), step=step)
            logger.push({"reward": step}, step=step)
        logger.info("text is not a metric")
        gg.finish()

        assert [
            ["step", "loss", "reward"],
            ["0", "1.0", "0"],
            ["1", "0.5", "1"],
            ["2", repr(1 / 3), "2"],
        ] == _rows(tmp_path / METRICS_FILE)
