"""A figure returned by ``agentnb.plot.*`` shows as an image in IPython, without pyplot."""

from __future__ import annotations

from IPython.core.interactiveshell import InteractiveShell
from matplotlib.figure import Figure
from traitlets.config import Config

import agentnb
from agentnb.measure.plot import show_in_ipython


async def test_a_figure_made_without_pyplot_gets_a_png_formatter():
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    shell = InteractiveShell.instance(config=config)
    png = shell.display_formatter.formatters["image/png"]
    png.type_printers.pop(Figure, None)  # as in a fresh kernel: pyplot never imported
    assert "image/png" not in shell.display_formatter.format(Figure())[0]

    result = await agentnb.run(agentnb.Agent("a", "x", agentnb.ScriptedModel(["hi"])), "go")
    fig = agentnb.plot.timeline(result)  # any agentnb figure registers the formatter
    data, _ = shell.display_formatter.format(fig)

    assert data["image/png"][:4] == b"\x89PNG"
    kept = png.type_printers[Figure]
    show_in_ipython(shell)  # an existing formatter (e.g. the inline backend's) is left alone
    assert png.type_printers[Figure] is kept
