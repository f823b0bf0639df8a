"""A left-over folder's reader takes hostile bytes (ADR 0061): any ``events.bin`` is read as a
list of records or refused as :class:`Unreadable`, never anything else, and no length in it is
trusted before it is checked: a record longer than its file, an array far larger than its
record's bytes, an array that names a shared-memory segment are refused before anything that
size is read or made. In this process, through the reader itself (``leftover_folder.py``).
"""

from __future__ import annotations

import os
import struct
import tracemalloc
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgpack
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from goggles_io import Event, Kind
from goggles_io._event.rows import row_of
from goggles_io._event.spilled import SpillEncoder
from goggles_io._transport.host.leftover_delivery import check_folder
from goggles_io._transport.leftover_folder import Folder, Unreadable, claim
from leftover_kit import dead_owner_name, events, recording_spec, write_folder

_HEAD = struct.Struct(">BIQ")
_EXT_SHM = 2  # the codec's extension for an array beside the record (goggles_io._event.codec)


@pytest.fixture
def root(spool_dir: Path) -> Iterator[tuple[Path, int]]:
    spool_dir.mkdir(parents=True, exist_ok=True)
    fd = os.open(spool_dir, os.O_RDONLY | os.O_DIRECTORY)
    yield spool_dir, fd
    os.close(fd)


def _claimed(root: tuple[Path, int], events_bin: bytes) -> Folder:
    path, fd = root
    folder = write_folder(path, recording_spec(path / "sink.jsonl"), events(0, 3))
    (folder / "events.bin").write_bytes(events_bin)
    claimed = claim(fd, folder.name, f"leftover-{os.getpid()}-0-from-{folder.name}")
    assert claimed is not None
    return claimed


def _checked(root: tuple[Path, int], events_bin: bytes) -> Any:
    folder = _claimed(root, events_bin)
    try:
        return check_folder(folder)
    finally:
        folder.release()


def _record(kind: int, data: bytes, blobs: bytes = b"") -> bytes:
    return _HEAD.pack(kind, len(data), len(blobs)) + data + blobs


def _array_record(fields: Any) -> tuple[bytes, bytes]:
    """A spool record of one image whose array reference is rewritten to ``fields(old)``."""
    pixels = np.arange(8192, dtype=np.uint8)
    record, blobs = SpillEncoder().encode([row_of(Event(Kind.IMAGE, "global", pixels, step=1))])

    def hook(code: int, data: bytes) -> Any:
        if code == _EXT_SHM:
            return msgpack.ExtType(code, msgpack.packb(fields(msgpack.unpackb(data))))
        return msgpack.ExtType(code, data)

    raw = msgpack.unpackb(record, ext_hook=hook, raw=False, strict_map_key=False)
    return msgpack.packb(raw, use_bin_type=True), b"".join(bytes(b) for b in blobs)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=4096))
def test_any_bytes_are_records_or_unreadable(root: tuple[Path, int], data: bytes) -> None:
    """Arbitrary ``events.bin`` bytes: a checked folder (the count must then match) or
    :class:`Unreadable`; never another exception."""
    try:
        _checked(root, data)
    except Unreadable:
        pass


@settings(
    max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.binary(max_size=64), st.integers(0, 2**32 - 1), st.integers(0, 2**64 - 1))
def test_a_head_with_any_lengths_is_checked_against_the_file(
    root: tuple[Path, int], body: bytes, n: int, blobs: int
) -> None:
    """A record head with any lengths over a short body: refused, nothing that size read."""
    tracemalloc.start()
    try:
        with pytest.raises(Unreadable):
            _checked(root, _HEAD.pack(1, n, blobs) + body)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_an_array_larger_than_its_record_is_refused_before_it_is_made(
    root: tuple[Path, int],
) -> None:
    """An array reference that claims 2**39 bytes over 8 KiB of blobs: refused, no array made."""
    record, blobs = _array_record(lambda f: [f[0], f[1], 2**39, f[3], [2**39]])
    tracemalloc.start()
    try:
        with pytest.raises(Unreadable, match="outside its record"):
            _checked(root, _record(1, record, blobs))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 16 << 20


def test_an_array_that_names_shared_memory_is_refused(root: tuple[Path, int]) -> None:
    """A folder's arrays were copied out of the pools: a segment name in one is damage."""
    record, blobs = _array_record(lambda f: ["goggles_io-0-1-1", *f[1:]])
    with pytest.raises(Unreadable, match="shared memory"):
        _checked(root, _record(1, record, blobs))


def test_a_good_folder_reads_whole(root: tuple[Path, int]) -> None:
    """The reader's own writer's folder (the kit writes it byte for byte) checks out."""
    path, fd = root
    folder = write_folder(
        path, recording_spec(path / "sink.jsonl"), events(0, 700, images_every=70)
    )
    claimed = claim(fd, folder.name, dead_owner_name() + "-from-1")
    assert claimed is not None
    try:
        manifest, ops = check_folder(claimed)
    finally:
        claimed.release()
    assert (710, "attach") == (manifest["events"], ops[0][0])
