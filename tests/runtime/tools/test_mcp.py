"""Tools from MCP servers, against real servers started on this machine: one written with the
SDK's server API (notebooks/recordings/mcp_server.py, which notebook 15 starts too, over
stdio and streamable HTTP) and the reference
filesystem server from npm (where node and the package are present)."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason='the MCP tests need the mcp SDK: pip install -e ".[mcp]"')

import agentnb  # noqa: E402
from agentnb import Agent, ScriptedModel, ToolGuardrail, reject_all, say, tool_call  # noqa: E402
from agentnb.errors import RunTimeout, ToolFailed, UserError  # noqa: E402
from agentnb.trace.tokens import tokenizer  # noqa: E402

SERVER = str(Path(__file__).resolve().parents[3] / "notebooks" / "recordings" / "mcp_server.py")
SDK_TOOLS = {"add", "read_note", "sleep", "crash", "has_env", "fail"}
"""The tools of ``SERVER --faults``: its two, and those that misbehave."""


def stdio(*extra: str, **options):
    options.setdefault("timeout", 20)
    return agentnb.mcp.stdio(sys.executable, [SERVER, "--faults", *extra], name="test", **options)


def tool_results(result) -> list[str]:
    return [m.content for m in result.messages if m.role == "tool"]


def test_an_agent_is_offered_the_servers_tools_and_calls_them():
    model = ScriptedModel([tool_call("add", a=2, b=3), say("5")])
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[stdio()]), "2+3?")
    assert result.ok, result.error
    sent = model.requests[0]
    assert {t.name for t in sent.tools} == SDK_TOOLS
    add = next(t for t in sent.tools if t.name == "add")
    assert add.description == "Add two integers."
    assert add.parameters["required"] == ["a", "b"]
    assert model.requests[1].tool_results == ["5"]  # the server's answer, read by the model
    span = next(s for s in result.spans if s.kind == "tool_call")
    assert (span.name, span.status) == ("add", "ok")


def test_an_answer_is_read_when_it_comes_not_when_the_timeouts_end():
    # Each wait races the answer against the server's exit: it must end at the first of them
    # (asyncio.wait's default waits for both, so every wait lasted its whole timeout).
    server = stdio(timeout=3600, connect_timeout=3600)
    model = ScriptedModel([tool_call("add", a=1, b=2), say("3")])
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[server]), "go", timeout=240)
    assert result.ok, result.error  # not a RunTimeout after 240 s of waiting for nothing
    assert model.requests[1].tool_results == ["3"]


def test_allowed_tools_leaves_the_others_out_of_every_request():
    model = ScriptedModel([tool_call("crash"), say("no")])
    server = stdio(allowed_tools=["add"])
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[server]), "go")
    assert [t.name for t in model.requests[0].tools] == ["add"]
    # a tool left out is not callable either: the model is told it does not exist
    assert tool_results(result) == ["ERROR: there is no tool named 'crash'. Available tools: add."]


def test_tools_are_listed_once_and_kept_until_refresh():
    server = stdio()
    agent = Agent("calc", model=ScriptedModel([say("a"), say("b"), say("c")]), mcp_servers=[server])
    assert agentnb.run_sync(agent, "one").ok
    # the list is kept on the server: a later run does not start it (it could not: no command)
    server.command = "/nonexistent/mcp-server"
    second = agentnb.run_sync(agent, "two")
    assert second.ok, second.error
    assert {t.name for t in agent.model.requests[1].tools} == SDK_TOOLS
    server.refresh()
    third = agentnb.run_sync(agent, "three")
    assert not third.ok and isinstance(third.error, ToolFailed)
    assert "MCP server 'test'" in str(third.error) and "could not be listed" in str(third.error)


def test_a_hung_call_is_a_timeout_the_model_reads_and_the_run_goes_on():
    model = ScriptedModel([tool_call("sleep", seconds=60), say("gave up")])
    server = stdio(timeout=2)
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[server]), "go")
    assert result.ok and result.output == "gave up"
    assert tool_results(result) == [
        "ERROR: sleep failed: MCP server 'test' did not answer within 2 s"
    ]
    span = next(s for s in result.spans if s.kind == "tool_call")
    assert span.status == "timeout"


def test_a_server_that_dies_mid_call_is_an_error_then_every_call_says_so():
    model = ScriptedModel([tool_call("crash"), tool_call("add", a=1, b=1), say("it died")])
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[stdio()]), "go")
    assert result.ok and result.output == "it died"
    first, second = tool_results(result)
    assert first.startswith("ERROR: crash failed:") and second.startswith("ERROR: add failed:")
    assert [s.status for s in result.spans if s.kind == "tool_call"] == ["error", "error"]


def test_a_tool_error_on_the_server_is_an_error_result():
    model = ScriptedModel([tool_call("fail", why="no disk"), say("ok")])
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[stdio()]), "go")
    (text,) = tool_results(result)
    # the SDK's server hides the exception's text; agentnb marks the result an error
    assert text == "ERROR: fail failed: Error executing tool fail"
    assert next(s for s in result.spans if s.kind == "tool_call").status == "error"


@pytest.mark.parametrize(
    ("server", "said"),
    [
        (agentnb.mcp.stdio("/nonexistent/mcp-server", name="gone"), "could not be started"),
        (
            agentnb.mcp.stdio(sys.executable, [SERVER, "--hang"], name="gone", connect_timeout=1),
            "did not start within 1 s",
        ),
        (agentnb.mcp.stdio(sys.executable, ["-c", "pass"], name="gone"), "could not be started"),
    ],
    ids=["no-such-command", "hangs-at-start", "exits-at-once"],
)
def test_a_server_that_cannot_list_its_tools_ends_the_run_with_tool_failed(server, said):
    model = ScriptedModel([say("never")])
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[server]), "go")
    assert not result.ok and isinstance(result.error, ToolFailed)
    assert said in str(result.error) and "MCP server 'gone'" in str(result.error)
    assert model.requests == []  # no model call was made with a tool list missing a server


def test_the_runs_timeout_bounds_a_call_to_a_server():
    model = ScriptedModel([tool_call("sleep", seconds=60), say("never")])
    result = agentnb.run_sync(
        Agent("calc", model=model, mcp_servers=[stdio(timeout=120)]), "go", timeout=3
    )
    assert not result.ok and isinstance(result.error, RunTimeout)


def test_mcp_tools_take_approval_like_any_tool():
    seen = []

    def approver(pending):
        seen.append((pending.tool, pending.arguments))
        return reject_all(pending)

    model = ScriptedModel([tool_call("add", a=1, b=2), say("refused")])
    server = stdio(needs_approval=True)
    result = agentnb.run_sync(
        Agent("calc", model=model, mcp_servers=[server]), "go", approver=approver
    )
    assert seen == [("add", {"a": 1, "b": 2})]
    (text,) = tool_results(result)
    assert "reject" in text and "3" not in text
    assert [(r.tool, r.decision) for r in result.approvals] == [("add", "rejected")]


def test_mcp_tools_take_tool_guardrails_and_hooks():
    def no_big_numbers(ctx, tool_name, arguments):
        if arguments.get("a", 0) > 100:
            return ToolGuardrail.reject("numbers over 100 are not allowed")
        return ToolGuardrail.allow()

    started = []

    class Watch(agentnb.Hooks):
        async def on_tool_start(self, ctx, agent, tool_name, arguments):
            started.append((tool_name, json.loads(arguments)["a"]))

    model = ScriptedModel([tool_call("add", a=500, b=1), tool_call("add", a=5, b=1), say("6")])
    server = stdio(input_guardrails=[no_big_numbers])
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[server]), "go", hooks=Watch())
    assert tool_results(result) == ["numbers over 100 are not allowed", "6"]
    assert started == [("add", 500), ("add", 5)]


def test_a_name_taken_by_another_tool_fails_and_prefix_resolves_it():
    def add(a: int, b: int) -> int:
        """Subtract, under a taken name."""
        return a - b

    taken = Agent("calc", model=ScriptedModel([say("x")]), tools=[add], mcp_servers=[stdio()])
    result = agentnb.run_sync(taken, "go")
    assert isinstance(result.error, ToolFailed) and "prefix=" in str(result.error)
    model = ScriptedModel([tool_call("srv_add", a=2, b=2), say("4")])
    agent = Agent("calc", model=model, tools=[add], mcp_servers=[stdio(prefix="srv_")])
    result = agentnb.run_sync(agent, "go")
    assert "add" in {t.name for t in model.requests[0].tools}
    assert tool_results(result) == ["4"]


def test_the_servers_environment_is_its_own_and_secrets_never_show(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret-value")
    model = ScriptedModel(
        [tool_call("has_env", name="OPENAI_API_KEY"), tool_call("has_env", name="TOKEN"), say("k")]
    )
    server = stdio(env={"TOKEN": "s3cret-token-value"})
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[server]), "go")
    assert tool_results(result) == ["absent", "present, 18 characters"]
    shown = repr(server) + repr(result) + "\n".join(result.log_lines())
    assert "TOKEN" in repr(server) and "s3cret" not in shown and "sk-parent" not in shown


def test_spans_record_what_each_servers_tool_specs_weigh():
    from agentnb.models.canonical import dumps, tool_payload

    def words(text: str) -> int:
        return len(text.split())

    model = ScriptedModel([say("hi")])
    agentnb.set_tokenizer(words, method="words")
    try:
        result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[stdio()]), "go")
        tokens_in = result.calls["tokens_in"].iloc[0]
    finally:
        agentnb.set_tokenizer(None)
    agent_span = next(s for s in result.spans if s.kind == "agent")
    weights = agent_span.attrs["tool_sources"]
    sent = model.requests[0]
    expected = sum(len(dumps(tool_payload(t))) for t in sent.tools)
    tokens = sum(words(dumps(t.as_dict())) for t in sent.tools)
    assert weights == {
        "mcp:test": {
            "tools": len(SDK_TOOLS),
            "chars": expected,
            "tokens": tokens,
            "tokens_method": "words",
        }
    }
    assert result.calls["chars_in_tools"].iloc[0] == expected
    # the specs' part of the call's tokens_in: the rest is the system prompt and the messages
    rest = words(sent.system or "") + sum(words(m.content or "") for m in sent.messages)
    assert tokens <= tokens_in and tokens_in - tokens <= rest + 10 * len(sent.messages)


def test_the_tool_sources_table_says_what_each_server_adds_to_every_call():
    from agentnb.models.canonical import dumps, tool_payload

    small = stdio(allowed_tools=["add"])
    padded = agentnb.mcp.stdio(sys.executable, [SERVER, "--tools", "4"], name="padded", prefix="p_")
    model = ScriptedModel([tool_call("add", a=1, b=1), say("2")])
    agent = Agent("calc", model=model, mcp_servers=[small, padded])
    result = agentnb.run_sync(agent, "go")
    assert result.ok, result.error
    table = agentnb.tool_sources(result).set_index("source")
    sent = {t.name: len(dumps(tool_payload(t))) for t in model.requests[0].tools}
    assert table.loc["mcp:test", "tools"] == 1 and table.loc["mcp:padded", "tools"] == 6
    assert table.loc["mcp:test", "chars_per_call"] == sent["add"]
    assert table.loc["mcp:padded", "chars"] == 2 * (sum(sent.values()) - sent["add"])
    assert list(table["calls"]) == [2, 2]
    chars_in = result.calls["chars_in"].sum()
    assert table["share_of_chars_in"].sum() == pytest.approx(2 * sum(sent.values()) / chars_in)
    # tokens by the tokenizer that counted the calls' tokens_in, labelled as they are
    count, method = tokenizer(model)
    if count is None:
        assert table["tokens"].isna().all() and set(table["tokens_method"]) == {method}
        return
    specs = {t.name: count(dumps(t.as_dict())) for t in model.requests[0].tools}
    assert table.loc["mcp:test", "tokens_per_call"] == specs["add"]
    assert table.loc["mcp:padded", "tokens"] == 2 * (sum(specs.values()) - specs["add"])
    assert set(table["tokens_method"]) == set(result.calls["tokens_method"]) == {method}
    tokens_in = result.calls["tokens_in"].sum()
    assert table["share_of_tokens_in"].sum() == pytest.approx(2 * sum(specs.values()) / tokens_in)


def test_without_a_tokenizer_the_tool_sources_table_keeps_characters_and_says_why():
    agentnb.set_tokenizer("off")
    try:
        result = agentnb.run_sync(
            Agent("calc", model=ScriptedModel([say("hi")]), mcp_servers=[stdio()]), "go"
        )
    finally:
        agentnb.set_tokenizer(None)
    row = agentnb.tool_sources(result).iloc[0]
    assert row["chars_per_call"] > 0 and row["calls"] == 1
    assert row["tokens"] is None and row["tokens_per_call"] is None
    assert row["tokens_method"] == "unavailable"


def test_building_a_server_checks_its_options_and_import_agentnb_never_loads_mcp(monkeypatch):
    with pytest.raises(UserError, match="Unknown MCP server option"):
        agentnb.mcp.stdio("python", timout=3)
    with pytest.raises(UserError, match="http:// or https://"):
        agentnb.mcp.http("127.0.0.1:8000/mcp")
    with pytest.raises(UserError, match="mcp_servers"):
        Agent("a", mcp_servers=["python server.py"])
    code = "import sys, agentnb; print('mcp' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == "False", out.stderr
    monkeypatch.setitem(sys.modules, "mcp", None)  # as if it were not installed
    with pytest.raises(UserError, match=r'pip install -e "\.\[mcp\]"'):
        agentnb.mcp.stdio("python", ["server.py"])


# -- streamable HTTP


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture
def http_server():
    port = _free_port()
    process = subprocess.Popen(
        [sys.executable, SERVER, "--faults", "http", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as s:
                if s.connect_ex(("127.0.0.1", port)) == 0:
                    break
            assert process.poll() is None, "the HTTP MCP server exited"
            time.sleep(0.1)
        else:
            pytest.fail("the HTTP MCP server did not listen within 60 s")
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_server_over_streamable_http_with_headers(http_server):
    server = agentnb.mcp.http(http_server, headers={"Authorization": "Bearer hdr-secret"})
    assert server.name.startswith("127.0.0.1:") and "hdr-secret" not in repr(server)
    model = ScriptedModel([tool_call("add", a=20, b=22), say("42")])
    result = agentnb.run_sync(Agent("calc", model=model, mcp_servers=[server]), "go")
    assert result.ok, result.error
    assert model.requests[1].tool_results == ["42"]
    assert "hdr-secret" not in "\n".join(result.log_lines())


def test_an_http_server_that_is_not_there_ends_the_run_with_tool_failed():
    server = agentnb.mcp.http(f"http://127.0.0.1:{_free_port()}/mcp", connect_timeout=10)
    result = agentnb.run_sync(
        Agent("calc", model=ScriptedModel([say("x")]), mcp_servers=[server]), "go"
    )
    assert isinstance(result.error, ToolFailed), result.error


# -- the reference filesystem server (npm)


def _filesystem_server() -> str:
    script = os.environ.get("AGENTNB_MCP_FILESYSTEM", "")
    if not shutil_which("node"):
        pytest.skip("node is not installed: the npm filesystem MCP server cannot run")
    if not script or not Path(script).is_file():
        pytest.skip(
            "@modelcontextprotocol/server-filesystem is not installed: npm install --prefix DIR "
            "@modelcontextprotocol/server-filesystem and set AGENTNB_MCP_FILESYSTEM to its "
            "dist/index.js (.ci/run does)"
        )
    return script


def shutil_which(name: str) -> str | None:
    import shutil

    return shutil.which(name)


def test_the_reference_filesystem_server_reads_a_real_file(tmp_path):
    script = _filesystem_server()
    (tmp_path / "notes.txt").write_text("the meeting is on Tuesday")
    server = agentnb.mcp.stdio("node", [script, str(tmp_path)], name="filesystem")
    model = ScriptedModel(
        [tool_call("read_text_file", path=str(tmp_path / "notes.txt")), say("Tuesday")]
    )
    result = agentnb.run_sync(Agent("reader", model=model, mcp_servers=[server]), "when?")
    assert result.ok, result.error
    offered = {t.name for t in model.requests[0].tools}
    assert {"read_text_file", "list_directory", "write_file"} <= offered
    assert model.requests[1].tool_results == ["the meeting is on Tuesday"]
    weights = next(s for s in result.spans if s.kind == "agent").attrs["tool_sources"]
    assert weights["mcp:filesystem"]["tools"] == len(offered)
    assert weights["mcp:filesystem"]["chars"] > 2000  # its specs are heavy: the point measured
    json.dumps(weights)
