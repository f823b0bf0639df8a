"""What the demo's simulated world is made of: the objects it shows and the modules that look.

Plain frozen data, apart from the simulation that uses it (``runtime.py``), so an experiment
can name objects and modules without touching the simulation's state.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["LIBRARY", "LearningModuleSpec", "ObjectModel", "default_modules"]


@dataclass(frozen=True)
class ObjectModel:
    """An object the simulated world can show: surface features and rotational symmetry."""

    name: str
    features: tuple[str, ...]
    symmetry: int = 1
    """n-fold symmetry about the object's z axis (1: none)."""


LIBRARY: tuple[ObjectModel, ...] = (
    ObjectModel("mug", ("handle", "glaze", "rim", "curved_wall", "flat_base", "lip")),
    ObjectModel("handle", ("handle", "glaze")),
    ObjectModel("bowl", ("rim", "curved_wall", "glaze", "foot", "flat_base"), symmetry=6),
    ObjectModel("can", ("rim", "cylinder_wall", "label", "seam", "flat_base"), symmetry=8),
    ObjectModel("spoon", ("handle", "scoop", "edge", "glint")),
    ObjectModel("dice", ("corner", "edge", "flat_face", "pip"), symmetry=4),
)
"""The demo's object library (the handle is the mug's part: a consistent child)."""


@dataclass(frozen=True)
class LearningModuleSpec:
    """How one simulated learning module senses and decides."""

    lm_id: str
    sensor_id: str
    evidence: bool = True
    """Evidence-based modules report a most-likely hypothesis every step."""
    view: int = 0
    """Features its patch can reach per episode (0: all of the object's)."""
    miss_rate: float = 0.06
    """Chance per episode that the patch never lands on the object."""
    off_rate: float = 0.15
    """Chance per step of an off-object observation."""
    noise: float = 0.02
    """Chance per step of observing a feature of another object."""
    pose_steps: int = 3
    """On-object steps with one match left before the pose resolves (x2 if symmetric)."""


def default_modules() -> tuple[LearningModuleSpec, ...]:
    """Four modules: evidence/graph-only, each with a wide and a narrow patch."""
    return (
        LearningModuleSpec("lm_0", "patch_0", evidence=True),
        LearningModuleSpec("lm_1", "patch_1", evidence=True, view=2),
        LearningModuleSpec("lm_2", "patch_2", evidence=False),
        LearningModuleSpec("lm_3", "patch_3", evidence=False, view=3, pose_steps=4),
    )
