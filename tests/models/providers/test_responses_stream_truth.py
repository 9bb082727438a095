"""The Responses stream and the result agree, against a hostile server on 127.0.0.1
(tests/fault_server.py): a ``response.completed`` that says other than what was streamed, an
event named only by its SSE ``event:`` line, a completed response whose output or a message's
content is a string, invalid UTF-8 in a stream. Each ends the call with an error that says
what came; none gives ``ok=True`` with an answer the user did not see."""

from __future__ import annotations

import asyncio
import copy
import random
import re
from typing import Any

import pytest
from fault_server import Close, FaultServer, Play, Send, sse_event, sse_head

import agentnb as a
from agentnb.errors import UnreadableReply
from agentnb.models import Backoff
from agentnb.models.http.sse import BadEvent, utf8_lines
from agentnb.models.providers.openai_responses.server import stream_events

KEY = "sk-test-responses-stream-0123456789"


def reply(text: str = "streamed text", call: tuple[str, str] | None = None) -> dict[str, Any]:
    part = {"type": "output_text", "text": text, "annotations": []}
    output: list[dict[str, Any]] = [
        {"type": "message", "id": "m", "role": "assistant", "content": [part]}
    ]
    if call is not None:
        output.append(
            {"type": "function_call", "id": "f", "call_id": "c1", "name": call[0],
             "arguments": call[1]}
        )  # fmt: skip
    usage = {"input_tokens": 10, "output_tokens": 3}
    return {"id": "resp_1", "object": "response", "status": "completed", "output": output,
            "usage": usage}  # fmt: skip


def play(events: list[dict[str, Any]], *, named: bool = True) -> Play:
    return [*sse_head(), *(sse_event(e, e.get("type") if named else None) for e in events), Close()]


def run(plays: list[Play]) -> tuple[a.RunResult, list[str], FaultServer]:
    with FaultServer(plays) as server:
        model = a.OpenAIResponsesModel(
            "m", base_url=server.url + "/v1", api_key=KEY, backoff=Backoff(initial=0.001)
        )
        events = list(a.stream_sync(a.Agent("w", "Be brief.", model), "hello"))
        a.run_sync(model.aclose())
    shown = [e.text for e in events if type(e).__name__ == "TextDelta"]
    return events[-1].result, shown, server


def test_an_honest_stream_gives_what_it_streamed():
    result, shown, server = run([play(stream_events(reply("Hello there, friend.")))])
    assert result.ok and result.output == "Hello there, friend." == "".join(shown)
    assert server.requests[0].json()["stream"] is True


def test_a_completed_text_other_than_the_streamed_one_is_an_error():
    events = stream_events(reply("streamed text that differs"))
    events[-1] = {"type": "response.completed", "response": reply("FINAL TEXT FROM COMPLETED")}
    result, shown, server = run([play(events)])
    assert "".join(shown) == "streamed text that differs"
    assert not result.ok and isinstance(result.error, UnreadableReply)
    assert isinstance(result.error, a.ModelBehaviorError)
    assert "other than the 26 streamed" in str(result.error)
    assert "FINAL TEXT" not in (result.output or "")
    assert server.seen == 1  # not retried: the same server would say it again


def test_completed_function_call_arguments_other_than_streamed_are_an_error():
    events = stream_events(reply("ok", call=("add", '{"x":1}')))
    events[-1] = {"type": "response.completed", "response": reply("ok", call=("add", '{"x":9}'))}
    result, _, _ = run([play(events)])
    assert not result.ok and isinstance(result.error, UnreadableReply)
    assert "function calls ['add']" in str(result.error)


def test_an_event_without_a_type_is_refused_not_read_by_its_event_line():
    events = stream_events(reply("in the output"))
    sneaked = {"delta": "NOT IN THE OUTPUT", "output_index": 0}
    body = [*sse_head()]
    for event in events:
        body.append(sse_event(event, event["type"]))
        if event["type"] == "response.output_item.added":
            body.append(sse_event(sneaked, "response.output_text.delta"))
    result, shown, server = run([[*body, Close()]])
    assert "NOT IN THE OUTPUT" not in "".join(shown)
    assert not result.ok and "each event of a Responses stream names itself" in str(result.error)
    assert server.seen == 1


def test_an_event_whose_line_and_type_disagree_is_refused():
    events = stream_events(reply("hello"))
    body = [*sse_head(), *(sse_event(e, "response.output_text.delta") for e in events), Close()]
    result, shown, _ = run([body])
    assert not result.ok and shown == [] and "SSE event" in str(result.error)


def test_events_without_event_lines_are_read_by_their_type():
    result, shown, _ = run([play(stream_events(reply("no event lines")), named=False)])
    assert result.ok and result.output == "no event lines" == "".join(shown)


@pytest.mark.parametrize("where", ["output", "content", "text"])
def test_a_completed_response_with_a_string_where_a_list_goes_is_an_error(where):
    events = stream_events(reply("the text"))
    bad = copy.deepcopy(reply("the text"))
    if where == "output":
        bad["output"] = "the text"
    elif where == "content":
        bad["output"][0]["content"] = "the text"
    else:
        bad["output"][0]["content"][0]["text"] = ["the text"]
    events[-1] = {"type": "response.completed", "response": bad}
    result, shown, _ = run([play(events)])
    assert "".join(shown) == "the text"
    assert not result.ok and isinstance(result.error, UnreadableReply), result.error
    assert "not a list" in str(result.error) or "not a string" in str(result.error)


def test_invalid_utf8_in_a_stream_is_refused_as_in_a_whole_reply():
    events = stream_events(reply("caf-"))
    body = [*sse_head()]
    body += [Send(sse_event(e, e["type"]).data.replace(b"caf-", b"caf\xe9")) for e in events]
    result, shown, _ = run([[*body, Close()]])
    assert not result.ok and "not valid UTF-8" in str(result.error)
    assert not any("\ufffd" in text for text in shown)


def test_lines_are_split_as_the_spec_says_wherever_the_chunks_break():
    rng = random.Random(7)

    async def lines(chunks: list[bytes]) -> list[str]:
        async def given() -> Any:
            for chunk in chunks:
                yield chunk

        return [line async for line in utf8_lines(given())]

    for _ in range(2000):
        pieces = ["a", "é", "\n", "\r", "\r\n", "data: x", "€"]
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12))).encode()
        cuts = sorted(rng.sample(range(len(text) + 1), min(len(text) + 1, rng.randint(0, 5))))
        chunks = [text[i:j] for i, j in zip([0, *cuts], [*cuts, len(text)], strict=True)]
        want = re.split(r"\r\n|\r|\n", text.decode())
        assert asyncio.run(lines(chunks)) == (want[:-1] if want[-1] == "" else want)
    with pytest.raises(BadEvent, match="not valid UTF-8"):
        asyncio.run(lines([b"data: ok\n", b"data: caf\xc3"]))  # cut inside a character


@pytest.fixture(autouse=True)
def _no_counting(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("AGENTNB_TOKENIZER", "off")
