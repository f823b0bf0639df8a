"""Run mypy --strict over src/ and hold it to a baseline that may only shrink (ADR 0038).

Modules in the *strict set* must have no error at all: every module of ``runtime_telemetry``,
every package ``__init__``, and every module that defines a name a public package re-exports in
its ``__all__`` (the code behind the public API). Every other module may have at most the count
recorded in ``.ci/mypy-baseline.json``. Exit 1 when a strict module has an error or a count grew,
printing each module's before/after. ``--update`` rewrites the baseline to today's counts, which
it refuses while any count is above the baseline.

Usage: ``python3 .ci/typecheck.py [--update]`` from the repository root.
"""

from __future__ import annotations

import argparse
import importlib
import json
import pkgutil
import re
import subprocess
import sys
from collections import Counter
from collections.abc import Iterable, Mapping
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
BASELINE = ROOT / ".ci" / "mypy-baseline.json"
PACKAGES = ("runtime_telemetry", "goggles_io", "experiment_telemetry", "nonfinite_json")
STRICT_PACKAGES = ("runtime_telemetry",)
_ERROR = re.compile(r"^(?P<path>src/[^:]+\.py):\d+(?::\d+)?: error: ")


def module_of(path: str) -> str:
    """``src/goggles_io/_api/state.py`` -> ``goggles_io._api.state``."""
    parts = Path(path).with_suffix("").parts[1:]
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def count_errors(mypy_output: str) -> Counter[str]:
    """Errors per module in mypy's output (notes and the summary are not errors)."""
    return Counter(
        module_of(match["path"]) for match in map(_ERROR.match, mypy_output.splitlines()) if match
    )


def public_modules(packages: Iterable[str] = PACKAGES) -> set[str]:
    """The package ``__init__``s and every module defining a name one of them re-exports.

    A public package is one whose dotted name has no ``_``-prefixed part. Its ``__all__`` is
    the API users import; the module that defines each name is where its types must hold.
    """
    found: set[str] = set()
    for top in packages:
        root = importlib.import_module(top)
        names = [top] + [
            info.name
            for info in pkgutil.walk_packages(root.__path__, f"{top}.")
            if info.ispkg and not any(part.startswith("_") for part in info.name.split("."))
        ]
        for name in names:
            package = importlib.import_module(name)
            found.add(name)
            for attr in getattr(package, "__all__", ()):
                value = getattr(package, attr, None)
                defined_in = getattr(value, "__name__" if _is_module(value) else "__module__", None)
                if isinstance(defined_in, str) and defined_in.split(".")[0] == top:
                    found.add(defined_in)
    return found


def _is_module(value: object) -> bool:
    return type(value) is type(sys)


def is_strict(module: str, public: set[str]) -> bool:
    """Whether ``module`` must have no mypy error at all."""
    return module.split(".")[0] in STRICT_PACKAGES or module in public


def compare(
    baseline: Mapping[str, int], counts: Mapping[str, int], public: set[str]
) -> tuple[list[str], list[str]]:
    """(failures, report lines): strict modules with errors, and modules above their baseline."""
    failures, report = [], []
    for module in sorted(set(baseline) | set(counts)):
        before, now = baseline.get(module, 0), counts.get(module, 0)
        if is_strict(module, public) and now:
            failures.append(f"{module}: {now} error(s) in a strict module (must be 0)")
        elif now > before:
            failures.append(f"{module}: {before} -> {now} errors (the baseline may only shrink)")
        if now != before:
            report.append(f"  {module:<55} {before:>3} -> {now:>3}")
    return failures, report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--update", action="store_true", help="record today's counts")
    args = parser.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-error-summary"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode not in (0, 1):  # 2: mypy itself failed (bad config, crash)
        print(done.stdout + done.stderr, file=sys.stderr)
        return 2
    counts = count_errors(done.stdout)
    baseline: dict[str, int] = json.loads(BASELINE.read_text()) if BASELINE.exists() else {}
    public = public_modules()
    failures, report = compare(baseline, counts, public)
    strict_errors = sum(n for module, n in counts.items() if is_strict(module, public))
    print(
        f"mypy --strict: {sum(counts.values())} errors in {len(counts)} modules "
        f"(baseline {sum(baseline.values())}); strict set ({len(public)} public modules "
        f"+ {', '.join(STRICT_PACKAGES)}): {strict_errors} errors"
    )
    if report:
        print("changed since the baseline (before -> after):", *report, sep="\n")
    if failures:
        print(done.stdout, "FAILED:", *failures, sep="\n", file=sys.stderr)
        return 1
    if args.update:
        kept = {m: n for m, n in sorted(counts.items()) if not is_strict(m, public)}
        BASELINE.write_text(json.dumps(kept, indent=2) + "\n")
        print(f"baseline written: {BASELINE.relative_to(ROOT)}")
    elif report:
        print("counts fell: run `python3 .ci/typecheck.py --update` to lower the baseline")
    return 0


if __name__ == "__main__":
    sys.exit(main())
