"""``ttfb_s``: the time to the first byte of a call's answer, for calls that are not streamed.

Against servers on 127.0.0.1 that hold their headers, their body or both. No assertion depends
on how fast the machine is: each compares times the server's own waits order (headers held
``before`` seconds come at least that late; a body held until the client has read the headers,
then ``after`` seconds more, ends the call at least that long after them).
"""

from __future__ import annotations

import json
import math
import threading
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from fake_openai_server import FakeOpenAIServer, Reply, completion

import agentnb as a
from agentnb.models import Backoff
from agentnb.models.http import first_byte

KEY = "sk-test-" + uuid.uuid4().hex
WAIT_LIMIT_S = 30.0
"""The most a held reply waits for the client (a bound, never reached when the test passes)."""


@dataclass
class Held:
    """A 200 JSON reply whose headers wait ``before`` seconds, and whose body waits for
    ``release`` (when given) and then ``after`` seconds. With ``one_at_a_time`` (a lock), the
    server answers one request at a time, as a server with one slot does; with ``arrived``
    (a barrier), not before the others have arrived."""

    body: dict[str, Any]
    before: float = 0.0
    after: float = 0.0
    release: threading.Event | None = None
    one_at_a_time: Any = None
    arrived: threading.Barrier | None = None
    """Answered only once every request the barrier counts has arrived."""
    headers_sent: list[float] = field(default_factory=list)

    def write_to(self, handler: Any) -> None:
        lock = self.one_at_a_time or threading.Lock()
        payload = json.dumps(self.body).encode()
        try:
            if self.arrived is not None:
                self.arrived.wait()
            with lock:
                time.sleep(self.before)
                self.headers_sent.append(time.perf_counter())  # as they go: none can come earlier
                handler.send_response(200)
                handler.send_header("Content-Type", "application/json")
                handler.send_header("Content-Length", str(len(payload)))
                handler.end_headers()
                handler.wfile.flush()
                if self.release is not None:
                    self.release.wait(WAIT_LIMIT_S)
                time.sleep(self.after)
                handler.wfile.write(payload)
                handler.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass


def gpt(server: FakeOpenAIServer, **options: Any) -> a.OpenAIModel:
    fast = Backoff(initial=0.001, jitter=0.0)
    return a.OpenAIModel("fake-model", base_url=server.url, api_key=KEY, backoff=fast, **options)


def test_a_call_not_streamed_is_timed_to_its_headers_not_to_its_body(monkeypatch):
    headers_read = threading.Event()
    stamped: list[float] = []
    stamp = first_byte.stamp

    async def stamp_and_tell(response: Any) -> None:  # agentnb's hook, then the server is told
        await stamp(response)
        stamped.append(time.perf_counter())
        headers_read.set()

    monkeypatch.setattr(first_byte, "stamp", stamp_and_tell)
    reply = Held(completion("Clause 4 is fine."), before=0.2, after=0.3, release=headers_read)
    with FakeOpenAIServer([_reply(reply)]) as server:
        result = a.run_sync(a.Agent("legal", "Review.", gpt(server)), "Clause 4?")

    assert result.ok, result.error
    row = result.calls.iloc[0]
    assert server.bodies[0]["messages"][-1] == {"role": "user", "content": "Clause 4?"}
    assert len(stamped) == 1 and stamped[0] >= reply.headers_sent[0]
    assert not math.isnan(row["ttfb_s"])
    assert row["ttfb_s"] >= reply.before  # the headers were held that long
    # the body came only after the client had read the headers, and `after` seconds later
    assert row["latency_s"] - row["ttfb_s"] >= reply.after
    assert row["ttft_s"] != row["ttft_s"]  # not streamed: no first token


def test_a_queue_at_the_server_shows_in_ttfb_not_in_wait():
    one_slot, both_arrived = threading.Lock(), threading.Barrier(2, timeout=WAIT_LIMIT_S)
    held = 0.2

    def answer(body: dict[str, Any]) -> Any:
        asked = body["messages"][-1]["content"]
        reply = Held(completion(f"On {asked}: fine."), before=held, one_at_a_time=one_slot)
        reply.arrived = both_arrived
        return _reply(reply)

    coordinator = a.ScriptedModel(
        [
            [a.tool_call("legal", input="clause 4"), a.tool_call("tax", input="clause 9")],
            a.say("ok"),
        ]
    )
    with FakeOpenAIServer(answer) as server:
        model = gpt(server, max_concurrency=2)  # the client sends both at once
        experts = [a.Agent(n, "Review.", model) for n in ("legal", "tax")]
        lead = a.Agent("lead", "Ask both.", coordinator, [e.as_tool() for e in experts])
        result = a.run_sync(lead, "Review the contract.")

    assert result.ok, result.error
    assert sorted(b["messages"][-1]["content"] for b in server.bodies) == ["clause 4", "clause 9"]
    subs = result.calls[result.calls["depth"] == 1]
    assert sorted(subs["agent"]) == ["legal", "tax"]
    assert (subs["wait_s"] == 0).all()  # nothing waited on the client
    assert (subs["ttfb_s"] <= subs["latency_s"]).all() and (subs["ttfb_s"] >= held).all()
    # both had arrived before either was answered, then one after the other: the second
    # began answering after both holds, and the table shows it as time to first byte
    assert subs["ttfb_s"].max() >= 2 * held


def test_a_client_given_by_the_user_is_not_timed_and_says_so():
    import openai

    with FakeOpenAIServer([completion("Fine.")]) as server:
        client = openai.AsyncOpenAI(api_key=KEY, base_url=server.url)
        model = a.OpenAIModel("fake-model", client=client)
        result = a.run_sync(a.Agent("legal", "Review.", model), "Clause 4?")

    assert result.ok, result.error
    assert server.bodies[0]["messages"][-1]["content"] == "Clause 4?"
    assert math.isnan(result.calls.iloc[0]["ttfb_s"])


def _reply(held: Held) -> Reply:
    return Reply(200, held)  # a body that writes itself, as `Streamed` does
