"""The public surface: every __all__ name imports, every public name is in __all__."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys

import pytest

import runtime_telemetry.exceptions as exceptions_module
from public_surface import public_surface_tests
from strategies import SHIPPED_MODULES

PUBLIC_MODULES = (
    "runtime_telemetry",
    "runtime_telemetry.events",
    *SHIPPED_MODULES,
    "runtime_telemetry.exceptions",
    "runtime_telemetry.testing",
)
TestPublicSurface = public_surface_tests("runtime_telemetry", PUBLIC_MODULES)
ALL_NAMES = [
    (module, name) for module in PUBLIC_MODULES for name in importlib.import_module(module).__all__
]
EXCEPTIONS = [
    obj
    for obj in vars(exceptions_module).values()
    if inspect.isclass(obj) and issubclass(obj, BaseException)
]


class TestAll:
    @pytest.mark.parametrize(("module", "name"), ALL_NAMES)
    def test_every_all_name_imports(self, module: str, name: str) -> None:
        """Each name in __all__ resolves to an attribute of its module."""

        assert hasattr(importlib.import_module(module), name)


class TestExceptions:
    @pytest.mark.parametrize("exc", EXCEPTIONS, ids=lambda e: e.__name__)
    def test_every_exception_derives_from_the_base(self, exc: type[BaseException]) -> None:
        """Every exception in exceptions.py is a TelemetryError."""

        assert issubclass(exc, exceptions_module.TelemetryError)

    @pytest.mark.parametrize(
        "exc",
        [e for e in EXCEPTIONS if e is not exceptions_module.TelemetryError],
        ids=lambda e: e.__name__,
    )
    def test_every_exception_refines_a_builtin(self, exc: type[BaseException]) -> None:
        """Each concrete error also subclasses the builtin it refines."""

        assert issubclass(exc, (TypeError, ValueError, KeyError))


class TestImportCost:
    def test_emitting_loads_no_codec(self) -> None:
        """A fresh interpreter that imports the package and emits to a subscriber loads no cattrs;
        the first codec name it asks for loads it."""
        code = (
            "import json, sys, runtime_telemetry as rt\n"
            "from runtime_telemetry.events import LearningModuleStep\n"
            "class Sink(rt.Subscriber):\n"
            "    got = []\n"
            "    def on_event(self, schema): self.got.append(schema)\n"
            "Sink().subscribe()\n"
            "rt.get_telemetry('rt.cost').emit(LearningModuleStep(lm_id='lm_0', step=1, possible_matches=('mug',)))\n"
            "before = 'cattrs' in sys.modules\n"
            "rt.to_dict\n"
            "print(json.dumps([len(Sink.got), before, 'cattrs' in sys.modules]))\n"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
        )

        assert [1, False, True] == json.loads(out.stdout)
