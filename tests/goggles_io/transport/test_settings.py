"""Transport knobs and the socket path checks: bad values are named, shared directories never touched."""

from __future__ import annotations

import os
import shutil
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from goggles_io._transport import settings as ts
from goggles_io.exceptions import ConfigurationError, SocketOwnershipError


class TestReadTransportSettings:
    def test_defaults_match_the_documented_table(self) -> None:
        """With no variable set, the defaults are those docs/transport.md lists."""
        got = ts.read_transport_settings({})

        assert ("socket", None, 65536, 96 * 2**20, True, (), 1.0, None) == (
            got.transport,
            got.socket_path,
            got.shm_threshold,
            got.shm_bytes,
            got.dedicated_host,
            got.host_imports,
            got.host_idle_timeout_s,
            got.host_log,
        )

    @pytest.mark.parametrize(
        ("key", "value"),
        [
            ("GOGGLES_TRANSPORT", "carrier-pigeon"),
            ("GOGGLES_DEDICATED_HOST", "maybe"),
            ("GOGGLES_SHM_THRESHOLD", "-1"),
            ("GOGGLES_SHM_THRESHOLD", "big"),
            ("GOGGLES_SHM_BYTES", "1000"),
            ("GOGGLES_HOST_IDLE_TIMEOUT", "-0.5"),
        ],
    )
    def test_malformed_value_names_the_variable(self, key: str, value: str) -> None:
        """A malformed knob raises ConfigurationError naming the variable and the value."""
        with pytest.raises(ConfigurationError, match=key) as info:
            ts.read_transport_settings({key: value})

        assert value == info.value.value
        assert repr(value) in str(info.value)

    def test_host_imports_are_split_on_commas(self) -> None:
        """GOGGLES_HOST_IMPORTS is a comma-separated module list; blanks are ignored."""
        got = ts.read_transport_settings({"GOGGLES_HOST_IMPORTS": " a.b, ,c "})

        assert ("a.b", "c") == got.host_imports


@pytest.fixture
def tmp_root(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp dir standing in for /tmp, with no XDG_RUNTIME_DIR to prefer."""
    root = Path(tempfile.mkdtemp(prefix="ggs-"))
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)


class TestDefaultSocketPath:
    def test_private_directory_is_created_owner_only(self, tmp_root: Path) -> None:
        """Without XDG_RUNTIME_DIR the socket goes in a new 0700 per-user directory under the temp dir."""
        path = ts.default_socket_path()
        parent = Path(path).parent

        assert tmp_root / f"goggles_io-{os.getuid()}" == parent
        assert 0o700 == stat.S_IMODE(parent.stat().st_mode)

    def test_existing_directory_open_to_others_is_refused_not_chmodded(
        self, tmp_root: Path
    ) -> None:
        """A per-user directory others can enter raises SocketOwnershipError and keeps its mode."""
        shared = tmp_root / f"goggles_io-{os.getuid()}"
        shared.mkdir()
        shared.chmod(0o777)

        with pytest.raises(SocketOwnershipError, match=str(shared)):
            ts.default_socket_path()
        assert 0o777 == stat.S_IMODE(shared.stat().st_mode)

    def test_shared_parent_keeps_its_mode(self, tmp_root: Path) -> None:
        """The temp dir itself (think /tmp, 1777) is never chmod-ed."""
        tmp_root.chmod(0o1777)
        ts.default_socket_path()

        assert 0o1777 == stat.S_IMODE(tmp_root.stat().st_mode)


class TestPrepareSocketDir:
    def test_missing_directory_is_a_configuration_error(self, tmp_path: Path) -> None:
        """A GOGGLES_SOCKET in a directory that does not exist is refused, naming the directory."""
        path = tmp_path / "nope" / "bus.sock"

        with pytest.raises(ConfigurationError, match="GOGGLES_SOCKET directory"):
            ts.prepare_socket_dir(str(path))

    def test_existing_non_socket_is_refused(self, tmp_path: Path) -> None:
        """A regular file at the socket path is refused (never replaced), naming the path."""
        path = tmp_path / "bus.sock"
        path.write_text("keep me")

        with pytest.raises(SocketOwnershipError, match="not a socket"):
            ts.prepare_socket_dir(str(path))
        assert "keep me" == path.read_text()


class TestBindableSocketPath:
    def test_short_path_is_kept(self) -> None:
        """A path AF_UNIX can bind (107 bytes) is used as given."""
        path = "/" + "s" * 106

        assert path == ts.bindable_socket_path(path)
        assert path == ts.read_transport_settings({"GOGGLES_SOCKET": path}).socket_path

    def test_long_path_maps_to_one_short_private_path(self, tmp_path: Path) -> None:
        """108+ bytes map to ``/tmp/goggles_io-<uid>/<hash>.sock``, the same in every process."""
        long_path = str(tmp_path / ("l" * 120) / "bus.sock")

        short = ts.read_transport_settings({"GOGGLES_SOCKET": long_path}).socket_path

        assert short == ts.bindable_socket_path(long_path)
        assert short == ts.TransportSettings(socket_path=long_path).socket_path
        assert f"/tmp/goggles_io-{os.getuid()}" == os.path.dirname(short)
        assert len(short) <= 107
        assert short != ts.bindable_socket_path(long_path + "2")

    def test_long_default_path_maps_and_creates_no_long_directory(
        self, tmp_root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A temp dir that makes the default path too long yields the stand-in, nothing under it."""
        deep = tmp_root / ("t" * 100)
        deep.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(deep))

        path = ts.default_socket_path()

        assert f"/tmp/goggles_io-{os.getuid()}" == os.path.dirname(path)
        assert [] == list(deep.iterdir())

    def test_stand_in_directory_is_made_private_or_refused(
        self, tmp_root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """prepare_socket_dir creates the stand-ins' folder 0700; one open to others is refused."""
        monkeypatch.setattr(ts, "_SHORT_ROOT", str(tmp_root))
        short = ts.bindable_socket_path(str(tmp_root / ("l" * 120)))
        ts.prepare_socket_dir(short)
        parent = Path(short).parent

        assert 0o700 == stat.S_IMODE(parent.stat().st_mode)
        parent.chmod(0o777)
        with pytest.raises(SocketOwnershipError, match="too long for a Unix socket"):
            ts.prepare_socket_dir(short)
