"""Make the recording that notebook 08 ships, against a local stub server, not a real model.

The machine that produced notebook 08 had no API key, so instead of ``gpt-4o-mini`` this script
starts the OpenAI-compatible stub of agentnb's test suite (``tests/fake_openai_server.py``) on
127.0.0.1 and runs the notebook's agents through ``agentnb.OpenAIModel`` and the real ``openai``
client. The stub's answers are scripted, and its ``usage`` is its own estimate (characters / 4).

The agents are read from the notebook's cell tagged ``team``, so the recording always matches
what the notebook sends. Run from the repository root::

    .venv/bin/python notebooks/recordings/record_with_stub.py

It writes ``review_gpt-4o-mini.jsonl`` (the recording) and ``review_gpt-4o-mini.calls.csv``
(the recorded run's calls table, which the notebook compares with its replay).
"""

from __future__ import annotations

import json
import math
import os
import sys
from pathlib import Path
from typing import Any

os.environ["AGENTNB_TOKENIZER"] = "off"  # as in the notebook: the same tokens_method column

import nbformat  # noqa: E402

import agentnb  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "tests"))
from fake_openai_server import FakeOpenAIServer, completion  # noqa: E402

NOTEBOOK = HERE.parent / "08_real_endpoint.ipynb"
RECORDING = HERE / "review_gpt-4o-mini.jsonl"
CALLS = RECORDING.with_suffix(".calls.csv")
STUB_KEY = "sk-stub-0123456789abcdef"  # sent to the stub only, to check it is written nowhere
COLUMNS = [
    "agent",
    "path",
    "depth",
    "turn",
    "chars_in",
    "chars_out",
    "tool_calls",
    "provider_tokens_in",
    "provider_tokens_out",
]

ANSWERS = {
    "legal": "needs_changes. A promise of 100% availability is an obligation of result no "
    "supplier can keep, and refunding the whole annual fee for a one-minute outage is out of "
    "proportion.",
    "tax": "acceptable. A refund of fees is a price reduction: issue a credit note and adjust "
    "the VAT; nothing else changes.",
}
SYNTHESIS = (
    "Overall verdict: needs_changes, because the legal reviewer asks for a measured service "
    "level and capped credits while the tax side is acceptable."
)


def team_cell() -> dict[str, Any]:
    """Run the notebook's ``team`` cell and return its names (CLAUSE, TASK, review_team)."""
    notebook = nbformat.read(NOTEBOOK, as_version=4)
    (cell,) = [c for c in notebook.cells if "team" in c.metadata.get("tags", [])]
    names: dict[str, Any] = {"agentnb": agentnb}
    exec(compile(cell.source, f"{NOTEBOOK.name}[team]", "exec"), names)
    return names


def tokens(text: str) -> int:
    return max(1, math.ceil(len(text) / 4))


def reply(body: dict[str, Any]) -> dict[str, Any]:
    """The stub's answer, chosen by who asks (the system prompt) and what it has read."""
    messages = body["messages"]
    system = messages[0]["content"] if messages[0]["role"] == "system" else ""
    prompt = tokens(json.dumps(messages) + json.dumps(body.get("tools", [])))
    if system.startswith("Ask the legal"):  # the coordinator
        if not any(m["role"] == "tool" for m in messages):
            args = {"input": "Review the clause.", "artifacts": ["clause"]}
            calls = [("legal", args), ("tax", args)]
            return completion(
                tool_calls=calls,
                call_ids=["call_legal", "call_tax"],
                prompt_tokens=prompt,
                completion_tokens=tokens(json.dumps(calls)),
                model="local-stub",
            )
        return completion(
            SYNTHESIS, prompt_tokens=prompt, completion_tokens=tokens(SYNTHESIS), model="local-stub"
        )
    who = "legal" if "legal risk" in system else "tax"
    return completion(
        ANSWERS[who],
        prompt_tokens=prompt,
        completion_tokens=tokens(ANSWERS[who]),
        model="local-stub",
    )


def main() -> None:
    names = team_cell()
    with FakeOpenAIServer(reply) as server:
        live = agentnb.OpenAIModel("gpt-4o-mini", base_url=server.url, api_key=STUB_KEY)
        recorder = agentnb.record(live, RECORDING)
        result = agentnb.run_sync(
            names["review_team"](recorder), names["TASK"], artifacts={"clause": names["CLAUSE"]}
        )
    if not result.ok:
        raise SystemExit(f"the recorded run failed: {result.error}")
    result.calls[COLUMNS].to_csv(CALLS, index=False)
    written = RECORDING.read_text(encoding="utf-8") + CALLS.read_text(encoding="utf-8")
    if STUB_KEY in written or "sk-" in written:
        raise SystemExit("a key reached the recording: do not commit it")
    print(
        f"{recorder.calls} calls recorded to {RECORDING.relative_to(ROOT)}; output: {result.output}"
    )


if __name__ == "__main__":
    main()
