"""Performance decorators: timeit logs durations, trace_on_error logs tracebacks."""

from __future__ import annotations

import goggles_io as gg

gg.attach(gg.ConsoleHandler(name="examples.decorators.console", level=gg.DEBUG, show_caller=True))


class Trainer:
    @gg.timeit(severity=gg.INFO)
    def train_step(self, batch: dict[str, list[int]]) -> dict[str, float]:
        return {"loss": 0.1 * sum(batch["x"])}

    @gg.trace_on_error()
    def risky_operation(self, data: int) -> float:
        return data / 0  # logs the full traceback and the arguments, then re-raises


trainer = Trainer()
trainer.train_step({"x": [1, 2, 3]})

try:
    trainer.risky_operation(10)
except ZeroDivisionError:
    pass  # the traceback was already logged

gg.finish()
