"""`SweepDashboard`: the workshop view of the cost multiplier. Two sliders — how many sub-agents,
how slow the model is — and a mode; moving one re-runs the contract-review hierarchy on scripted
models (offline, in well under a second) and redraws the multiplier and the timeline.

Sizes do not depend on latency, so the multiplier curve is measured once per mode (k = 0 … max)
and the latency slider only re-runs the one hierarchy drawn on the timeline. Figures are sent as
PNG `Image` widgets: no dependence on the notebook's matplotlib backend.
"""

from __future__ import annotations

import base64
import html
import io
from typing import TYPE_CHECKING, Any, cast

import ipywidgets as widgets

from ..words import plural
from ._snapshot import Snapshotted

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

    from ..measure.scenarios import CostMode
    from ..runtime import RunResult


class SweepDashboard(Snapshotted, widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """``SweepDashboard(max_k=6)``: sliders for sub-agents and latency, the multiplier against
    the single-agent baseline, and the timeline of the selected run."""

    def __init__(
        self, *, k: int = 3, max_k: int = 6, latency: float = 0.1, mode: str = "inline"
    ) -> None:
        from ..measure.scenarios import COST_MODES

        self.k = widgets.IntSlider(
            value=k, min=1, max=max_k, description="sub-agents", continuous_update=False
        )
        self.latency = widgets.FloatSlider(
            value=latency,
            min=0.0,
            max=1.0,
            step=0.05,
            description="latency (s)",
            continuous_update=False,
        )
        self.mode = widgets.Dropdown(options=list(COST_MODES), value=mode, description="clause")
        self.summary = widgets.HTML()
        # One under the other, each at its own size: side by side they would be scaled down.
        self.multiplier_image = widgets.Image(format="png")
        self.timeline_image = widgets.Image(format="png")
        self._sizes: dict[str, pd.DataFrame] = {}
        self.last_run: RunResult | None = None
        super().__init__(
            [
                widgets.HBox([self.k, self.latency, self.mode]),
                self.summary,
                self.multiplier_image,
                self.timeline_image,
            ]
        )
        self.add_class("agentnb-dashboard")
        for control in (self.k, self.latency, self.mode):
            control.observe(self._changed, names="value")
        self.update()

    def _changed(self, change: dict[str, Any]) -> None:
        self.update()

    def sizes(self, mode: str) -> pd.DataFrame:
        """Characters sent for k = 0 … max and the multiplier over k = 0 (measured once per mode)."""
        if mode not in self._sizes:
            import pandas as pd

            from ..measure.scenarios import review_hierarchy
            from ..runtime import run_sync

            sent = [
                run_sync(review_hierarchy(k, _mode(mode))).chars_in for k in range(self.k.max + 1)
            ]
            table = pd.DataFrame({"k": range(len(sent)), "chars_in": sent})
            table["multiplier"] = table["chars_in"] / sent[0]
            table.attrs["params"] = []
            self._sizes[mode] = table
        return self._sizes[mode]

    def update(self) -> None:
        """Re-run for the sliders' values and redraw (what moving a slider does)."""
        from ..measure import plot
        from ..measure.scenarios import review_hierarchy
        from ..runtime import run_sync

        k, mode, latency = self.k.value, self.mode.value, self.latency.value
        table = self.sizes(mode)
        self.last_run = run_sync(review_hierarchy(k, _mode(mode), latency))
        figure = plot.multiplier(table[table["k"] >= 1], title=f"Characters sent ({mode})")
        figure.axes[0].plot(
            [k],
            [table["multiplier"][k]],
            "o",
            markersize=12,
            fillstyle="none",
            color="black",
            gid="selected",
        )
        self.multiplier_image.value = _png(figure)
        self.timeline_image.value = _png(
            plot.timeline(self.last_run, labels=[f"k={k}, {latency:g} s"])
        )
        self.summary.value = (
            f"<b>{plural(k, 'sub-agent')}</b> ({mode}): {self.last_run.chars_in:,} characters sent, "
            f"<b>{table['multiplier'][k]:.2f}×</b> the single agent's {table['chars_in'][0]:,}."
        )
        self.refresh_snapshot()

    def snapshot_html(self) -> str:
        """The settings, the summary and both figures as they stand, as static HTML."""
        settings = (
            f"sub-agents {self.k.value} · latency {self.latency.value:g} s · "
            f"clause {html.escape(str(self.mode.value))}"
        )
        images = "".join(
            f'<div><img alt="{alt}" src="data:image/png;base64,'
            f'{base64.b64encode(image.value).decode()}"></div>'
            for alt, image in (
                ("characters sent against the single agent", self.multiplier_image),
                ("timeline of the selected run", self.timeline_image),
            )
            if image.value
        )
        return (
            f'<div class="agentnb-dashboard"><div>{settings}</div>'
            f"<div>{self.summary.value}</div>{images}</div>"
        )

    def __repr__(self) -> str:
        return "SweepDashboard()"


def _mode(value: str) -> CostMode:
    return cast("CostMode", value)  # the Dropdown only offers COST_MODES


def _png(figure: Figure) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100)
    return buffer.getvalue()
