"""Length-prefixed frames: round trips, partial reads, and every bad input as FrameError."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given
from hypothesis import strategies as st

from goggles_io._transport.framing import MAGIC, VERSION, FrameDecoder, FrameError, encode_frame


class TestFrameDecoder:
    @given(st.lists(st.binary(max_size=300), max_size=20), st.integers(1, 50))
    def test_frames_survive_any_split_of_the_stream(
        self, payloads: list[bytes], chunk: int
    ) -> None:
        """Payloads come back in order however the stream is cut into reads."""
        stream = b"".join(encode_frame(p) for p in payloads)
        decoder = FrameDecoder()
        out = []
        for i in range(0, len(stream), chunk):
            out += decoder.feed(stream[i : i + chunk])
        decoder.close()

        assert payloads == out

    @given(st.binary(max_size=2000))
    def test_any_bytes_give_frames_or_frame_error(self, data: bytes) -> None:
        """Arbitrary bytes yield payloads or raise FrameError; nothing else, never a hang."""
        decoder = FrameDecoder(max_frame_bytes=1024)
        try:
            frames = decoder.feed(data)
            decoder.close()
        except FrameError:
            return

        assert all(isinstance(f, bytes) for f in frames)

    def test_oversized_length_is_refused_before_buffering(self) -> None:
        """A header announcing more than max_frame_bytes raises at once."""
        with pytest.raises(FrameError, match="exceeds max_frame_bytes"):
            FrameDecoder(max_frame_bytes=10).feed(struct.pack(">BBI", MAGIC, VERSION, 11))

    def test_bad_magic_is_refused(self) -> None:
        """A wrong magic byte raises FrameError naming it."""
        with pytest.raises(FrameError, match="magic"):
            FrameDecoder().feed(b"\x00\x01\x00\x00\x00\x00")

    def test_unknown_version_is_refused(self) -> None:
        """A wrong version byte raises FrameError naming it."""
        with pytest.raises(FrameError, match="version"):
            FrameDecoder().feed(struct.pack(">BBI", MAGIC, VERSION + 1, 0))

    def test_truncated_stream_is_an_error_at_close(self) -> None:
        """A stream that ends inside a frame raises FrameError on close."""
        decoder = FrameDecoder()
        decoder.feed(encode_frame(b"hello")[:-1])
        with pytest.raises(FrameError, match="inside a frame"):
            decoder.close()

    def test_encoder_refuses_oversized_payload(self) -> None:
        """encode_frame refuses payloads over the limit."""
        with pytest.raises(FrameError):
            encode_frame(b"x" * 11, max_frame_bytes=10)

    def test_frame_error_is_a_value_error(self) -> None:
        """FrameError refines ValueError so generic handlers catch it."""
        assert issubclass(FrameError, ValueError)
