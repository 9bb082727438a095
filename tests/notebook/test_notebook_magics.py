"""``%%agent`` and ``%%agent_run`` through a real IPython InteractiveShell (as jupysql tests
``%%sql``): valid cells bind and run agents; every bad input is a one-line UsageError."""

from __future__ import annotations

import json

import pytest
from IPython.core.error import UsageError
from IPython.core.interactiveshell import InteractiveShell
from IPython.utils.capture import capture_output
from pydantic import BaseModel
from traitlets.config import Config

import agentnb as a
from agentnb.notebook import AgentMagics, RunMonitor, agent_timeout


class Verdict(BaseModel):
    approved: bool


def lookup(clause: int) -> str:
    """Return the text of a clause."""
    return f"clause {clause}: pay on time"


@pytest.fixture(scope="module")
def shell() -> InteractiveShell:
    config = Config()
    config.HistoryManager.hist_file = ":memory:"
    ip = InteractiveShell.instance(config=config)
    ip.run_line_magic("load_ext", "agentnb")
    return ip


@pytest.fixture
def ip(shell: InteractiveShell):
    """The shell with a fresh namespace and default settings for each test."""
    before = set(shell.user_ns)
    magics = _magics(shell)
    shell.user_ns.update(
        Verdict=Verdict,
        lookup=lookup,
        not_a_model=42,
        legal_model=a.ScriptedModel([a.say("lawful")]),
        boss_model=a.ScriptedModel([a.tool_call("legal", input="check"), a.say("approved")]),
    )
    yield shell
    for name in set(shell.user_ns) - before:
        del shell.user_ns[name]
    magics.default_model, magics.live, magics.timeout = None, "auto", None


def _magics(shell: InteractiveShell) -> AgentMagics:
    return next(c for c in shell.configurables if isinstance(c, AgentMagics))


def cell(ip: InteractiveShell, magic: str, line: str, body: str):
    with capture_output() as captured:
        ip.run_cell_magic(magic, line, body)
    return captured


# -- loading ------------------------------------------------------------------------------------


def test_loading_twice_or_reloading_registers_the_magics_once(ip):
    magics = _magics(ip)
    ip.run_line_magic("load_ext", "agentnb")
    ip.run_line_magic("reload_ext", "agentnb")
    a.load_ipython_extension(ip)

    assert sum(isinstance(c, AgentMagics) for c in ip.configurables) == 1
    assert ip.magics_manager.magics["cell"]["agent"].__self__ is magics
    assert ip.magics_manager.magics["cell"]["agent_run"].__self__ is magics


# -- %%agent --------------------------------------------------------------------------------------


def test_agent_cell_binds_an_agent_with_its_options_and_prints_one_line(ip):
    cell(ip, "agent", "legal --model legal_model --timeout 2", "You review law.")
    out = cell(
        ip,
        "agent",
        "boss --model boss_model --tools legal,lookup --output Verdict --max-turns 3",
        "# NBVAL_IGNORE_OUTPUT\nYou decide.\n  # NBVAL_SKIP\nBe brief.",
    )

    boss = ip.user_ns["boss"]
    assert isinstance(boss, a.Agent)
    assert boss.instructions == "You decide.\nBe brief."
    assert boss.model is ip.user_ns["boss_model"] and boss.output_type is Verdict
    assert boss.max_turns == 3
    tools = boss.tool_map()
    assert list(tools) == ["legal", "lookup"]
    assert tools["legal"].timeout == 2  # the sub-agent's --timeout governs it as a tool
    assert agent_timeout(ip.user_ns["legal"]) == 2
    assert out.stdout.strip().splitlines() == [
        "Agent 'boss' · model scripted · tools: legal, lookup · output Verdict · max_turns 3"
    ]


def test_model_spec_strings_and_the_configured_default(ip):
    cell(ip, "agent", "remote --model openai:gpt-4o-mini", "Hi.")
    assert ip.user_ns["remote"].model == "openai:gpt-4o-mini"  # resolved when it runs, not now

    ip.run_line_magic("config", "AgentMagics.default_model = 'legal_model'")
    cell(ip, "agent", "plain", "Hi.")
    assert ip.user_ns["plain"].model is ip.user_ns["legal_model"]
    ip.run_line_magic("config", "AgentMagics.default_model = 'anthropic:claude-sonnet-4'")
    cell(ip, "agent", "plain2", "Hi.")
    assert ip.user_ns["plain2"].model == "anthropic:claude-sonnet-4"
    ip.run_line_magic("config", "AgentMagics.default_model = 'nowhere'")
    with pytest.raises(UsageError, match="unknown model 'nowhere'"):
        ip.run_cell_magic("agent", "plain3", "Hi.")


# -- %%agent_run ----------------------------------------------------------------------------------


def test_agent_run_interpolates_identifiers_only_runs_and_stores_the_result(ip):
    cell(ip, "agent", "legal --model legal_model", "You review law.")
    cell(ip, "agent", "boss --model boss_model --tools legal", "You decide.")
    ip.user_ns["clause"] = 7
    out = cell(
        ip,
        "agent_run",
        "boss -o res",
        'Review clause {clause}: {"id": 7, "x": {}} {{clause}}\n# NBVAL_CHECK_OUTPUT',
    )

    result = ip.user_ns["res"]
    assert result.ok and result.output == "approved"
    sent = ip.user_ns["boss_model"].requests[0].messages[0].content
    assert sent == 'Review clause 7: {"id": 7, "x": {}} {clause}'
    assert ip.user_ns["legal_model"].requests[0].messages[0].content == "check"
    [shown] = [o for o in out.outputs if "text/html" in o.data]
    assert '<pre class="agentnb-output">approved</pre>' in shown.data["text/html"]
    assert shown.data["text/plain"].startswith("RunResult ✔ boss answered · 3 model calls")


def test_a_fixed_run_id_makes_the_log_lines_the_same_on_every_run(ip):
    ip.user_ns["twice"] = a.ScriptedModel([a.tool_call("legal", input="check"), a.say("ok")] * 2)
    ip.user_ns["legal_model"] = a.ScriptedModel([a.say("lawful")] * 3)
    cell(ip, "agent", "legal --model legal_model", "You review law.")
    cell(ip, "agent", "boss --model twice --tools legal", "You decide.")
    cell(ip, "agent_run", "boss -o first --run-id review-1", "go")
    cell(ip, "agent_run", "boss -o second --run-id review-1", "go")

    first, second = ip.user_ns["first"], ip.user_ns["second"]
    assert first.run_id == second.run_id == "review-1"
    assert first.log_lines() and first.log_lines() == second.log_lines()
    assert {json.loads(line)["run"] for line in first.log_lines()} == {"review-1"}
    assert set(first.calls["run_id"]) == {"review-1"}  # the sub-agent's calls too
    cell(ip, "agent_run", "legal -o third", "go")  # without it, a fresh random id
    assert ip.user_ns["third"].ok and ip.user_ns["third"].run_id != "review-1"


def test_a_failing_run_is_shown_not_swallowed(ip):
    ip.user_ns["short"] = a.ScriptedModel([])
    cell(ip, "agent", "empty --model short", "Say something.")
    out = cell(ip, "agent_run", "empty -o res", "go")

    assert not ip.user_ns["res"].ok
    [shown] = [o for o in out.outputs if "text/html" in o.data]
    assert "ScriptExhausted" in shown.data["text/html"]
    assert "✘ empty did not finish" in shown.data["text/plain"]


def test_agent_run_timeout_ends_the_run_with_the_partial_trace(ip):
    ip.user_ns["slow"] = a.ScriptedModel([a.say("late")], latency=5)
    cell(ip, "agent", "sleepy --model slow", "Take your time.")
    cell(ip, "agent_run", "sleepy -o res --timeout 0.05", "go")

    result = ip.user_ns["res"]
    assert isinstance(result.error, a.RunTimeout)
    [call] = [s for s in result.spans if s.kind == "model_call"]
    assert call.ended is not None and call.status != "ok"  # cut, and kept in the trace


def test_live_monitor_is_displayed_and_follows_the_run(ip, dummy_comm):
    _magics(ip).live = "always"
    cell(ip, "agent", "legal --model legal_model", "You review law.")
    cell(ip, "agent", "boss --model boss_model --tools legal", "You decide.")
    out = cell(ip, "agent_run", "boss", "go")

    assert [o.data["text/plain"] for o in out.outputs][0] == "RunMonitor('boss')"
    html_updates = [m["state"]["value"] for m in dummy_comm.states() if "value" in m["state"]]
    assert "✔ <b>boss</b> · ok" in html_updates[-1]


# -- bad input: one line, with the valid choices --------------------------------------------------

BAD_AGENT = [
    (
        "boss --frob 1",
        "unknown option '--frob'; valid options: --model, --tools, --output, --max-turns, --timeout",
    ),
    ("boss extra --model boss_model", "unknown argument 'extra'"),
    ("", "the following arguments are required: NAME"),
    ("1boss --model boss_model", "NAME must be a Python identifier"),
    (
        "boss --model nope",
        "unknown model 'nope': not a model variable (boss_model, legal_model) nor a spec provider:model with provider one of: anthropic, openai",
    ),
    (
        "boss --model zz:q",
        "unknown model provider 'zz' in 'zz:q'; known providers: anthropic, openai",
    ),
    ("boss --model not_a_model", "--model not_a_model is a int, not a model client"),
    ("boss", "no model: pass --model M"),
    (
        "boss --model boss_model --output lookup",
        "--output lookup is a function, not a type pydantic validates; types in the namespace: Verdict; or a builtin: str, int, float, bool, list, dict",
    ),
    (
        "boss --model boss_model --output Missing",
        "unknown output type 'Missing'; types in the namespace: Verdict; or a builtin: str, int, float, bool, list, dict",
    ),
    (
        "boss --model boss_model --tools nope",
        "unknown tool 'nope'; functions and agents in the namespace: lookup",
    ),
    (
        "boss --model boss_model --tools not_a_model",
        "tool 'not_a_model' is a int, not a function or an agent",
    ),
    ("boss --model boss_model --tools lookup,", "--tools takes names separated by commas"),
    ("boss --model boss_model --max-turns 0", "argument --max-turns: '0' must be positive"),
    ("boss --model boss_model --timeout soon", "argument --timeout: 'soon' is not a number"),
    ("boss --model 'boss_model", "No closing quotation"),
]


@pytest.mark.parametrize(("line", "message"), BAD_AGENT)
def test_bad_agent_cells_are_one_line_usage_errors(ip, line, message):
    with pytest.raises(UsageError) as raised:
        ip.run_cell_magic("agent", line, "You decide.")
    text = str(raised.value)
    assert message in text and "\n" not in text
    assert "boss" not in ip.user_ns


def test_a_tool_function_the_model_cannot_call_is_a_usage_error(ip):
    def spread(*items: str) -> str:
        return "x"

    ip.user_ns["spread"] = spread
    with pytest.raises(UsageError, match=r"^%%agent: Tool 'spread': \*args and \*\*kwargs"):
        ip.run_cell_magic("agent", "boss --model boss_model --tools spread", "Hi.")


BAD_RUN = [
    ("nobody", "go", "'nobody' is not defined; agents in the namespace: legal"),
    ("lookup", "go", "'lookup' is a function, not an Agent; agents in the namespace: legal"),
    (
        "legal --frob",
        "go",
        "unknown option '--frob'; valid options: -o, --out, --timeout, --run-id, --continue, "
        "--session, --no-stream; usage: %%agent_run NAME [-o VAR] [--timeout S] [--run-id ID] "
        "[--continue PREV] [--session S] [--no-stream]",
    ),
    ("legal --run-id", "go", "argument --run-id: expected one argument"),
    (
        "legal --run-id ''",
        "go",
        "argument --run-id: '' is not a run id: use one word without spaces",
    ),
    ("legal --run-id 'a b'", "go", "argument --run-id: 'a b' is not a run id"),
    ("legal -o 2x", "go", "-o needs a Python identifier"),
    ("legal --timeout -1", "go", "argument --timeout: '-1' must be positive"),
    ("legal", "Use {undefined_thing}", "{undefined_thing} in the text is not defined"),
    ("legal", "# NBVAL_SKIP\n", "the cell body is the input to the agent, and it is empty"),
]


@pytest.mark.parametrize(("line", "body", "message"), BAD_RUN)
def test_bad_agent_run_cells_are_one_line_usage_errors(ip, line, body, message):
    cell(ip, "agent", "legal --model legal_model", "You review law.")
    with pytest.raises(UsageError) as raised:
        ip.run_cell_magic("agent_run", line, body)
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert ip.user_ns["legal_model"].requests == []  # nothing ran


def test_in_a_cell_a_usage_error_prints_one_line_and_no_traceback(ip, capsys):
    outcome = ip.run_cell("%%agent boss --frob\nYou decide.")

    assert isinstance(outcome.error_in_exec, UsageError)
    printed = capsys.readouterr()
    lines = [line for line in (printed.out + printed.err).splitlines() if line.strip()]
    assert lines == [f"UsageError: {outcome.error_in_exec}"]


@pytest.mark.parametrize(
    ("source", "message"),
    [
        (
            "%%agent reviewer --model legal_model",
            "%%agent reviewer: the cell body is the agent's instructions, and it is empty; write "
            "them on the lines under the magic, e.g. '%%agent reviewer --model my_model' then "
            "'You review contract clauses.'",
        ),
        ("%%agent reviewer --model legal_model\n", "the cell body is the agent's instructions"),
        (
            "%%agent reviewer --model legal_model\n\n  \n",
            "the cell body is the agent's instructions",
        ),
        (
            "%%agent reviewer --model legal_model\n# NBVAL_SKIP",
            "the cell body is the agent's instructions",
        ),
        (
            "%%agent_run legal -o res",
            "%%agent_run legal: the cell body is the input to the agent, and it is empty; write it "
            "on the lines under the magic, e.g. '%%agent_run legal -o result' then "
            "'Review this clause: {clause}'",
        ),
    ],
)
def test_an_empty_body_says_what_the_body_is_for(ip, capsys, source, message):
    """IPython refuses a cell magic with no body before the magic runs ("the cell body is
    empty"); agentnb's input transformer lets the magic run and explain its body instead."""
    ip.run_cell("%%agent legal --model legal_model\nYou review law.")
    capsys.readouterr()
    outcome = ip.run_cell(source)

    assert isinstance(outcome.error_in_exec, UsageError)
    assert message in str(outcome.error_in_exec) and "\n" not in str(outcome.error_in_exec)
    printed = capsys.readouterr()
    assert [line for line in (printed.out + printed.err).splitlines() if line.strip()] == [
        f"UsageError: {outcome.error_in_exec}"
    ]
    assert "reviewer" not in ip.user_ns
    assert ip.user_ns["legal_model"].requests == []  # nothing ran


def test_the_transformer_leaves_other_cells_alone(ip):
    from agentnb.notebook.magics import give_empty_body

    assert ip.input_transformers_cleanup.count(give_empty_body) == 1  # loaded twice, added once
    for lines in (["%%agentx a\n"], ["%%time\n"], ["x = 1\n"], ["%%agent a\n", "Hi.\n"]):
        assert give_empty_body(lines) == lines
    assert ip.transform_cell("%%capture\n") == ip.transform_cell("%%capture")


def test_everything_the_magics_do_is_a_plain_call():
    from agentnb.notebook import define_agent, interpolate, run_live

    legal = define_agent(
        "legal", "# NBVAL_SKIP\nYou review law.", model=a.ScriptedModel([a.say("ok")]), timeout=3
    )
    model = a.ScriptedModel([a.tool_call("legal", input="x"), a.say("done")])
    boss = define_agent("boss", "Decide.", model=model, tools=[legal])
    result = run_live(boss, interpolate("{n} items", {"n": 2}), monitor=False)

    assert legal.instructions == "You review law." and boss.tool_map()["legal"].timeout == 3
    assert result.output == "done" and model.requests[0].messages[0].content == "2 items"
    monitor = RunMonitor("boss")
    run_live(boss.clone(model=a.ScriptedModel(["fine"])), "again", monitor=monitor)
    assert monitor.state == "ok" and monitor.snapshot()[0]["calls"] == 1


def test_a_run_that_cannot_start_is_a_usage_error_and_leaves_no_monitor(
    ip, dummy_comm, monkeypatch
):
    _magics(ip).live = "always"
    cell(ip, "agent", "remote --model openai:gpt-4o-mini", "Hi.")

    with pytest.raises(
        UsageError, match=r"^%%agent_run: OpenAIModel\('gpt-4o-mini'\) needs an API key"
    ):
        ip.run_cell_magic("agent_run", "remote -o res", "hello")
    assert "res" not in ip.user_ns
    [view] = [c for c in dummy_comm.comms if any("waiting" in str(m) for m in c.messages)]
    assert view.closed and all(c.closed for c in dummy_comm.comms)  # the view, its box, layouts


def test_output_takes_a_builtin_type_name_or_a_type_alias_from_the_namespace(ip):
    ip.user_ns["counter_model"] = a.ScriptedModel([a.say('{"response": 3}')])
    ip.user_ns["Scores"] = list[int]
    ip.run_cell_magic("agent", "counter --model counter_model --output int", "Count.")
    ip.run_cell_magic("agent", "scorer --model counter_model --output Scores", "Score.")
    assert ip.user_ns["counter"].output_type is int
    assert ip.user_ns["scorer"].output_type == list[int]
    ip.run_cell_magic("agent_run", "counter -o res", "How many?")
    assert ip.user_ns["res"].output == 3


def test_agent_run_continue_sends_the_earlier_conversation(ip):
    model = a.ScriptedModel([a.say("first answer"), a.say("second answer")])
    ip.user_ns["chat_model"] = model
    ip.run_cell_magic("agent", "chat --model chat_model", "Chat.")
    ip.run_cell_magic("agent_run", "chat -o one", "first question")
    ip.run_cell_magic("agent_run", "chat --continue one -o two", "second question")

    assert ip.user_ns["two"].output == "second answer"
    sent = [(m.role, m.content) for m in model.requests[1].messages]
    assert sent == [
        ("user", "first question"),
        ("assistant", "first answer"),
        ("user", "second question"),
    ]
    with pytest.raises(UsageError, match="--continue nope: 'nope' is not defined"):
        ip.run_cell_magic("agent_run", "chat --continue nope", "again")


def test_agent_run_session_continues_the_conversation_across_cells(ip):
    model = a.ScriptedModel([a.say("a1"), a.say("a2"), a.say("a3")])
    ip.user_ns["chat_model"] = model
    ip.run_cell_magic("agent", "chat --model chat_model", "Chat.")
    cell(ip, "agent_run", "chat --session talk", "q1")
    talk = ip.user_ns["talk"]  # a new in-memory session, bound to the name given
    assert isinstance(talk, a.Session) and talk.id == "talk"
    cell(ip, "agent_run", "chat --session talk -o two", "q2")
    assert ip.user_ns["talk"] is talk

    sent = [(m.role, m.content) for m in model.requests[1].messages if m.role != "system"]
    assert sent == [("user", "q1"), ("assistant", "a1"), ("user", "q2")]
    assert [[m.content for m in t] for t in talk.turns()] == [["q1", "a1"], ["q2", "a2"]]
    assert a.conversation_cost(talk)["history_messages"].tolist() == [0, 2]

    kept = a.Session(keep_last=1)  # a session of the user's own, with its options
    ip.user_ns["kept"] = kept
    cell(ip, "agent_run", "chat --session kept", "q3")
    assert ip.user_ns["kept"] is kept and len(kept.turns()) == 1
    assert [m.content for m in model.requests[2].messages if m.role != "system"] == ["q3"]


BAD_SESSION = [
    ("chat --session lookup", "--session lookup: 'lookup' is a function, not an agentnb.Session"),
    ("chat --session 2x", "--session needs a Python identifier, got '2x'"),
    ("chat --session", "argument --session: expected one argument"),
    ("chat --session talk --continue one", "--continue and --session both give the run a history"),
]


@pytest.mark.parametrize(("line", "message"), BAD_SESSION)
def test_bad_session_options_are_one_line_usage_errors(ip, line, message):
    model = a.ScriptedModel([a.say("a1")])
    ip.user_ns["chat_model"] = model
    ip.run_cell_magic("agent", "chat --model chat_model", "Chat.")
    ip.user_ns["one"] = a.run_sync(a.Agent("x", model=a.ScriptedModel([a.say("x")])), "x")
    with pytest.raises(UsageError) as raised:
        ip.run_cell_magic("agent_run", line, "q")
    assert message in str(raised.value) and "\n" not in str(raised.value)
    assert model.requests == [] and "talk" not in ip.user_ns  # nothing ran, nothing bound


def test_a_busy_session_is_a_usage_error(ip):
    model = a.ScriptedModel([a.say("a1")])
    ip.user_ns["chat_model"] = model
    ip.run_cell_magic("agent", "chat --model chat_model", "Chat.")
    busy = ip.user_ns["busy"] = a.Session()
    busy.claim()
    try:
        with pytest.raises(UsageError, match="^%%agent_run: Session 'default' is in use"):
            ip.run_cell_magic("agent_run", "chat --session busy", "q")
    finally:
        busy.release()
    assert model.requests == []


def test_the_default_model_reaches_sub_agents_without_a_model(ip):
    shared = a.ScriptedModel(
        lambda r: (
            a.tool_call("helper", input="q")
            if r.agent == "boss" and not r.tool_results
            else a.say(f"{r.agent} says hi")
        )
    )
    ip.user_ns["shared"] = shared
    ip.user_ns["helper"] = a.Agent("helper", "Help.")  # defined in Python, no model
    _magics(ip).default_model = "shared"
    ip.run_cell_magic("agent", "boss --tools helper", "Coordinate.")
    ip.run_cell_magic("agent_run", "boss -o res", "go")
    assert ip.user_ns["res"].ok and [r.agent for r in shared.requests] == ["boss", "helper", "boss"]
