"""Cell text of Monty's stats CSV: what pandas writes for each value, column by column.

Monty builds one ``DataFrame`` per episode from its modules' stat dicts
(``pd.DataFrame.from_dict(..., orient="index")``, L1007) and appends it with ``to_csv`` (H288).
pandas gives each column one dtype from the values of that episode's rows, and the dtype decides
how a number is written: an ``int64`` column writes ``1``; a ``float64`` column writes ``1.0``,
and a column of ints with a missing value (None, NaN, or a key the module lacks) is ``float64``
(``int64`` cannot hold NaN); a column without a number writes ``str`` of each value, empty when
missing. Which numbers Monty holds as floats is fixed per column (``FLOAT_COLUMNS``); the rest
keep the type of our value, which is Monty's (ints for its counts and steps, ``highest_evidence``
0 for a module without a hypothesis). Vectors are ours (D10).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["FLOAT_COLUMNS", "column_cells", "monty_value", "render_cell"]

FLOAT_COLUMNS = frozenset(
    {
        "rotation_error",  # np.round(...) of a float
        "detected_scale",  # an element of the float array np.concatenate([location, euler, [scale]])
        "individual_ts_rotation_error",
        "time",  # np.sum of float time differences
        "mean_objects_per_graph",  # np.mean
        "mean_graphs_per_object",
        "episode_avg_prediction_error",  # np.mean
        "primary_target_scale",  # the float scale of the target's configuration
    }
)
"""Columns whose numbers Monty holds as floats, whatever their value (whole numbers: ``1.0``)."""


def monty_value(column: str, stats: object) -> object:
    """``stats``' value of ``column`` with the type Monty holds it in, where ours differs.

    Two of Monty's counts are ``np.sum`` over a per-step list, and numpy's sum of an empty
    list is the float ``0.0`` (a real Monty 0.55 run writes ``0.0``): ``goal_state_achieved``
    when no goal state was attempted (the list of outcomes is empty), and
    ``individual_ts_reached_at_step`` when the module concluded before Monty counted a step
    (its first input of the episode: no flag yet; D20 lists the rare int ``0`` case).
    """
    value = getattr(stats, column, None)
    if column == "goal_state_achieved" and not getattr(stats, "goal_states_attempted", 0):
        return 0.0 if value == 0 else value
    if column == "individual_ts_reached_at_step" and value == 0 and not isinstance(value, bool):
        return 0.0
    return value


def _missing(value: object) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def render_cell(value: object) -> str:
    """One cell of a column without a numeric dtype, as Monty's CSV shows it (vectors: D10)."""
    if _missing(value):
        return ""
    if isinstance(value, (bool, int, str)):
        return str(value)
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, tuple):
        if value and all(isinstance(v, str) for v in value):
            return repr(list(value))  # the possible matches of a time-out, as pandas writes them
        return "[" + " ".join(render_cell(v) for v in value) + "]"
    return str(value)


def column_cells(column: str, values: Sequence[object]) -> list[str]:
    """One episode's cells of ``column``, in row order, as pandas writes that column's dtype."""
    present = [v for v in values if not _missing(v)]
    numbers = [v for v in present if isinstance(v, (int, float)) and not isinstance(v, bool)]
    if not numbers or len(numbers) < len(present):  # no number, or not only numbers: object
        return [render_cell(v) for v in values]
    floats = (
        column in FLOAT_COLUMNS
        or len(present) < len(values)  # a missing value makes an int column float64
        or any(isinstance(v, float) for v in numbers)
    )
    return [_number(v, floats) for v in values]


def _number(value: object, as_float: bool) -> str:
    """One number cell: ``1.0`` in a float64 column, ``1`` in an int64 one; empty when missing."""
    if _missing(value) or not isinstance(value, (int, float)):
        return ""
    return repr(float(value)) if as_float else str(int(value))
