"""FanOut, ChainResult and VerifyResult share one meaning of calls, spans, chars_in."""

from __future__ import annotations

from agentnb import Agent, ScriptedModel, chain, parallel, say, verify_loop
from agentnb.patterns.result import PatternResult
from agentnb.trace import CALL_COLUMNS, Span


async def test_every_pattern_result_reads_its_runs_as_one() -> None:
    def agent(name: str, *replies: object) -> Agent:
        return Agent(name, f"You are {name}.", model=ScriptedModel(list(replies)))

    fan = await parallel([agent("a", say("x")), agent("b", say("y"))], "q")
    stages = await chain([agent("s1", say("one")), agent("s2", say("two"))], "q")
    checked = await verify_loop(
        agent("w", say("draft")), agent("v", say('{"outcome":"approved"}')), "task"
    )
    for result, keys in [(fan, ["branch"]), (stages, ["stage"]), (checked, ["round", "role"])]:
        assert isinstance(result, PatternResult)
        runs = list(result.parts().values())
        assert list(result.calls.columns) == [*keys, *CALL_COLUMNS]
        assert len(result.calls) == result.model_calls == sum(r.model_calls for r in runs) == 2
        assert result.chars_in == sum(r.chars_in for r in runs) == result.calls["chars_in"].sum()
        assert all(isinstance(s, Span) for s in result.spans)
        assert result.spans == [s for r in runs for s in r.spans]
        assert list(result.spans_frame().columns[: len(keys)]) == keys


async def test_a_cached_calls_frame_follows_calls_added_later() -> None:
    fan = await parallel([Agent("a", "A.", model=ScriptedModel([say("x")]))], "q")
    first = fan.calls
    assert fan.calls is first  # cached while nothing changed
    fan.results["a"].trace.call_rows.append(fan.results["a"].trace.call_rows[0])
    assert len(fan.calls) == 2
