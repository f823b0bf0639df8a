"""One module's graph-id <-> label map: Monty's ``graph_id_to_target`` / ``target_to_graph_id``.

Graph ids are the module's own names for objects; which labels a graph stands for is learned
from the contexts of past training episodes. The two means Monty reports over the map are
kept incrementally, so they cost nothing per episode however large the map grows.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["LabelMap"]

_EMPTY: frozenset[str] = frozenset()


class LabelMap:
    """Labels per graph and graphs per label, for one learning module."""

    __slots__ = ("_entries", "graph_labels", "label_graphs")

    def __init__(self) -> None:
        self.graph_labels: dict[str, set[str]] = {}
        self.label_graphs: dict[str, set[str]] = {}
        self._entries = 0

    def labels(self, graph_id: str | None) -> frozenset[str] | set[str]:
        """The labels learned for ``graph_id`` (none for an unknown graph: departure D5)."""
        return self.graph_labels.get(graph_id, _EMPTY) if graph_id is not None else _EMPTY

    def carries(self, graph_id: str | None, label: str | None) -> bool:
        """Whether ``graph_id`` was learned under ``label``."""
        return label in self.labels(graph_id)

    def knows(self, label: str) -> bool:
        """Whether any graph was learned under ``label`` (Monty: ``target in target_to_graph_id``)."""
        return label in self.label_graphs

    def sources(self, graph_ids: Iterable[str]) -> str:
        """Monty's ``possible_match_sources``: the labels of ``graph_ids``, sorted, joined by '-'."""
        found: set[str] = set()
        for graph_id in graph_ids:
            found.update(self.labels(graph_id))
        return "-".join(sorted(found))

    def mean_labels_per_graph(self) -> float:
        """Monty's ``mean_objects_per_graph`` (NaN for an empty map)."""
        return self._entries / len(self.graph_labels) if self.graph_labels else math.nan

    def mean_graphs_per_label(self) -> float:
        """Monty's ``mean_graphs_per_object`` (NaN for an empty map)."""
        return self._entries / len(self.label_graphs) if self.label_graphs else math.nan

    def add(self, graph_id: str, label: str) -> None:
        """Record that ``graph_id`` stands for ``label`` (both directions)."""
        labels = self.graph_labels.setdefault(graph_id, set())
        if label not in labels:
            labels.add(label)
            self.label_graphs.setdefault(label, set()).add(graph_id)
            self._entries += 1
