"""``Sequences`` and ``SequenceLog``: what a sink holds per producer, kept with its data (ADR 0057).

The log is written ahead of each write of the data file; after a crash at any point the
recovered marks must claim exactly the events of the writes that landed whole, and a write that
landed in part is cut off. A hostile log (FIFO, symlink, garbage) is never followed or waited on.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from goggles_io._event.records import Event, Kind
from goggles_io.handlers import CsvHandler, LocalStorageHandler, SequenceLog, Sequences
from goggles_io.handlers.sequences import sequence_log_path


def _event(producer: str, seq: int, step: int = 0) -> Event:
    return Event(Kind.METRIC, "global", {"x": float(step)}, step=step, producer=producer, seq=seq)


def _open(path: Path) -> int:
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)


class TestSequences:
    def test_an_event_at_or_below_the_last_taken_is_not_fresh(self) -> None:
        seen = Sequences({"a": 5})
        assert [False, False, True, False, True] == [
            seen.fresh(_event("a", 4)),
            seen.fresh(_event("a", 5)),
            seen.fresh(_event("a", 6)),
            seen.fresh(_event("a", 6)),
            seen.fresh(_event("b", 1)),
        ]
        assert ({"a": 6, "b": 1}, 3) == (seen.marks, seen.skipped)

    def test_an_unnumbered_event_is_always_fresh(self) -> None:
        seen = Sequences()
        assert all(seen.fresh(_event("", 0)) for _ in range(3))
        assert {} == seen.marks


class TestSequenceLog:
    def test_marks_of_whole_writes_come_back(self, tmp_path: Path) -> None:
        data = tmp_path / "out.jsonl"
        fd = _open(data)
        log = SequenceLog(data, "t")
        assert {} == log.recover(fd)
        log.append(fd, b"a1\na2\n", {"a": 2})
        log.append(fd, b"b1\n", {"b": 1})
        log.close()
        os.close(fd)
        fd = _open(data)
        try:
            assert {"a": 2, "b": 1} == SequenceLog(data, "t").recover(fd)
        finally:
            os.close(fd)

    def test_no_log_until_a_numbered_event_is_written(self, tmp_path: Path) -> None:
        data = tmp_path / "out.jsonl"
        fd = _open(data)
        log = SequenceLog(data, "t")
        log.recover(fd)
        log.intend(0, 3, {})
        os.close(fd)
        assert not sequence_log_path(data).exists()

    def test_a_write_cut_short_is_removed_and_claims_nothing(self, tmp_path: Path) -> None:
        data = tmp_path / "out.jsonl"
        fd = _open(data)
        log = SequenceLog(data, "t")
        log.recover(fd)
        log.append(fd, b"a1\n", {"a": 1})
        log.intend(3, 9, {"a": 3})  # then the process dies inside the write
        os.write(fd, b"a2\n")
        log.close()
        os.close(fd)
        fd = _open(data)
        try:
            assert {"a": 1} == SequenceLog(data, "t").recover(fd)
        finally:
            os.close(fd)
        assert b"a1\n" == data.read_bytes()

    def test_a_failed_write_cut_back_does_not_count(self, tmp_path: Path) -> None:
        """A full disk: the write was truncated back, the next one starts where it began."""
        data = tmp_path / "out.jsonl"
        fd = _open(data)
        log = SequenceLog(data, "t")
        log.recover(fd)
        log.intend(0, 6, {"a": 2})  # failed: nothing of it stayed
        log.append(fd, b"b1\n", {"b": 1})
        log.close()
        os.close(fd)
        fd = _open(data)
        try:
            assert {"b": 1} == SequenceLog(data, "t").recover(fd)
        finally:
            os.close(fd)

    def test_marks_for_another_file_count_for_nothing(self, tmp_path: Path) -> None:
        data = tmp_path / "out.jsonl"
        fd = _open(data)
        log = SequenceLog(data, "t")
        log.recover(fd)
        log.append(fd, b"a1\n", {"a": 1})
        log.close()
        os.close(fd)
        data.unlink()
        other = tmp_path / "other"
        other.write_bytes(b"x\n" * 10)  # holds the old inode number, most likely
        data.write_bytes(b"new\n")
        fd = _open(data)
        try:
            assert {} == SequenceLog(data, "t").recover(fd)
        finally:
            os.close(fd)

    @pytest.mark.timeout(30)
    @pytest.mark.parametrize("kind", ["fifo", "symlink", "garbage"])
    def test_a_hostile_log_is_neither_followed_nor_waited_on(
        self, tmp_path: Path, kind: str
    ) -> None:
        data = tmp_path / "out.jsonl"
        target = tmp_path / "elsewhere"
        target.write_text('{"ino": 1, "at": 0, "end": 0, "seq": {"a": 99}, "all": true}\n')
        log_path = sequence_log_path(data)
        if kind == "fifo":
            os.mkfifo(log_path)
        elif kind == "symlink":
            log_path.symlink_to(target)
        else:
            log_path.write_bytes(b"\x00\xff not json\n[1, 2]\n")
        fd = _open(data)
        result: list[dict[str, int]] = []
        worker = threading.Thread(target=lambda: result.append(SequenceLog(data, "t").recover(fd)))
        worker.start()
        worker.join(10)
        os.close(fd)
        assert not worker.is_alive(), "recover waited on the log"
        assert [{}] == result
        assert target.read_text().startswith('{"ino": 1')  # never written through the link

    @settings(max_examples=60, deadline=None)
    @given(
        writes=st.lists(st.integers(1, 5), min_size=1, max_size=8),
        crash=st.integers(0, 30),
        part=st.floats(0.0, 1.0),
    )
    def test_after_a_crash_anywhere_the_marks_are_what_the_file_holds(
        self, tmp_path_factory: pytest.TempPathFactory, writes: list[int], crash: int, part: float
    ) -> None:
        """Writes of ``n`` lines each (sequence numbers 1, 2, ...); the process dies at step
        ``crash`` (before a record, after it, or in the middle of the data); the recovered mark
        is the last sequence in the file, and the file is whole writes only."""
        data = tmp_path_factory.mktemp("seq") / "out.jsonl"
        fd = _open(data)
        log = SequenceLog(data, "t")
        log.recover(fd)
        seq, step, whole = 0, 0, b""
        for n in writes:
            lines = b"".join(f"{seq + k + 1}\n".encode() for k in range(n))
            at = os.fstat(fd).st_size
            if step == crash:
                break
            step += 1
            log.intend(at, at + len(lines), {"p": seq + n})
            if step == crash:
                cut = int(len(lines) * part)
                os.write(fd, lines[:cut])  # died inside the write (or right after it)
                if cut == len(lines):  # all of it landed: the file holds it
                    seq += n
                    whole += lines
                break
            step += 1
            os.write(fd, lines)
            log.landed({"p": seq + n}, at + len(lines))
            seq += n
            whole += lines
        log.close()
        os.close(fd)
        fd = _open(data)
        try:
            marks = SequenceLog(data, "t").recover(fd)
        finally:
            os.close(fd)
        assert whole == data.read_bytes()
        assert ({"p": seq} if seq else {}) == marks


class TestFileSinks:
    def test_storage_skips_what_log_jsonl_holds_after_a_reopen(self, tmp_path: Path) -> None:
        first = LocalStorageHandler(tmp_path)
        first.open()
        for i in range(1, 6):
            first.handle(_event("p", i, step=i))
        first.close()
        again = LocalStorageHandler(tmp_path)  # a new host's instance, given it all again
        again.open()
        for i in range(1, 9):
            again.handle(_event("p", i, step=i))
        again.close()
        lines = (tmp_path / "log.jsonl").read_text().splitlines()
        assert 8 == len(lines) and 5 == again.skipped_redelivered

    def test_csv_keeps_its_marks_across_a_header_rewrite(self, tmp_path: Path) -> None:
        table = CsvHandler(tmp_path, rows_per_batch=1)
        table.open()
        table.handle(_event("p", 1, step=1))
        table.handle(_event("p", 2, step=2))
        table.handle(
            Event(Kind.METRIC, "global", {"y": 1.0}, step=3, producer="p", seq=3)
        )  # a new column: the table is rewritten
        table.close()
        again = CsvHandler(tmp_path)
        again.open()
        for seq in (1, 2, 3):
            again.handle(_event("p", seq, step=seq))
        again.handle(_event("p", 4, step=4))
        again.close()
        rows = (tmp_path / "metrics.csv").read_text().splitlines()
        assert ["step", "1", "2", "3", "4"] == [r.split(",")[0] for r in rows]
        assert 3 == again.skipped_redelivered
