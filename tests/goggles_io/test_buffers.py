"""Recycled buffers for big private copies: reused once unreferenced, never while a view lives."""

from __future__ import annotations

import gc

import numpy as np

from goggles_io._buffers import MIN_RECYCLED_BYTES, recycled_copy


def _address(arr: np.ndarray) -> int:
    return int(arr.__array_interface__["data"][0])


class TestRecycledCopy:
    def test_copy_is_equal_and_independent(self) -> None:
        """The copy holds the source's values and does not change when the source does."""
        src = np.arange(MIN_RECYCLED_BYTES // 4, dtype=np.float32).reshape(-1, 4)
        out = recycled_copy(src)
        src[:] = -1

        assert out.shape == src.shape
        assert out.dtype == src.dtype
        assert 0.0 == out[0, 0]
        assert out.flags.writeable

    def test_buffer_is_reused_after_the_array_dies(self) -> None:
        """A dropped copy's buffer backs the next copy of the same size (warm pages)."""
        src = np.ones(MIN_RECYCLED_BYTES * 2 + 8, dtype=np.uint8)
        first = recycled_copy(src)
        address = _address(first)
        del first
        gc.collect()

        assert address == _address(recycled_copy(src))

    def test_buffer_is_not_reused_while_a_view_lives(self) -> None:
        """A view of the copy keeps its buffer out of circulation: later copies never overwrite it."""
        src = np.full(MIN_RECYCLED_BYTES * 2 + 16, 7, dtype=np.uint8)
        view = recycled_copy(src)[10:20]
        gc.collect()
        other = recycled_copy(np.zeros_like(src))

        assert 7 == int(view.min())
        assert _address(other) != _address(view) - 10
