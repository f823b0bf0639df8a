"""The README's demo: a simulated sensorimotor runtime driven by an ``Experiment``.

``demo.runtime`` (with ``demo.world`` and ``demo.episode``) imports only ``runtime_telemetry``
(it stands for the runtime side); ``demo.experiment`` is the experiment side that scores it.
"""

from __future__ import annotations

__all__: list[str] = []
