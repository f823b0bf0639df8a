"""The recognition aggregator every recognition test feeds: subscribed, closed afterwards."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from experiment_telemetry.aggregators import RecognitionAggregator


@pytest.fixture
def agg() -> Iterator[RecognitionAggregator]:
    aggregator = RecognitionAggregator().subscribe()
    yield aggregator
    aggregator.close()
