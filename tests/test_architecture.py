"""The runtime/experiment split is enforced by import-linter, and the check can fail."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _lint_imports(project_root: Path) -> subprocess.CompletedProcess[str]:
    """Run lint-imports with ``project_root``'s config against ``project_root/src``."""
    env_path = str(project_root / "src")
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from importlinter.cli import lint_imports_command; lint_imports_command()",
            "--config",
            str(project_root / "pyproject.toml"),
            "--no-cache",
        ],
        cwd=project_root,
        env={"PYTHONPATH": env_path, "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def _copy_project(dest: Path) -> Path:
    shutil.copytree(ROOT / "src", dest / "src", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(ROOT / "pyproject.toml", dest / "pyproject.toml")
    return dest


class TestImportContracts:
    def test_real_tree_keeps_the_contracts(self) -> None:
        """lint-imports passes on the tree as committed."""
        result = _lint_imports(ROOT)

        assert 0 == result.returncode, result.stdout + result.stderr

    def test_runtime_importing_experiment_breaks_the_contract(self, tmp_path: Path) -> None:
        """An experiment import inside runtime_telemetry makes lint-imports fail and name the contract."""
        project = _copy_project(tmp_path)
        module = project / "src" / "runtime_telemetry" / "_contract_breaker.py"
        module.write_text("import experiment_telemetry  # deliberately forbidden\n")
        init = project / "src" / "runtime_telemetry" / "__init__.py"
        init.write_text(init.read_text() + "\nfrom runtime_telemetry import _contract_breaker\n")

        result = _lint_imports(project)

        assert 0 != result.returncode
        assert "runtime_telemetry imports neither the experiment side" in result.stdout
        assert "BROKEN" in result.stdout

    def test_goggles_io_importing_runtime_breaks_the_layers(self, tmp_path: Path) -> None:
        """goggles_io and runtime_telemetry stay independent: an import between them fails the layers."""
        project = _copy_project(tmp_path)
        module = project / "src" / "goggles_io" / "_contract_breaker.py"
        module.write_text("import runtime_telemetry  # deliberately forbidden\n")

        result = _lint_imports(project)

        assert 0 != result.returncode
        assert "experiment_telemetry sits above" in result.stdout

    def test_demo_runtime_importing_the_bridge_breaks_the_contract(self, tmp_path: Path) -> None:
        """The worker bridge stays on the experiment side: the demo's runtime importing it fails."""
        project = _copy_project(tmp_path)
        runtime = project / "src" / "experiment_telemetry" / "demo" / "runtime.py"
        runtime.write_text(
            runtime.read_text() + "\nfrom experiment_telemetry.workers import forwarder\n"
        )

        result = _lint_imports(project)

        assert 0 != result.returncode
        assert "runtime code imports neither the worker bridge" in result.stdout
        assert "BROKEN" in result.stdout


def test_goggles_io_has_no_import_cycles() -> None:
    """No module of goggles_io imports (directly or not) one that imports it back.

    In particular the transport never imports what builds it (``_config``), and neither logger
    module imports the other's. grimp is import-linter's own graph builder.
    """
    import grimp

    graph = grimp.build_graph("goggles_io")
    cycles = [
        (module, imported)
        for module in sorted(graph.modules)
        for imported in graph.find_modules_directly_imported_by(module)
        if graph.find_shortest_chain(importer=imported, imported=module)
    ]

    assert [] == cycles


_CYCLES = """
import json, sys
import grimp
graph = grimp.build_graph(*sys.argv[1:])
print(json.dumps(sorted(
    (module, imported)
    for module in graph.modules
    for imported in graph.find_modules_directly_imported_by(module)
    if graph.find_shortest_chain(importer=imported, imported=module)
)))
"""
_PACKAGES = ("experiment_telemetry", "goggles_io", "runtime_telemetry")


def _import_cycles(src: Path) -> list[list[str]]:
    """(module, module it imports that imports it back) pairs among ``_PACKAGES`` in ``src``,
    from grimp in a fresh interpreter (imports under ``TYPE_CHECKING`` count: they are one)."""
    done = subprocess.run(
        [sys.executable, "-c", _CYCLES, *_PACKAGES],
        env={"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    cycles: list[list[str]] = json.loads(done.stdout)
    return cycles


class TestNoImportCycles:
    def test_experiment_telemetry_goggles_io_and_runtime_have_none(self) -> None:
        """No module of the three packages imports (directly or not) one that imports it back:
        the experiment's worker loop is a collaborator, not a reach back into the harness."""

        assert [] == _import_cycles(ROOT / "src")

    def test_a_reach_back_into_the_harness_is_found(self, tmp_path: Path) -> None:
        """The check can fail: the worker loop importing ``Experiment`` for its type alone
        (as ``harness_workers.py`` once did) is a cycle, named by both modules."""
        project = _copy_project(tmp_path)
        loop = project / "src" / "experiment_telemetry" / "workers" / "loop.py"
        loop.write_text(
            loop.read_text()
            + "\nif TYPE_CHECKING:\n    from experiment_telemetry.harness import Experiment\n"
        )
        loop.write_text(loop.read_text().replace("Any, Protocol", "TYPE_CHECKING, Any, Protocol"))

        cycles = _import_cycles(project / "src")

        assert ["experiment_telemetry.harness", "experiment_telemetry.workers"] in cycles
        assert ["experiment_telemetry.workers.loop", "experiment_telemetry.harness"] in cycles


def test_architecture_doc_names_every_goggles_io_module() -> None:
    """docs/architecture.md's tree names each module of goggles_io's floors, so it stays true."""
    doc = (ROOT / "docs" / "architecture.md").read_text()
    package = ROOT / "src" / "goggles_io"
    stand_alone = {"history", "filters", "ui"}  # named as folders in the tree
    missing = [
        str(path.relative_to(package))
        for path in sorted(package.rglob("*.py"))
        if path.name != "__init__.py"
        and not stand_alone & set(path.relative_to(package).parts[:-1])
        and path.name not in doc
    ]

    assert [] == missing
