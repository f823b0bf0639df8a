"""Reading files anyone may have put in a run folder: confined, regular only, bounded lines."""

from __future__ import annotations

import io
import os
from pathlib import Path

import pytest

from goggles_io._util.kvfile import read_kv
from goggles_io._util.safe_read import (
    MAX_SMALL_FILE_BYTES,
    LineCursor,
    RefusedFileError,
    iter_chunks,
    open_inside,
    read_lines,
    read_small,
)


def lines_of(data: bytes, budget: int, limit: int, *, final: bool = False) -> tuple[bytes, int]:
    """Everything ``read_lines`` returns over ``data``, called until it has nothing more."""
    fh, cursor, out, too_long = io.BytesIO(data), LineCursor(), [], 0
    while True:
        chunk, skipped = read_lines(fh, cursor, budget, final=final, limit=limit)
        out.append(chunk)
        too_long += skipped
        if not chunk and not (cursor.skipping and cursor.offset < len(data)):
            return b"".join(out), too_long


class TestReadLines:
    def test_a_line_over_the_limit_is_skipped_and_counted(self) -> None:
        """A 50-byte line under a 10-byte limit is dropped; the lines around it are kept."""
        assert (b"a\nbb\nc\n", 1) == lines_of(b"a\nbb\n" + b"x" * 50 + b"\nc\n", 4, 10)

    def test_a_line_at_the_limit_is_kept(self) -> None:
        """The limit counts the line's bytes without its newline."""
        assert (b"y" * 10 + b"\n", 1) == lines_of(b"x" * 11 + b"\n" + b"y" * 10 + b"\n", 100, 10)

    def test_a_torn_last_line_waits_unless_final(self) -> None:
        """Without its newline the last line is not returned, unless the file is read once."""
        assert [(b"a\n", 0), (b"a\nb", 0)] == [
            lines_of(b"a\nb", 4, 10), lines_of(b"a\nb", 4, 10, final=True)
        ]  # fmt: skip

    def test_skipping_resumes_across_calls_until_the_newline(self) -> None:
        """An over-long line without its end yet stays skipped, and is counted once, when it grows."""
        fh, cursor = io.BytesIO(b"x" * 40), LineCursor()
        first = read_lines(fh, cursor, 4, limit=10)
        fh.seek(0, os.SEEK_END)
        fh.write(b"xx\nok\n")
        second = read_lines(fh, cursor, 4, limit=10)

        assert ((b"", 1), (b"ok\n", 0), False) == (first, second, cursor.skipping)

    def test_chunks_of_a_big_file_stay_small(self, tmp_path: Path) -> None:
        """A 64 MiB sparse line is discarded in blocks: no chunk is ever larger than the budget."""
        path = tmp_path / "log"
        with open(path, "wb") as fh:
            fh.write(b"first\n")
            fh.truncate(6 + (64 << 20))
            fh.seek(0, os.SEEK_END)
            fh.write(b"\nlast\n")
        counted = [0]
        with open(path, "rb") as fh:
            chunks = list(iter_chunks(fh, counted, budget=1 << 16))

        assert ([b"first\n", b"last\n"], 1) == (chunks, counted[0])


class TestConfinedOpen:
    def test_a_symlink_out_of_the_folder_is_refused(self, tmp_path: Path) -> None:
        """A file that resolves outside its folder is not opened; one inside is."""
        (tmp_path / "secret").write_text("s")
        run = tmp_path / "run"
        run.mkdir()
        (run / "log.jsonl").symlink_to(tmp_path / "secret")
        (run / "own").write_text("o")
        (run / "alias").symlink_to(run / "own")

        with pytest.raises(RefusedFileError, match="resolves outside"):
            open_inside(run, run / "log.jsonl")
        with open_inside(run, run / "alias") as fh:
            assert b"o" == fh.read()

    def test_a_fifo_is_refused_without_blocking(self, tmp_path: Path) -> None:
        """A FIFO named like a run file is refused at once (opening it would wait for a writer)."""
        os.mkfifo(tmp_path / "log.jsonl")

        with pytest.raises(RefusedFileError, match="not a regular file"):
            open_inside(tmp_path, tmp_path / "log.jsonl")

    def test_a_big_small_file_is_refused(self, tmp_path: Path) -> None:
        """``run.kv`` over 4 MiB is not read whole: ``read_kv`` refuses it (an OSError)."""
        path = tmp_path / "run.kv"
        with open(path, "wb") as fh:
            fh.write(b"status=done\n")
            fh.truncate(MAX_SMALL_FILE_BYTES + 1)

        with pytest.raises(RefusedFileError, match="larger than"):
            read_small(path)
        with pytest.raises(OSError, match="larger than"):
            read_kv(path)

    def test_read_kv_inside_a_run_refuses_a_symlink_out(self, tmp_path: Path) -> None:
        """``read_kv(..., inside=run)`` reads the run's own file, not one linked from outside."""
        (tmp_path / "outside.kv").write_text("secret=1\n")
        run = tmp_path / "run"
        run.mkdir()
        (run / "config.kv").symlink_to(tmp_path / "outside.kv")

        assert {"secret": "1"} == read_kv(run / "config.kv")
        with pytest.raises(RefusedFileError):
            read_kv(run / "config.kv", inside=run)
