"""Names a package loads lazily (``lazy_loader``) are real types to a type checker.

``lazy_loader`` ships no types, so without an ``if TYPE_CHECKING:`` import every lazy name
(``goggles_io.CsvHandler``, ``experiment_telemetry.Experiment``) reads as ``Any`` to mypy and
to the users' IDEs. Each package that defers imports names each lazy name there too.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
LAZY = sorted(p for p in SRC.rglob("__init__.py") if "submod_attrs" in p.read_text())


def _lazy_names(tree: ast.Module) -> set[str]:
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "submod_attrs":
            return {name for names in ast.literal_eval(node.value).values() for name in names}
    return set()


def _type_checking_names(tree: ast.Module) -> set[str]:
    found: set[str] = set()
    for node in tree.body:
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING":
            for stmt in node.body:
                if isinstance(stmt, ast.ImportFrom):
                    found |= {alias.asname or alias.name for alias in stmt.names}
    return found


def test_there_are_lazy_packages() -> None:
    """The check below sees the packages that defer imports (it cannot pass by finding none)."""
    assert {"goggles_io", "runtime_telemetry", "experiment_telemetry"} <= {
        p.parent.name for p in LAZY
    }


@pytest.mark.parametrize("init", LAZY, ids=[str(p.parent.relative_to(SRC)) for p in LAZY])
def test_every_lazy_name_is_imported_for_type_checkers(init: Path) -> None:
    """Each name in ``submod_attrs`` is imported under ``if TYPE_CHECKING:``."""
    tree = ast.parse(init.read_text())

    assert [] == sorted(_lazy_names(tree) - _type_checking_names(tree))
