"""configure(): per-module levels from a mapping or a YAML file, validated before applied."""

from __future__ import annotations

import logging
import logging.config
from pathlib import Path

import pytest

from runtime_telemetry import OFF, TRACE, Subscriber, configure, get_telemetry
from runtime_telemetry.exceptions import ConfigurationError, TelemetryTypeError


def level_of(name: str) -> int:
    return logging.getLogger(name).level


class TestConfigureMapping:
    def test_sets_levels_by_logger_name(self) -> None:
        """Each key's logger gets its level."""
        configure({"telemetry": "INFO", "telemetry.robot.arm": "DEBUG", "snapshots": "OFF"})

        assert (logging.INFO, logging.DEBUG, OFF) == (
            level_of("telemetry"),
            level_of("telemetry.robot.arm"),
            level_of("snapshots"),
        )

    def test_package_level_applies_to_its_subtree(self) -> None:
        """A level on ``telemetry.robot`` governs ``telemetry.robot.arm``."""
        configure({"telemetry.robot": "INFO"})

        assert get_telemetry("robot.arm").enabled()

    def test_off_disables_every_level(self) -> None:
        """OFF lets nothing through, not even CRITICAL."""
        configure({"telemetry.robot": "OFF"})

        assert not get_telemetry("robot.arm").enabled(logging.CRITICAL)

    def test_level_names_are_case_insensitive(self) -> None:
        """'trace', 'Info' and ' OFF ' are accepted."""
        configure({"snapshots": "trace", "telemetry": "Info", "telemetry.x": " OFF "})

        assert (TRACE, logging.INFO, OFF) == (
            level_of("snapshots"),
            level_of("telemetry"),
            level_of("telemetry.x"),
        )

    def test_int_levels_are_accepted(self) -> None:
        """A numeric level is used as is."""
        configure({"telemetry": 15})

        assert 15 == level_of("telemetry")

    def test_returns_the_applied_levels(self) -> None:
        """configure() returns the numeric levels it set."""

        assert {"telemetry": logging.INFO} == configure({"telemetry": "info"})

    def test_handlers_are_left_attached(self) -> None:
        """Configuring levels does not close or detach subscribers."""
        subscriber = Subscriber().subscribe()

        configure({"telemetry": "INFO"})

        assert subscriber in logging.getLogger("telemetry").handlers

    def test_plain_dict_config_also_works(self) -> None:
        """Stdlib logging.config.dictConfig controls a module's telemetry just as well."""
        logging.config.dictConfig(
            {
                "version": 1,
                "incremental": True,
                "loggers": {"telemetry.robot.arm": {"level": "DEBUG"}},
            }
        )

        assert get_telemetry("robot.arm").enabled(logging.DEBUG)


class TestConfigureErrors:
    def test_unknown_level_name_raises_and_changes_nothing(self) -> None:
        """An unknown level name raises ConfigurationError naming it; earlier keys are not applied."""
        before = level_of("telemetry")

        with pytest.raises(ConfigurationError, match="'LOUD'") as info:
            configure({"telemetry": "INFO", "telemetry.arm": "LOUD"})

        assert (before, "telemetry.arm", "LOUD") == (
            level_of("telemetry"),
            info.value.name,
            info.value.value,
        )

    def test_configuration_error_is_a_value_error(self) -> None:
        """ConfigurationError refines ValueError."""
        with pytest.raises(ValueError):
            configure({"telemetry": "LOUD"})

    @pytest.mark.parametrize("level", [True, -1, 1.5, None])
    def test_non_level_values_raise(self, level: object) -> None:
        """Booleans, negative ints, floats and None are not levels."""
        with pytest.raises(ConfigurationError):
            configure({"telemetry": level})  # type: ignore[dict-item]

    @pytest.mark.parametrize("name", ["robot.arm", "telemetryx", "", "root"])
    def test_logger_outside_the_roots_raises(self, name: str) -> None:
        """Only telemetry.* and snapshots.* loggers can be configured here."""
        with pytest.raises(ConfigurationError, match="logger name"):
            configure({name: "INFO"})

    def test_non_mapping_raises_type_error(self) -> None:
        """A list is neither a mapping nor a path."""
        with pytest.raises(TelemetryTypeError):
            configure([("telemetry", "INFO")])  # type: ignore[arg-type]


class TestConfigureYaml:
    def test_reads_levels_from_a_yaml_file(self, tmp_path: Path) -> None:
        """A YAML mapping file configures the same way as a dict."""
        path = tmp_path / "telemetry.yaml"
        path.write_text("telemetry: INFO\ntelemetry.robot.arm: DEBUG\nsnapshots: 'OFF'\n")

        configure(path)

        assert (logging.INFO, logging.DEBUG, OFF) == (
            level_of("telemetry"),
            level_of("telemetry.robot.arm"),
            level_of("snapshots"),
        )

    def test_unquoted_off_means_off(self, tmp_path: Path) -> None:
        """YAML reads a bare OFF as false; configure() takes it as the OFF level."""
        path = tmp_path / "telemetry.yaml"
        path.write_text("snapshots: OFF\n")

        configure(path)

        assert OFF == level_of("snapshots")

    def test_path_as_string_is_accepted(self, tmp_path: Path) -> None:
        """A str path works like a Path."""
        path = tmp_path / "telemetry.yaml"
        path.write_text("telemetry: DEBUG\n")

        configure(str(path))

        assert logging.DEBUG == level_of("telemetry")

    def test_missing_file_raises(self, tmp_path: Path) -> None:
        """A path that cannot be read raises ConfigurationError naming it."""
        with pytest.raises(ConfigurationError, match=r"missing\.yaml"):
            configure(tmp_path / "missing.yaml")

    @pytest.mark.parametrize("text", ["", "- telemetry\n", "telemetry: [\n"])
    def test_yaml_that_is_not_a_mapping_raises(self, tmp_path: Path, text: str) -> None:
        """An empty file, a list or broken YAML raises ConfigurationError."""
        path = tmp_path / "telemetry.yaml"
        path.write_text(text)

        with pytest.raises(ConfigurationError, match=r"telemetry\.yaml"):
            configure(path)
