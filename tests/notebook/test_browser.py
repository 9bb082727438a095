"""End to end in a real browser: a notebook that uses ``%load_ext agentnb``, ``%%agent``,
``%%agent_run`` and a widget is served by Voilà on 127.0.0.1 and opened in headless Chromium
(Debian's, driven by Playwright). It passes only if the kernel ran the magics, the widgets
rendered in the page and the run's answer appeared. Then notebooks 01 and 04 are run cell by
cell in JupyterLab: no output may be an error, the widgets must render as widgets, the figures
at their own size; screenshots of the figures and widgets are written to
``$AGENTNB_BROWSER_SCREENSHOT_DIR`` when it is set (to look at them), else to the test's tmp dir.

Skips only when no Chromium binary exists (``.ci/run`` installs Debian's ``chromium``).
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from notebook_support import jupyter_env

NOTEBOOK = Path(__file__).parents[1] / "browser" / "widgets_demo.ipynb"
ANSWER = "Verdict: approved after legal review"
WAIT_S = 300
"""How long any one wait may last. Every wait is for a condition (a port listening, a kernel
idle, an element drawn), never a fixed sleep, and ends as soon as it holds: this bound only
says when to give up, generous so that the test passes on 2 cores busy with the whole suite."""
WAIT_MS = WAIT_S * 1000
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def _chromium() -> str | None:
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found:
            return found
    return "/usr/bin/chromium" if os.path.exists("/usr/bin/chromium") else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_for_port(port: int, proc: subprocess.Popen[bytes], log: Path, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the server exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    pytest.fail(
        f"the server did not listen on port {port} within {timeout:g} s:\n{log.read_text()[-3000:]}"
    )


@pytest.fixture
def voila_url(tmp_path: Path) -> Iterator[str]:
    """Voilà serving the demo notebook, with a kernel that is this interpreter (so it works in
    a brand-new venv with nothing registered), and every Jupyter directory in ``tmp_path``."""
    env = {**os.environ, **jupyter_env(tmp_path)}
    notebook = tmp_path / NOTEBOOK.name
    shutil.copy(NOTEBOOK, notebook)
    port = _free_port()
    log = tmp_path / "voila.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "voila",
                str(notebook),
                "--no-browser",
                f"--port={port}",
                "--Voila.ip=127.0.0.1",
                "--Voila.port_retries=0",
            ],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_port(port, proc, log, timeout=WAIT_S)
        yield f"http://127.0.0.1:{port}/"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def test_magics_and_widgets_render_in_a_real_browser(voila_url: str) -> None:
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium binary found (install Debian's `chromium`; .ci/run does)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=FLAGS)
        try:
            page = browser.new_page()
            page.goto(voila_url, timeout=WAIT_MS)
            # The live monitor of %%agent_run, in its final state.
            monitor = page.locator(".agentnb-monitor")
            monitor.wait_for(timeout=WAIT_MS)
            page.wait_for_function(
                "() => document.querySelector('.agentnb-monitor')?.innerText.includes('ok')",
                timeout=WAIT_MS,
            )
            text = monitor.inner_text()
            assert "boss" in text and "legal" in text and "chars sent" in text
            # The trace explorer: a select widget listing the spans.
            explorer = page.locator(".agentnb-explorer")
            explorer.wait_for(timeout=WAIT_MS)
            assert page.locator(".agentnb-explorer .widget-select").count() == 1
            listed = explorer.inner_text().replace("\xa0", " ")  # the Select keeps spaces as NBSP
            assert "agent boss" in listed and "tool legal" in listed
            assert "tool schemas" in listed  # the detail pane of the selected span
            # The run's answer, in the result's HTML, and the one-line summary of %%agent.
            page.get_by_text(ANSWER).first.wait_for(timeout=WAIT_MS)
            assert page.locator(".agentnb-result").count() == 1
            assert page.get_by_text("Agent 'boss' · model scripted · tools: legal").count() == 1
            assert page.locator(".jupyter-widgets").count() >= 2
            if os.environ.get("AGENTNB_BROWSER_SCREENSHOT"):
                page.screenshot(path=os.environ["AGENTNB_BROWSER_SCREENSHOT"], full_page=True)
        finally:
            browser.close()


# -- the teaching notebooks in JupyterLab ----------------------------------------------------

LAB_NOTEBOOKS = ("01_quickstart.ipynb", "04_cost_multipliers.ipynb")
NOTEBOOKS_DIR = Path(__file__).resolve().parents[2] / "notebooks"
QUICKSTART_ANSWER = (  # the reviewer's final reply in notebook 01, as its model streams it
    '{"verdict":"needs_changes","reason":"A promise of 100% availability is an obligation no '
    'supplier can keep.","quote":"guarantees 100% availability of the service"}'
)

KERNEL_IDLE = """() => {
  const panel = window.jupyterapp?.shell?.currentWidget;
  return panel?.sessionContext?.session?.kernel?.status === 'idle' && panel.content?.widgets?.length > 0;
}"""

ALL_RAN = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  const code = panel.content.widgets.filter(c => c.model.type === 'code');
  const kernel = panel.sessionContext.session.kernel;
  return kernel.status === 'idle' && code.every(c => c.model.executionCount !== null);
}"""

SEE_WIDGETS = """() => {
  // Which agentnb widgets were ever drawn, even one that a cell closes when it is done, and
  // each distinct text the monitor showed as a model's answer streamed in, in order.
  window.agentnbWidgetsSeen = new Set();
  window.agentnbStreamTexts = [];
  window.agentnbFinishedTexts = [];
  // Nodes removed before the observer ran (a monitor closed just after its last picture, on a
  // loaded machine) are read from the mutation records, so no picture goes unseen.
  const see = (root) => {
    for (const el of root.querySelectorAll('.jupyter-widgets')) {
      for (const name of el.classList) {
        if (name.startsWith('agentnb-')) window.agentnbWidgetsSeen.add(name);
      }
    }
    for (const el of root.querySelectorAll('.agentnb-monitor-text')) {
      const text = el.textContent;
      if (text && window.agentnbStreamTexts.at(-1) !== text) window.agentnbStreamTexts.push(text);
    }
    // The text beside every picture of the monitor that says the run is finished.
    for (const el of root.querySelectorAll('.agentnb-monitor')) {
      if (!el.textContent.includes('\u2714')) continue;
      const texts = [...el.querySelectorAll('.agentnb-monitor-text')].map(t => t.textContent);
      window.agentnbFinishedTexts.push(texts.join(' | '));
    }
  };
  new MutationObserver((records) => {
    for (const record of records) {
      for (const node of record.removedNodes) {
        if (node.nodeType !== Node.ELEMENT_NODE) continue;
        const holder = document.createElement('div');
        holder.appendChild(node.cloneNode(true));
        see(holder);
      }
    }
    see(document);
  }).observe(document.body, {subtree: true, childList: true, characterData: true});
}"""

OUTPUTS = """() => {
  const panel = window.jupyterapp.shell.currentWidget;
  return panel.content.widgets.filter(c => c.model.type === 'code').map(c => ({
    source: c.model.sharedModel.getSource().slice(0, 60),
    tags: c.model.getMetadata('tags') || [],
    outputs: c.model.outputs.toJSON(),
  }));
}"""


@pytest.fixture
def lab_url(tmp_path: Path) -> Iterator[str]:
    """JupyterLab serving copies of notebooks 01 and 04 from ``tmp_path`` (no token, on
    127.0.0.1), with a kernel that is this interpreter and every Jupyter directory in tmp_path;
    the app is exposed to the page (``window.jupyterapp``) so the test can run every cell."""
    env = {**os.environ, **jupyter_env(tmp_path)}
    root = tmp_path / "nb"
    root.mkdir()
    for name in LAB_NOTEBOOKS:
        shutil.copy(NOTEBOOKS_DIR / name, root / name)
    # Every cell rendered (no windowing, so the test can read any output) and no news prompt.
    settings = tmp_path / "config" / "lab" / "user-settings" / "@jupyterlab"
    for extension, plugin, values in (
        ("notebook-extension", "tracker", {"windowingMode": "none"}),
        ("apputils-extension", "notification", {"fetchNews": "false"}),
    ):
        (settings / extension).mkdir(parents=True, exist_ok=True)
        (settings / extension / f"{plugin}.jupyterlab-settings").write_text(json.dumps(values))
    port = _free_port()
    log = tmp_path / "lab.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "jupyterlab",
                "--no-browser",
                f"--port={port}",
                "--ServerApp.ip=127.0.0.1",
                "--ServerApp.port_retries=0",
                "--IdentityProvider.token=",
                "--ServerApp.password=",
                f"--ServerApp.root_dir={root}",
                "--LabApp.expose_app_in_browser=True",
                "--allow-root",  # CI runs as root
                "--LabApp.news_url=",
                "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
            ],
            cwd=root,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_port(port, proc, log, timeout=WAIT_S)
        yield f"http://127.0.0.1:{port}"
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _run_all(page: Any, url: str) -> list[dict[str, Any]]:
    """Open a notebook, clear its saved outputs, run every cell and wait for the last one."""
    page.goto(url, timeout=WAIT_MS)
    page.wait_for_function(KERNEL_IDLE, timeout=WAIT_MS)
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:clear-all-cell-outputs')")
    page.evaluate(SEE_WIDGETS)  # after the saved outputs are gone: only what this run draws
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")
    page.wait_for_function(ALL_RAN, timeout=2 * WAIT_MS, polling=500)
    return list(page.evaluate(OUTPUTS))


def _errors(cells: list[dict[str, Any]]) -> list[str]:
    """Error outputs, and stderr outside the cells that show an error on purpose."""
    found = []
    for cell in cells:
        for output in cell["outputs"]:
            if output["output_type"] == "error":
                found.append(f"{cell['source']!r}: {output['ename']}: {output['evalue']}")
            elif output.get("name") == "stderr" and "raises-exception" not in cell["tags"]:
                found.append(f"{cell['source']!r}: stderr {output['text'][:200]!r}")
    return found


def _shots(page: Any, selector: str, folder: Path, prefix: str) -> list[Path]:
    """A screenshot of each element matching ``selector``, as the reader sees it."""
    paths = []
    for n in range(page.locator(selector).count()):
        element = page.locator(selector).nth(n)
        element.scroll_into_view_if_needed()
        path = folder / f"{prefix}-{n + 1}.png"
        element.screenshot(path=str(path))
        paths.append(path)
    return paths


def test_notebooks_01_and_04_run_clean_in_jupyterlab(lab_url: str, tmp_path: Path) -> None:
    chromium = _chromium()
    if chromium is None:
        pytest.skip("no Chromium binary found (install Debian's `chromium`; .ci/run does)")
    from playwright.sync_api import sync_playwright

    wanted = os.environ.get("AGENTNB_BROWSER_SCREENSHOT_DIR")
    folder = Path(wanted) if wanted else tmp_path / "screenshots"
    folder.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=FLAGS)
        try:
            # 1300 px wide with the side bar closed: the notebook's outputs get about 900 px.
            page = browser.new_page(viewport={"width": 1300, "height": 950})
            cells = _run_all(page, f"{lab_url}/lab/tree/01_quickstart.ipynb?reset")
            assert _errors(cells) == []
            page.evaluate(
                "() => window.jupyterapp.commands.execute('application:toggle-left-area')"
            )
            # The live monitor rendered as a widget while the run streamed; the result then took
            # its place (a streamed %%agent_run closes the monitor).
            assert "agentnb-monitor" in page.evaluate("() => [...window.agentnbWidgetsSeen]")
            # The answer was written into the cell in pieces: the monitor showed it growing,
            # each text the start of the next, up to the whole answer.
            texts = page.evaluate("() => window.agentnbStreamTexts")
            assert len(texts) >= 2, texts
            assert texts[-1] == QUICKSTART_ANSWER, texts
            for earlier, later in zip(texts, texts[1:], strict=False):
                assert len(earlier) < len(later) and later.startswith(earlier), texts
            # Whenever the monitor said the run was finished, it showed the whole answer.
            finished = page.evaluate("() => window.agentnbFinishedTexts")
            assert all(text == QUICKSTART_ANSWER for text in finished), finished
            result = page.locator(".agentnb-result").first
            result.scroll_into_view_if_needed()
            assert "reviewer answered · 2 model calls" in result.inner_text()
            assert page.locator(".agentnb-snapshot").count() == 0  # the widget view is preferred
            assert "Error displaying widget" not in page.locator(".jp-Notebook").inner_text()
            assert cells[-1]["outputs"][0]["text"].startswith("Hint: ")  # the exercise, unset
            _shots(page, ".agentnb-result", folder, "01-result")
            page.screenshot(path=str(folder / "01-last-screen.png"))

            cells = _run_all(page, f"{lab_url}/lab/tree/04_cost_multipliers.ipynb?reset")
            assert _errors(cells) == []
            # Every figure agentnb drew, and the dashboard with its sliders and two figures.
            figures = page.locator(".jp-OutputArea-output[data-mime-type='image/png'] img")
            assert figures.count() == 2
            dashboard = page.locator(".jupyter-widgets.agentnb-dashboard")
            dashboard.wait_for(timeout=WAIT_MS)
            page.wait_for_function(
                "() => document.querySelectorAll('.agentnb-dashboard img').length === 2"
                " && [...document.querySelectorAll('.agentnb-dashboard img')]"
                ".every(i => i.naturalWidth > 0)",
                timeout=WAIT_MS,
            )
            assert dashboard.locator(".widget-slider").count() == 2
            assert "sub-agents" in dashboard.inner_text()
            assert "agentnb-dashboard" in page.evaluate("() => [...window.agentnbWidgetsSeen]")
            assert page.locator(".agentnb-snapshot").count() == 0
            for n in range(figures.count()):  # shown at their own size, not scaled down
                width = figures.nth(n).evaluate("img => [img.clientWidth, img.naturalWidth]")
                assert width[0] == width[1] <= 900, width
            assert cells[-1]["outputs"][0]["text"].startswith("Hint: ")
            _shots(page, ".jp-OutputArea-output[data-mime-type='image/png']", folder, "04-figure")
            _shots(page, ".jupyter-widgets.agentnb-dashboard", folder, "04-dashboard")
        finally:
            browser.close()
