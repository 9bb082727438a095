"""End to end in a real browser: a notebook that uses ``%load_ext agentnb``, ``%%agent``,
``%%agent_run`` and a widget is served by Voilà on 127.0.0.1 and opened in headless Chromium
(Debian's, driven by Playwright). It passes only if the kernel ran the magics, the widgets
rendered in the page and the run's answer appeared.

Skips only when no Chromium binary exists (``.ci/run`` installs Debian's ``chromium``).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from notebook_support import jupyter_env

NOTEBOOK = Path(__file__).parent / "browser" / "widgets_demo.ipynb"
ANSWER = "Verdict: approved after legal review"
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
            pytest.fail(f"voila exited with {proc.returncode}:\n{log.read_text()[-3000:]}")
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    pytest.fail(
        f"voila did not listen on port {port} within {timeout:g} s:\n{log.read_text()[-3000:]}"
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
            ],  # fmt: skip
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        _wait_for_port(port, proc, log, timeout=30)
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
            page.goto(voila_url, timeout=45_000)
            # The live monitor of %%agent_run, in its final state.
            monitor = page.locator(".agentnb-monitor")
            monitor.wait_for(timeout=30_000)
            page.wait_for_function(
                "() => document.querySelector('.agentnb-monitor')?.innerText.includes('ok')",
                timeout=15_000,
            )
            text = monitor.inner_text()
            assert "boss" in text and "legal" in text and "chars sent" in text
            # The trace explorer: a select widget listing the spans.
            explorer = page.locator(".agentnb-explorer")
            explorer.wait_for(timeout=15_000)
            assert page.locator(".agentnb-explorer .widget-select").count() == 1
            listed = explorer.inner_text().replace("\xa0", " ")  # the Select keeps spaces as NBSP
            assert "agent boss" in listed and "tool legal" in listed
            assert "tool schemas" in listed  # the detail pane of the selected span
            # The run's answer, in the result's HTML, and the one-line summary of %%agent.
            page.get_by_text(ANSWER).first.wait_for(timeout=15_000)
            assert page.locator(".agentnb-result").count() == 1
            assert page.get_by_text("Agent 'boss' · model scripted · tools: legal").count() == 1
            assert page.locator(".jupyter-widgets").count() >= 2
            if os.environ.get("AGENTNB_BROWSER_SCREENSHOT"):
                page.screenshot(path=os.environ["AGENTNB_BROWSER_SCREENSHOT"], full_page=True)
        finally:
            browser.close()
