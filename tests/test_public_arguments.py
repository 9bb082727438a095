"""Bad values thrown at the public constructors and run options raise `UserError` or work.

Never anything else: a TypeError from deep inside, an AttributeError, a pydantic error, or a
run that starts and fails later. Numbers given as strings or bools are refused.
"""

from __future__ import annotations

import atexit
import dataclasses
import inspect
import math
import os
import shutil
import tempfile
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import agentnb as a
from agentnb.models import Backoff
from agentnb.runtime.data.options import RunOptions

ANYTHING = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-5, max_value=5),
    st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=5),
    st.sampled_from(["3", "1.5", "", "gpt", object(), [], {}, (), [1], {"a": 1}, print]),
)
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _agent(name: str = "a") -> a.Agent:
    return a.Agent(name, "Answer.", model=a.ScriptedModel([a.say("hi")] * 3))


def _accepts(build: Any) -> None:
    try:
        build()
    except a.UserError as exc:
        assert "\n" not in str(exc).strip(), f"not one line: {exc}"


@pytest.mark.parametrize("field", ["max_depth", "max_model_calls", "max_tokens", "timeout"])
@SETTINGS
@given(value=ANYTHING)
def test_limits(field: str, value: Any) -> None:
    _accepts(lambda: a.Limits(**{field: value}))
    if isinstance(value, (bool, str)):
        with pytest.raises(a.UserError):
            a.Limits(**{field: value})


RUN_OPTIONS = [f.name for f in dataclasses.fields(RunOptions)]
"""Every option a run takes (a new one gets its case here without being listed)."""


@pytest.mark.parametrize("option", RUN_OPTIONS)
@SETTINGS
@given(value=ANYTHING)
def test_run_options(option: str, value: Any) -> None:
    def run() -> None:
        result = a.run_sync(_agent(), "q", **{option: value})
        assert isinstance(result, a.RunResult)

    _accepts(run)
    if option in ("max_turns", "timeout") and isinstance(value, (bool, str)):
        with pytest.raises(a.UserError):
            run()


@pytest.mark.parametrize(
    "option",
    [
        "name",
        "description",
        "max_turns",
        "timeout",
        "max_tokens",
        "max_result_chars",
        "input_schema",
        "input_builder",
        "extractor",
        "needs_approval",
        "propagate_guardrails",
    ],
)
@SETTINGS
@given(value=ANYTHING)
def test_as_tool(option: str, value: Any) -> None:
    _accepts(lambda: _agent().as_tool(**{option: value}))
    if option in ("max_turns", "timeout", "max_tokens") and isinstance(value, (bool, str)):
        with pytest.raises(a.UserError):
            _agent().as_tool(**{option: value})


@pytest.mark.parametrize(
    "field", ["name", "instructions", "model", "tools", "max_turns", "handoffs", "output_retries"]
)
@SETTINGS
@given(value=ANYTHING)
def test_agent(field: str, value: Any) -> None:
    values: dict[str, Any] = {"name": "a", "model": a.ScriptedModel([a.say("hi")])}
    values[field] = value

    def build_and_run() -> None:
        a.run_sync(a.Agent(**values), "q")

    _accepts(build_and_run)
    if field in ("max_turns", "output_retries") and isinstance(value, (bool, str)):
        with pytest.raises(a.UserError):
            a.Agent(**values)


@pytest.mark.parametrize("option", ["timeout", "max_concurrency", "artifacts", "limits"])
@SETTINGS
@given(value=ANYTHING)
def test_parallel_options(option: str, value: Any) -> None:
    _accepts(lambda: a.run_sync(a.parallel([_agent()], "q", **{option: value})))


# -- every public constructor of agentnb's __all__ ------------------------------------------------
#
# Each public name is either a constructor with a case below (every keyword it takes, thrown
# ANYTHING) or listed in NOT_CONFIGURED with the reason it has none. A new public name in
# neither fails `test_every_public_name_is_covered`.

_SCRATCH = tempfile.mkdtemp(prefix="agentnb-arguments-")
"""Where record/replay given a generated path may write: never the repository."""
atexit.register(shutil.rmtree, _SCRATCH, ignore_errors=True)


def _fn(x: int) -> int:
    """Echo."""
    return x


def _http(cls: Any, option: str, value: Any) -> Any:
    base: dict[str, Any] = {"base_url": "http://127.0.0.1:9/v1", "api_key": "sk-test-key"}
    if option == "model":
        return cls(value, **base)
    return cls("m", **{**base, option: value})


async def _experiment_fn(k: int, trial: int) -> a.RunResult:
    return await a.run(_agent(), "q")


_STORED: list[Any] = []


def _stored() -> Any:
    """One small stored experiment (in the scratch folder) for the readers to read."""
    if not _STORED:
        path = os.path.join(_SCRATCH, "stored.db")
        _STORED.append(
            a.run_sync(
                a.experiment(
                    "stored", _experiment_fn, {"k": [1, 2]}, trials=2, store=path, progress=False
                )
            )
        )
    return _STORED[0]


def _in_scratch(build: Any) -> Any:
    here = os.getcwd()
    os.chdir(_SCRATCH)
    try:
        return build()
    finally:
        os.chdir(here)


def _keywords(fn: Any, *skip: str) -> list[str]:
    """The keywords ``fn`` takes; ``**options: Unpack[SomeOptions]`` stands for each key of
    that TypedDict."""
    parameters = inspect.signature(fn).parameters
    names = [p for p in parameters if p not in skip and p != "options"]
    if "options" in parameters:
        from agentnb.runtime.data.options import AS_TOOL_KEYWORDS
        from agentnb.runtime.tools.function import TOOL_KEYWORDS

        typed = str(parameters["options"].annotation)
        known = {"RunKeywords": RUN_OPTIONS, "ToolOptions": TOOL_KEYWORDS}
        known["AsToolOptions"] = AS_TOOL_KEYWORDS
        names += sorted(next(v for k, v in known.items() if f"[{k}]" in typed))
    return names


HTTP = ["model", *_keywords(a.OpenAIModel, "model")]
ANTHROPIC = ["model", *_keywords(a.AnthropicModel, "model")]
RESPONSES = ["model", *_keywords(a.OpenAIResponsesModel, "model")]

CONSTRUCTORS: dict[str, tuple[list[str], Any]] = {
    # models
    "OpenAIModel": (HTTP, lambda o, v: _http(a.OpenAIModel, o, v)),
    "AnthropicModel": (ANTHROPIC, lambda o, v: _http(a.AnthropicModel, o, v)),
    "OpenAIResponsesModel": (RESPONSES, lambda o, v: _http(a.OpenAIResponsesModel, o, v)),
    "HostedTool": (
        ["type", "options"],
        lambda o, v: a.HostedTool(v) if o == "type" else a.HostedTool("web_search", extra=v),
    ),
    "TestModel": (_keywords(a.TestModel), lambda o, v: a.TestModel(**{o: v})),
    "SummarizeOlder": (
        _keywords(a.SummarizeOlder),
        lambda o, v: a.SummarizeOlder(**{"model": a.ScriptedModel([]), o: v}),
    ),
    "ScriptedModel": (
        _keywords(a.ScriptedModel),
        lambda o, v: a.ScriptedModel(**{"script": [a.say("hi")], o: v}),
    ),
    "FunctionModel": (
        _keywords(a.FunctionModel),
        lambda o, v: a.FunctionModel(**{"fn": lambda r: "hi", o: v}),
    ),
    "ModelSettings": (_keywords(a.ModelSettings), lambda o, v: a.ModelSettings(**{o: v})),
    # made, not started: a bad option is refused before any server is launched
    "local_model": (
        _keywords(a.local_model, "model_options"),
        lambda o, v: a.local_model(**{o: v}),
    ),
    "LocalModel": (_keywords(a.LocalModel, "model_options"), lambda o, v: a.LocalModel(**{o: v})),
    "record": (
        _keywords(a.record),
        lambda o, v: _in_scratch(
            lambda: a.record(**{"model": a.ScriptedModel([]), "path": "rec.jsonl", o: v})
        ),
    ),
    "replay": (
        _keywords(a.replay),
        lambda o, v: _in_scratch(lambda: a.replay(**{"path": "missing.jsonl", o: v})),
    ),
    "say": (["text"], lambda o, v: a.say(v)),
    "tool_call": (
        ["name", "arguments"],
        lambda o, v: a.tool_call(v) if o == "name" else a.tool_call("t", x=v),
    ),
    # runtime
    "tool": (_keywords(a.tool), lambda o, v: a.tool(**{"fn": _fn, o: v})),
    "team": (_keywords(a.team), lambda o, v: a.team(**{"members": [_agent()], o: v})),
    "input_guardrail": (
        _keywords(a.input_guardrail),
        lambda o, v: a.input_guardrail(**{"fn": _fn, o: v}),
    ),
    "output_guardrail": (
        _keywords(a.output_guardrail),
        lambda o, v: a.output_guardrail(**{"fn": _fn, o: v}),
    ),
    "agent_guardrail": (
        _keywords(a.agent_guardrail),
        lambda o, v: a.agent_guardrail(**{"agent": _agent(), "trip_when": bool, o: v}),
    ),
    "Handoff": (_keywords(a.Handoff), lambda o, v: a.Handoff(**{"target": _agent(), o: v})),
    "HandoffConfig": (_keywords(a.HandoffConfig), lambda o, v: a.HandoffConfig(**{o: v})),
    "StopAtTools": (["names"], lambda o, v: a.StopAtTools(v)),
    "ToolGuardrail": (
        _keywords(a.ToolGuardrail),
        lambda o, v: a.ToolGuardrail(**{"action": "allow", o: v}),
    ),
    "PromptSection": (
        _keywords(a.PromptSection),
        lambda o, v: a.PromptSection(**{"heading": "h", "content": "c", o: v}),
    ),
    "Approval": (_keywords(a.Approval), lambda o, v: a.Approval(**{"approved": True, o: v})),
    # patterns
    "HandoffRoute": (
        ["name", "rules", "fallback"],
        lambda o, v: a.HandoffRoute(**{"name": "r", o: v}),
    ),
    "hierarchy": (
        ["orchestrator", "workers", "max_turns"],
        lambda o, v: a.hierarchy(**{"orchestrator": _agent(), "workers": [_agent("w")], o: v}),
    ),
    "star": (
        _keywords(a.star),
        lambda o, v: a.star(**{"center": _agent(), "specialists": [_agent("s")], o: v}),
    ),
    "mesh": (["agents", "via"], lambda o, v: a.mesh(**{"agents": [_agent(), _agent("b")], o: v})),
    "pipeline": (["stages"], lambda o, v: a.pipeline(_agent(), v)),
    "chain": (
        _keywords(a.chain),
        lambda o, v: a.run_sync(a.chain(**{"agents": [_agent()], "input": "q", o: v})),
    ),
    "verify_loop": (
        _keywords(a.verify_loop),
        lambda o, v: a.run_sync(
            a.verify_loop(**{"writer": _agent(), "verifier": _agent("v"), "task": "t", o: v})
        ),
    ),
    # measure
    "sweep": (
        _keywords(a.sweep),
        lambda o, v: a.run_sync(
            a.sweep(
                **{
                    "fn": lambda **p: a.run(_agent(), "q"),
                    "grid": {"k": [1]},
                    "progress": False,
                    o: v,
                }
            )
        ),
    ),
    "Price": (
        _keywords(a.Price),
        lambda o, v: a.Price(
            **{
                "model": "m",
                "input_per_million": 1.0,
                "output_per_million": 2.0,
                "source": "s",
                "as_of": "2026-01-01",
                o: v,
            }
        ),
    ),
    "Prices": (_keywords(a.Prices), lambda o, v: a.Prices(**{o: v})),
    "Prices.add": (
        ["model", "input", "output", "source", "as_of", "currency", "cached_input", "cache_write"],
        lambda o, v: a.Prices().add(
            **{"model": "m", "input": 1.0, "output": 2.0, "source": "s", "as_of": "2026", o: v}
        ),
    ),
    "cache_estimate": (
        ["data", "provider", "earlier", "minimum", "step", "breakpoints", "lookback"],
        lambda o, v: a.cache_estimate(**{"data": _result(), o: v}),
    ),
    "cost_table": (
        ["data", "by", "baseline", "prices", "unit", "caching"],
        lambda o, v: a.cost_table(**{"data": _result(), o: v}),
    ),
    "stream_sync": (
        ["target", "input", "timeout", "max_turns", "on_event", "hooks", "model_settings"],
        lambda o, v: _stream(o, v),
    ),
    "GuardrailResult": (
        ["tripwire", "info"],
        lambda o, v: a.GuardrailResult(**{"tripwire": False, o: v}),
    ),
    "Message": (["role", "content"], lambda o, v: a.Message(**{"role": "user", o: v})),
    "experiment": (
        _keywords(a.experiment),
        lambda o, v: _in_scratch(
            lambda: a.run_sync(
                a.experiment(
                    **{
                        "name": "args",
                        "fn": _experiment_fn,
                        "grid": {"k": [1]},
                        "store": "args.db",
                        "progress": False,
                        o: v,
                    }
                )
            )
        ),
    ),
    "open_experiment": (
        _keywords(a.open_experiment),
        lambda o, v: a.open_experiment(**{"name": "stored", "store": _stored().path, o: v}),
    ),
    "compare": (
        ["a", "b", "metric", "method", "confidence"],
        lambda o, v: a.compare(
            **{"experiment": _stored(), "a": {"k": 1}, "b": {"k": 2}, "metric": "calls", o: v}
        ),
    ),
    "pareto": (
        _keywords(a.pareto, "experiment"),
        lambda o, v: a.pareto(**{"experiment": _stored(), "x": "calls", "y": "chars_in", o: v}),
    ),
}
"""Each public constructor: the keywords to throw values at, and how to build it with one."""

COVERED_ELSEWHERE = {
    "Agent": "test_agent",
    "mcp": "tests/runtime/tools/test_mcp.py (a module: its builders check their options)",
    "tool_sources": "tests/runtime/tools/test_mcp.py",
    "messages_to_json": "tests/models/test_message_json.py",
    "Session": "tests/runtime/data/test_session.py (bad options and files are UserErrors)",
    "conversation_cost": "tests/measure/test_conversation_cost.py (bad input is a UserError)",
    "messages_from_json": "tests/models/test_message_json.py (bad input is a UserError)",
    "Limits": "test_limits",
    "run": "test_run_options",
    "RunOptions": "test_run_options (run_sync builds one from its keywords)",
    "run_sync": "test_run_options",
    "resume": "test_pause_resume",
    "RunState": "test_resume_fails_closed (result.to_state() makes one)",
    "parallel": "test_parallel_options",
    "AgentTool": "test_as_tool (made by agent.as_tool)",
}

NOT_CONFIGURED = {
    # records agentnb fills and hands back (or a model client builds): their fields are data
    "ModelRequest",
    "ModelResponse",
    "ToolCall",
    "ToolSpec",
    "Usage",
    "CALL_COLUMNS",
    "Experiment",
    "RunResult",
    "RunContext",
    "ToolCallContext",
    "ToolOutcome",
    "Guardrail",
    "PendingCall",
    "ApprovalRecord",
    "TeamTool",
    "Tool",
    "RunStream",
    "AgentEnded",
    "AgentStarted",
    "HandoffEvent",
    "MessageOutput",
    "PartialOutput",
    "ToolCallDelta",
    "SpanEnded",
    "SpanStarted",
    "LogRecorded",
    "Event",
    "RunEnded",
    "TextDelta",
    "ToolCallEnded",
    "ToolCallStarted",
    "ChainResult",
    "FanOut",
    "Judgement",
    "Round",
    "Topology",
    "VerifyResult",
    "Vote",
    # pydantic models the model answers with (validated by pydantic itself) or a protocol/base
    "Intent",
    "Respond",
    "JudgeVerdict",
    "Verification",
    "ModelClient",
    "Hooks",
    # functions that read a request, a result or a table rather than configure anything
    "canonical_request",
    "request_sizes",
    "set_tokenizer",
    "approve_all",
    "reject_all",
    "assemble_prompt",
    "run_streamed",
    "harshest",
    "majority",
    "judge",
    "add_cost",
    "breakdown",
    "breakdown_growth",
    "cost_fit",
    "critical_path",
    "latency_series",
    "section_costs",
    "verifier_table",
    # types exported because public signatures and result fields use them (issue 35): made by
    # agentnb or by the functions that take them, whose cases are above (Backoff: test_backoff)
    "Backoff",
    "AgentSummary",
    "BaseTool",
    "HandoffTool",
    "Interruption",
    "Recorder",
    "Replay",
    "Say",
    "Span",
    "TextChunk",
    "ToolCallChunk",
    "ToolChoices",
    "Transfer",
    # what a tool_use_behavior function reads and returns (values, not configuration)
    "FunctionToolResult",
    "ToolsToFinalOutputResult",
    # modules and the notebook layer (loaded on first use; its own tests check its arguments)
    "filters",
    "scenarios",
    "plot",
    "RunMonitor",
    "SweepDashboard",
    "TraceExplorer",
    "define_agent",
    "run_live",
}
"""Public names that are not configuration: no case needed (exceptions are left out too)."""


def test_every_public_name_is_covered() -> None:
    errors = {
        n
        for n in a.__all__
        if n in a.__dict__
        and isinstance(a.__dict__[n], type)
        and issubclass(a.__dict__[n], BaseException)
    }
    known = set(CONSTRUCTORS) | set(COVERED_ELSEWHERE) | NOT_CONFIGURED | errors
    assert set(a.__all__) - known == set(), "a public name without a case: add one"
    assert known - set(a.__all__) - {"Backoff", "Prices.add"} == set(), (
        "a case for a name no longer public"
    )


CASES = [(name, option) for name, (options, _) in CONSTRUCTORS.items() for option in options]


@pytest.mark.parametrize(("name", "option"), CASES, ids=[f"{n}-{o}" for n, o in CASES])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(value=ANYTHING)
def test_public_constructors(name: str, option: str, value: Any) -> None:
    _, build = CONSTRUCTORS[name]
    _accepts(lambda: build(option, value))
    wrong = isinstance(value, (bool, str)) or (isinstance(value, float) and math.isnan(value))
    if wrong and option in NUMBERS.get(name, ()):
        with pytest.raises(a.UserError):
            build(option, value)
    unset = value is None and name == "ModelSettings"  # a setting left unset
    if not isinstance(value, bool) and not unset and option in FLAGS.get(name, ()):
        with pytest.raises(a.UserError):
            build(option, value)


NUMBERS = {
    "OpenAIModel": ("max_concurrency", "max_retries", "timeout", "stream_idle", "backoff"),
    "OpenAIResponsesModel": ("max_concurrency", "max_retries", "timeout", "stream_idle", "backoff"),
    "AnthropicModel": (
        "max_tokens",
        "max_concurrency",
        "max_retries",
        "timeout",
        "stream_idle",
        "backoff",
    ),
    "ScriptedModel": ("latency", "chunk_chars", "chunk_latency"),
    "FunctionModel": ("latency",),
    "TestModel": ("seed",),
    "ModelSettings": ("temperature", "top_p", "max_tokens", "seed"),
    "tool": ("max_result_chars",),
    "HandoffConfig": ("window", "budget"),
    "hierarchy": ("max_turns",),
    "chain": ("timeout",),
    "verify_loop": ("max_rounds", "timeout"),
    "sweep": ("repeat",),
    "cache_estimate": ("minimum", "step", "lookback"),
    "Prices.add": ("input", "output", "cached_input", "cache_write"),
    "stream_sync": ("timeout", "max_turns"),
    "experiment": ("trials",),
    "open_experiment": ("version",),
    "compare": ("confidence",),
    "Price": (
        "input_per_million",
        "output_per_million",
        "cached_input_per_million",
        "cache_write_per_million",
    ),
}
"""Options that take a number: text, a bool or NaN there is refused, never read as one."""

FLAGS = {
    "ModelSettings": ("parallel_tool_calls",),
    "record": ("append",),
    "input_guardrail": ("blocking",),
    "agent_guardrail": ("blocking",),
    "PromptSection": ("condition",),
    "Approval": ("approved",),
    "sweep": ("progress",),
    "experiment": ("progress",),
    "pareto": ("lower_x", "higher_y"),
    "Prices": ("defaults",),
    "GuardrailResult": ("tripwire",),
}
"""Options that take True or False: anything else is refused, not read as true or false
(``ModelSettings.parallel_tool_calls`` also takes None: not set)."""


@pytest.mark.parametrize("option", ["initial", "multiplier", "max", "jitter", "total"])
@SETTINGS
@given(value=ANYTHING)
def test_backoff(option: str, value: Any) -> None:
    _accepts(lambda: Backoff(**{option: value}))
    if isinstance(value, (bool, str)) or (isinstance(value, float) and math.isnan(value)):
        with pytest.raises(a.UserError):
            Backoff(**{option: value})


_RESULTS: list[a.RunResult] = []


def _result() -> a.RunResult:
    """One run's result, made once, for the functions that read results."""
    if not _RESULTS:
        _RESULTS.append(a.run_sync(_agent(), "q"))
    return _RESULTS[0]


def _stream(option: str, value: Any) -> None:
    if option == "target":
        events = list(a.stream_sync(value, "q"))
    elif option == "input":
        events = list(a.stream_sync(_agent(), value))
    else:
        events = list(a.stream_sync(_agent(), "q", **{option: value}))
    assert isinstance(events[-1], a.RunEnded)


def _tool_fn(x: int) -> int:
    """Echo."""
    return x


def _openai(**options: Any) -> Any:
    return a.OpenAIModel("m", **{"base_url": "http://127.0.0.1:9/v1", **options})


ISSUE_14_ITEM_6 = {
    "Agent(tools=None)": lambda: a.Agent("a", tools=None),
    "Agent(handoffs=None)": lambda: a.Agent("a", handoffs=None),
    "Limits(max_depth=None)": lambda: a.Limits(max_depth=None),  # type: ignore[arg-type]
    "Limits(max_depth='2')": lambda: a.Limits(max_depth="2"),  # type: ignore[arg-type]
    "Limits(timeout='5')": lambda: a.Limits(timeout="5"),  # type: ignore[arg-type]
    "Limits(timeout=nan)": lambda: a.Limits(timeout=math.nan),
    "Limits(max_model_calls=2.5)": lambda: a.Limits(max_model_calls=2.5),  # type: ignore[arg-type]
    "run_sync(..., timeout='5')": lambda: a.run_sync(_agent(), "q", timeout="5"),
    "as_tool(timeout='5')": lambda: _agent().as_tool(timeout="5"),  # type: ignore[arg-type]
    "tool(fn, name=123)": lambda: a.tool(_tool_fn, name=123),
    "as_tool(name=5)": lambda: _agent().as_tool(name=5),  # type: ignore[arg-type]
    "run_sync(agent, ['a', 'b'])": lambda: a.run_sync(_agent(), ["a", "b"]),
    "run_sync(..., bogus=1)": lambda: a.run_sync(_agent(), "q", bogus=1),
    "OpenAIModel(params=42)": lambda: _openai(params=42),
    "OpenAIModel(api_key=42)": lambda: _openai(api_key=42),
    "OpenAIModel(base_url=42)": lambda: _openai(base_url=42),
    "replay(<a directory>)": lambda: a.replay(_SCRATCH),
    "tool_call('t', x=object())": lambda: a.tool_call("t", x=object()),
    "run(..., listeners=[42])": lambda: a.run_sync(_agent(), "q", listeners=[42]),
    "run(..., stream=1)": lambda: a.run_sync(_agent(), "q", stream=1),  # type: ignore[arg-type]
    "Agent(route=42)": lambda: a.Agent("a", route=42),  # type: ignore[arg-type]
    "as_tool(extractor=42)": lambda: _agent().as_tool(extractor=42),  # type: ignore[arg-type]
    "as_tool(max_result_chars=-1)": lambda: _agent().as_tool(max_result_chars=-1),
    "tool(fn, max_result_chars=-1)": lambda: a.tool(_tool_fn, max_result_chars=-1),
    "Agent(max_turns=True)": lambda: a.Agent("a", max_turns=True),
    "Agent(output_retries='x')": lambda: a.Agent("a", output_retries="x"),  # type: ignore[arg-type]
    "as_tool(description=123)": lambda: _agent().as_tool(description=123),  # type: ignore[arg-type]
    "tool(fn, description=123)": lambda: a.tool(_tool_fn, description=123),
    "Agent(description=123)": lambda: a.Agent("a", description=123),  # type: ignore[arg-type]
}
"""The bad inputs issue 14 (item 6) lists, each of which must be a one-line `UserError`."""


@pytest.mark.parametrize("call", list(ISSUE_14_ITEM_6), ids=list(ISSUE_14_ITEM_6))
def test_each_bad_input_of_the_issue_is_a_one_line_user_error(call: str) -> None:
    with pytest.raises(a.UserError) as raised:
        ISSUE_14_ITEM_6[call]()
    message = str(raised.value)
    assert "\n" not in message.strip() and message.strip(), message
    assert "got" in message or "is a directory" in message or "Unknown run option" in message


def test_a_key_given_as_the_wrong_type_is_not_quoted_back() -> None:
    class Key:
        def __repr__(self) -> str:
            return "sk-secret-key-0123456789"

    with pytest.raises(a.UserError, match=r"api_key=...\) must be text or None, got a Key$"):
        _openai(api_key=Key())


def test_a_long_or_multiline_value_is_quoted_on_one_short_line() -> None:
    with pytest.raises(a.UserError) as raised:
        a.Limits(timeout=["line\n" * 100])  # type: ignore[arg-type]
    message = str(raised.value)
    assert "\n" not in message and len(message) < 160 and message.endswith("...")


async def _async_on_event(event: Any) -> None:
    pass


def _guarding_itself() -> a.RunResult:
    checker = a.Agent("checker", "Say ok.", a.ScriptedModel([a.say("ok")] * 400))
    checker.input_guardrails = (a.agent_guardrail(checker, lambda out: out != "ok"),)
    return a.run_sync(checker, "go")


ISSUE_24_ITEM_5 = {
    "cache_estimate(minimum=-5)": lambda: a.cache_estimate(_result(), minimum=-5),
    "cache_estimate(minimum={'gpt': -5})": lambda: a.cache_estimate(_result(), minimum={"gpt": -5}),
    "cache_estimate(step=True)": lambda: a.cache_estimate(_result(), step=True),
    "Prices({'m': 3})": lambda: a.Prices({"m": 3}, source="s", as_of="2026"),
    "Prices({'m': (1, 2, 3)})": lambda: a.Prices({"m": (1, 2, 3)}, source="s", as_of="2026"),
    "Prices.add(input=True)": lambda: a.Prices().add(
        "m", input=True, output=1, source="s", as_of="2026"
    ),
    "Prices.add(source=5)": lambda: a.Prices().add("m", input=1, output=1, source=5, as_of="x"),
    "cost_table(prices='x')": lambda: a.cost_table(_result(), prices="x"),
    "cost_table(by=5)": lambda: a.cost_table(_result(), by=5),
    "cost_table(baseline={})": lambda: a.cost_table(_result(), baseline={}),
    "cost_table([])": lambda: a.cost_table([]),
    "cost_table(caching='yes')": lambda: a.cost_table(_result(), caching="yes"),
    "HandoffRoute('r', rules=5)": lambda: a.HandoffRoute("r", rules=5),  # type: ignore[arg-type]
    "stream_sync(a function without on_event)": lambda: a.stream_sync(lambda: 1),
    "Message('banana', 'hi')": lambda: a.Message("banana", "hi"),  # type: ignore[arg-type]
    "GuardrailResult(tripwire='no')": lambda: a.GuardrailResult(tripwire="no"),  # type: ignore[arg-type]
    "run_sync(on_event=<async function>)": lambda: a.run_sync(
        _agent(), "q", on_event=_async_on_event
    ),
}
"""The bad inputs issue 24 (item 5) lists: each a one-line `UserError`, raised at once."""


@pytest.mark.parametrize("call", list(ISSUE_24_ITEM_5), ids=list(ISSUE_24_ITEM_5))
def test_each_bad_input_of_issue_24_is_a_one_line_user_error(call: str) -> None:
    with pytest.raises(a.UserError) as raised:
        ISSUE_24_ITEM_5[call]()
    message = str(raised.value)
    assert "\n" not in message.strip() and message.strip(), message
    assert "got" in message, message


def test_a_guardrail_agent_guarding_itself_ends_the_run_with_a_user_error() -> None:
    result = _guarding_itself()

    assert not result.ok and isinstance(result.error, a.UserError)
    assert "may not guard itself" in str(result.error)
    assert len(result.spans) < 20  # refused at once, not after hundreds of nested spans
