"""Widgets whose saved output shows their final state without a kernel.

A widget's output is a view of a model that lives in the kernel: a saved notebook, nbviewer,
GitHub and a docs site have no kernel, and show the widget's ``text/plain`` repr at best. So
each agentnb widget puts a static ``text/html`` snapshot of its state in the same output, beside
the widget view. A front end with the widget manager shows the live widget; every other one
shows the snapshot. The widget keeps a display handle for each place it is shown and replaces
the snapshot when its state changes (a run finishes, a slider moves), so what is saved is the
final state.

nbval compares a cell's first ``display_data``, taken before the updates arrive; the saved
notebook holds the final one. `agentnb.trace.render.SNAPSHOT_REGEX` (a rule of
``notebooks/nbval_sanitize.cfg``) reduces every snapshot to its marker, as nbval already ignores
the widget view itself.
"""

from __future__ import annotations

from typing import Any

START = "<!-- agentnb snapshot -->"
END = "<!-- /agentnb snapshot -->"


def wrap(body: str) -> str:
    """The snapshot's HTML between its markers, in a box that says it is a saved view."""
    return (
        f'{START}<div class="agentnb-snapshot" title="saved view of a widget: run the cell '
        f'for the live one">{body}</div>{END}'
    )


class Snapshotted:
    """Mixin for an ipywidgets widget class (listed first among its bases): its outputs carry
    ``text/html`` from `snapshot_html` beside the widget view."""

    def snapshot_html(self) -> str:
        """The widget's current state as static HTML (no script, no widget)."""
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any] | None:
        data: dict[str, Any] | None = super()._repr_mimebundle_(**kwargs)  # type: ignore[misc]
        if data is not None:
            data["text/html"] = wrap(self.snapshot_html())
        return data

    def _ipython_display_(self) -> None:
        """Shown with a display id (by ``display(w)`` or as a cell's value), so that
        `refresh_snapshot` can replace the output's snapshot later."""
        from IPython.display import display

        data = self._repr_mimebundle_()
        if data is None:
            return
        handle = display(data, raw=True, display_id=True)  # type: ignore[no-untyped-call]
        if handle is not None:
            self.__dict__.setdefault("_agentnb_displays", []).append(handle)

    def refresh_snapshot(self) -> None:
        """Replace the snapshot in every output showing this widget by its current state."""
        handles = self.__dict__.get("_agentnb_displays", [])
        if not handles:
            return
        data = self._repr_mimebundle_()
        for handle in handles:
            handle.update(data, raw=True)
