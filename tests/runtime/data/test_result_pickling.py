"""A `RunResult` pickles and deep-copies (sweeps on process pools and Dask, caches and stores
depend on it): the agents reduced to `AgentSummary` (names, specs), the context to its
records, and no key anywhere inside."""

from __future__ import annotations

import copy
import pickle

import pytest
from fake_openai_server import FakeOpenAIServer, completion
from secret_scan import KEY

import agentnb as a
from agentnb.runtime.data.result import AgentSummary


def _agent() -> a.Agent:
    def add(
        x: int, y: int
    ) -> int:  # a local function: its tool's argument model is made at run time
        """Add two integers."""
        return x + y

    model = a.ScriptedModel([a.tool_call("add", x=1, y=2), a.say("3")])
    return a.Agent("adder", "Add.", model, [a.tool(add)], description="adds")


def _same(before: a.RunResult, after: a.RunResult) -> None:
    assert (after.ok, after.output, after.usage) == (before.ok, before.output, before.usage)
    assert [(s.kind, s.name, s.status) for s in after.spans] == [
        (s.kind, s.name, s.status) for s in before.spans
    ]
    assert after.calls.equals(before.calls)
    assert after.log_lines() == before.log_lines()
    assert [m.content for m in after.messages] == [m.content for m in before.messages]
    assert after.run_id == before.run_id
    assert isinstance(after.last_agent, AgentSummary)
    assert after.last_agent.name == "adder" and after.last_agent.description == "adds"
    assert [t.name for t in after.last_agent.tools] == ["add"]
    assert after.last_agent.tools[0].parameters["properties"]["x"]["type"] == "integer"
    assert repr(after) == repr(before)


@pytest.mark.parametrize("copier", [lambda r: pickle.loads(pickle.dumps(r)), copy.deepcopy])
def test_a_result_with_a_function_tool_pickles_and_deep_copies(copier):
    result = a.run_sync(_agent(), "go")
    assert result.ok

    _same(result, copier(result))
    assert isinstance(result.last_agent, a.Agent)  # the original keeps its live agent


@pytest.mark.parametrize("copier", [lambda r: pickle.loads(pickle.dumps(r)), copy.deepcopy])
def test_a_streamed_result_pickles_and_deep_copies(copier):
    events = list(a.stream_sync(_agent(), "go", hooks=a.Hooks(), deps=object()))
    result = events[-1].result

    again = copier(result)

    _same(result, again)
    assert again.context is not None and again.context.deps is None  # the live run stays behind
    assert again.context.watchers is None and again.context.root is None
    assert again.context.trace.on_span is None  # nor the hook that sent its spans to the stream


def test_a_failed_runs_error_travels_with_its_attributes():
    def tripped(ctx, agent, text):
        return a.GuardrailResult(tripwire=True, info="no")

    agent = a.Agent("w", "x", a.ScriptedModel([a.say("hi")]), input_guardrails=[tripped])
    result = a.run_sync(agent, "go")
    assert isinstance(result.error, a.GuardrailTripped)

    again = pickle.loads(pickle.dumps(result))

    assert not again.ok and isinstance(again.error, a.GuardrailTripped)
    assert (again.error.guardrail, again.error.stage) == (result.error.guardrail, "input")
    assert str(again.error) == str(result.error)


def test_an_error_that_does_not_pickle_travels_as_its_text():
    class Odd(Exception):
        def __init__(self, *, why: str) -> None:
            super().__init__(why)
            self.lock = __import__("threading").Lock()

    def hook_fails(ctx, agent):
        raise Odd(why="the lock is held")

    class Failing(a.Hooks):
        on_agent_start = staticmethod(hook_fails)  # type: ignore[assignment]

    result = a.run_sync(a.Agent("w", "x", a.ScriptedModel([a.say("hi")])), "go", hooks=Failing())
    assert isinstance(result.error, Odd)

    again = pickle.loads(pickle.dumps(result))

    assert isinstance(again.error, a.AgentRunError) and "Odd: the lock is held" in str(again.error)


def test_a_result_of_a_model_with_a_key_pickles_without_it():
    with FakeOpenAIServer() as server:
        server.script = [completion("hello")]
        model = a.OpenAIModel("fake-model", base_url=server.url, api_key=KEY)
        result = a.run_sync(a.Agent("w", "x", model), "go")
        a.run_sync(model.aclose())

    data = pickle.dumps(result)

    assert result.ok and KEY.encode() not in data and KEY[:8].encode() not in data
    again = pickle.loads(data)
    assert again.output == "hello" and again.last_agent.model == "fake-model"
