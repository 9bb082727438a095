"""The layers of docs/architecture.md hold: lower layers render and run without loading the notebook layer."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import asyncio, sys
    import agentnb
    from agentnb import Agent, ScriptedModel, parallel, say

    result = agentnb.run_sync(Agent("a", "Answer.", model=ScriptedModel([say("hi")])), "q")
    html = result._repr_html_()
    fan = asyncio.run(parallel([Agent("b", "B.", model=ScriptedModel([say("x")]))], "q"))
    fan_html = fan._repr_html_()
    assert "hi" in html and "agentnb-result" in fan_html, (html, fan_html)
    loaded = sorted(
        m for m in sys.modules
        if m.split(".")[0] in ("IPython", "ipywidgets", "ipykernel")
        or m.startswith("agentnb.notebook")
    )
    print(",".join(loaded))
    """
)


def test_a_result_renders_as_html_without_loading_ipython_or_the_notebook_layer() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
