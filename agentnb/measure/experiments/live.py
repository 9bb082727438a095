"""The live view of an experiment in a notebook: each configuration's interval, narrowing as
trials end.

Beside the progress bar, a table of `agentnb.measure.stats.interval` per configuration (of the
score, or of the model calls when there is no score) is redrawn at most once a second from the
runs that ended in this session, and once more at the end. Runs skipped because they were
stored already are not in it: it shows what this session adds; `Experiment.summary` has all.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..stats import interval

EVERY_S = 1.0


class LiveSummary:
    """A table redrawn in place through ``show(frame)`` (IPython's display handle by default)."""

    def __init__(
        self, params: list[str], metric: str, show: Callable[[Any], None] | None = None
    ) -> None:
        self.params = params
        self.metric = metric
        self.values: dict[tuple[Any, ...], list[Any]] = {}
        self._show = show if show is not None else _display_handle()
        self._last = 0.0

    def add(self, config: dict[str, Any], value: Any) -> None:
        """One ended run's value (None: no value, e.g. a failed score)."""
        key = tuple(config.get(p) for p in self.params)
        found = self.values.setdefault(key, [])
        if value is not None:
            found.append(value)
        if time.monotonic() - self._last >= EVERY_S:
            self.draw()

    def draw(self) -> None:
        import pandas as pd

        self._last = time.monotonic()
        rows = []
        for key, values in self.values.items():
            found = interval(values)
            rows.append(
                {
                    **dict(zip(self.params, key)),
                    "n": found.n,
                    "mean": found.mean,
                    "ci_low": found.low,
                    "ci_high": found.high,
                    "method": found.method,
                }
            )
        frame = pd.DataFrame(
            rows, columns=[*self.params, "n", "mean", "ci_low", "ci_high", "method"]
        )
        frame.attrs["metric"] = self.metric
        self._show(frame)


def _display_handle() -> Callable[[Any], None]:
    from IPython.display import display

    handle: list[Any] = []

    def show(frame: Any) -> None:
        if handle:
            handle[0].update(frame)
        else:
            handle.append(display(frame, display_id=True))  # type: ignore[no-untyped-call]

    return show
