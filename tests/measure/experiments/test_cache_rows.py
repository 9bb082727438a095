"""A cached answer is held to what a model's answer is held to: a damaged or edited row is
never served; the model is asked again, the fresh answer replaces the row, and the call says
why (issue 32, point 6). Scores from numpy count like Python's (point 7)."""

from __future__ import annotations

import hashlib
import json
import sqlite3

import numpy as np
import pytest
from fake_openai_server import FakeOpenAIServer, completion

import agentnb as a
from agentnb.models import Backoff


def numbered(body, headers=None):
    numbered.n += 1  # type: ignore[attr-defined]
    return completion(f"answer {numbered.n}")  # type: ignore[attr-defined]


def lookup(city: str) -> str:
    """Look a city up."""
    return f"looked up {city}"


def answer(text: str | None = None, **more) -> dict:
    return {"text": text, "tool_calls": [], "usage": {}, "stop_reason": "stop", **more}


def sealed(text: str) -> tuple[str, str]:
    """A row's text and a checksum that matches it (an edit made by someone who knew how)."""
    return text, hashlib.sha256(text.encode()).hexdigest()


EDITS = {
    "checksum does not match": ("", None),
    "no checksum": ("", "null"),
    "not JSON": sealed("{not json"),
    "a list, not an object": sealed("[1, 2]"),
    "empty answer": sealed("{}"),
    "text not a string": sealed(json.dumps(answer(text=5))),
    "longer than max_response_chars": sealed(json.dumps(answer("x" * 5_000))),
    "a tool the request did not offer": sealed(
        json.dumps(answer(tool_calls=[{"name": "delete_everything", "arguments": "{}"}]))
    ),
    "a tool call without a name": sealed(json.dumps(answer(tool_calls=[{"arguments": "{}"}]))),
    "usage not a count": sealed(json.dumps(answer("hi", usage={"input_tokens": "many"}))),
}


@pytest.mark.parametrize("text, digest", list(EDITS.values()), ids=list(EDITS))
async def test_a_damaged_or_edited_cache_row_is_asked_again_never_served(tmp_path, text, digest):
    store = tmp_path / "x.db"
    numbered.n = 0  # type: ignore[attr-defined]
    with FakeOpenAIServer(numbered) as server:

        async def fn(k: int, trial: int) -> a.RunResult:
            model = a.OpenAIModel(
                "gpt-4o-mini",
                base_url=server.url,
                api_key="sk-x",
                backoff=Backoff(jitter=0.0),
                max_response_chars=1_000,
            )
            return await a.run(a.Agent("w", "W.", model, tools=[lookup]), "Say hello.")

        async def experiment(version: str):
            return await a.experiment(
                "c", fn, {"k": [1]}, store=store, cache=True, resume=version, progress=False
            )

        first = await experiment(None)
        with sqlite3.connect(store) as conn:
            if digest is None:  # the text edited, its checksum left as it was
                conn.execute("UPDATE responses SET response = replace(response, '1', '7')")
            elif digest == "null":
                conn.execute("UPDATE responses SET checksum = NULL")
            else:
                conn.execute("UPDATE responses SET response = ?, checksum = ?", (text, digest))
        again = await experiment("new")
        assert len(server.bodies) == 2  # asked again
        assert server.bodies[0] == server.bodies[1]  # the same request
        third = await experiment("new")
        assert len(server.bodies) == 2  # the fresh answer replaced the row, and is served

    assert first.runs["ok"].all() and list(first.calls["cached"]) == [False]
    runs = again.runs
    assert runs["ok"].all() and list(again.calls["cached"]) == [False]
    assert runs["calls"].tolist() == [1] and runs["tool_errors"].tolist() == [0]
    call = again.spans.query("kind == 'model_call'").iloc[0]
    refused = [e for e in call["attrs"]["events"] if e["event"] == "cache_refused"]
    assert len(refused) == 1 and refused[0]["refetched"] is True and refused[0]["reason"]
    assert list(third.calls["cached"]) == [True]
    with sqlite3.connect(store) as conn:
        (stored,) = conn.execute("SELECT response FROM responses").fetchall()
    assert json.loads(stored[0])["text"] == "answer 2"


async def test_a_score_from_numpy_counts_like_pythons(tmp_path):
    values = {
        "bool_": np.bool_(True),
        "int64": np.int64(3),
        "float32": np.float32(0.5),
        "all": (np.array([1, 2]) > 0).all(),
    }

    async def fn(kind: str, trial: int) -> a.RunResult:
        return await a.run(a.Agent("s", "A.", a.ScriptedModel([a.say(kind)])), "q")

    def score(run, kind: str, trial: int):
        assert run.output == kind  # scored on its own run
        return values[kind]

    exp = await a.experiment(
        "n", fn, {"kind": list(values)}, score=score, store=tmp_path / "x.db", progress=False
    )
    runs = exp.history().set_index("kind")
    assert runs["score_error"].isna().all(), list(runs["score_error"])
    assert list(runs["score"]) == [1.0, 3.0, 0.5, 1.0]
    bools = await a.experiment(
        "b",
        fn,
        {"kind": ["bool_", "all"]},
        score=score,
        store=tmp_path / "x.db",
        progress=False,
    )
    assert list(bools.runs["score"]) == [True, True]  # pass/fail stays a bool
