"""Verifier rounds: for each round of a writer–verifier cycle, the outcome, the problems and
what the round cost in characters sent.

Two sources give the same table. A `verify_loop` result carries its rounds already. A plain
run in which the writer calls the verifier as a tool (the article's setup) is read from its
trace: round *n* is the *n*-th call of the verifier tool; its cost is the writer's model call
that produced the draft plus the verifier's own calls.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import UserError

if TYPE_CHECKING:
    import pandas as pd

ROUND_COLUMNS = [
    "round",
    "outcome",
    "problems",
    "n_problems",
    "chars_writer",
    "chars_verifier",
    "chars_in",
    "draft",
]

_ALIASES = {
    "chars": "chars_in",
    "characters": "chars_in",
    "chars_sent": "chars_in",
    "characters_sent": "chars_in",
    "number": "round",
    "index": "round",
}


def verifier_table(source: Any, *, tool: str | None = None) -> pd.DataFrame:
    """One row per verifier round: ``round`` (from 1), ``outcome``, ``problems`` (a list),
    ``n_problems``, characters sent in that round by the writer, by the verifier and in all
    (``chars_writer``, ``chars_verifier``, ``chars_in``), and the ``draft``.

    ``source``: a `verify_loop` result (anything with ``.rounds``), a list of round records,
    or a `RunResult` whose writer called the verifier as the tool ``tool`` (found by itself
    when the run called exactly one sub-agent tool).
    """
    import pandas as pd

    if hasattr(source, "trace") and not hasattr(source, "rounds"):
        records = _from_trace(source, tool)
    else:
        rounds = getattr(source, "rounds", source)
        if isinstance(rounds, pd.DataFrame):
            rounds = rounds.to_dict("records")
        if not isinstance(rounds, (list, tuple)):
            raise UserError(
                "verifier_table takes a verify_loop result, a list of rounds, or a RunResult "
                f"in which a verifier was called as a tool; got {type(source).__name__}"
            )
        records = [_record(r, n) for n, r in enumerate(rounds, start=1)]
    frame = pd.DataFrame.from_records(records, columns=ROUND_COLUMNS)
    return frame


def _record(item: Any, number: int) -> dict[str, Any]:
    if dataclasses.is_dataclass(item) and not isinstance(item, type):
        # shallow: a round may hold whole RunResults, which asdict() would deep-copy
        raw = {f.name: getattr(item, f.name) for f in dataclasses.fields(item)}
        for name in ("chars_writer", "chars_verifier", "chars_sent", "chars_in"):
            if name not in raw and hasattr(item, name):
                raw[name] = getattr(item, name)
    elif hasattr(item, "model_dump"):
        raw = item.model_dump()
    elif hasattr(item, "_asdict"):
        raw = item._asdict()
    elif isinstance(item, Mapping):
        raw = dict(item)
    else:
        raw = dict(vars(item))
    raw = {_ALIASES.get(k, k): v for k, v in raw.items()}
    verification = raw.get("verification")  # a nested Verification(outcome, problems)
    if verification is not None and "outcome" not in raw:
        raw.update(_record(verification, number))
    problems = list(raw.get("problems") or [])
    return {
        "round": raw.get("round", number),
        "outcome": raw.get("outcome"),
        "problems": problems,
        "n_problems": len(problems),
        "chars_writer": raw.get("chars_writer"),
        "chars_verifier": raw.get("chars_verifier"),
        "chars_in": raw.get("chars_in"),
        "draft": raw.get("draft"),
    }


def _from_trace(result: Any, tool: str | None) -> list[dict[str, Any]]:
    spans = result.trace.spans
    by_id = {s.span_id: s for s in spans}
    sub_tools = [
        s
        for s in spans
        if s.kind == "agent" and s.parent_id in by_id and by_id[s.parent_id].kind == "tool_call"
    ]
    names = sorted({by_id[s.parent_id].name for s in sub_tools})
    if tool is None:
        if len(names) != 1:
            raise UserError(
                f"Say which tool is the verifier: verifier_table(result, tool=...); the run "
                f"called the sub-agent tools {names}"
            )
        tool = names[0]
    calls = [s for s in spans if s.kind == "tool_call" and s.name == tool]
    if not calls:
        raise UserError(f"The run never called a tool named {tool!r}; sub-agent tools: {names}")
    rows = result.trace.call_rows
    answers = {
        m.tool_call_id: m.content for m in getattr(result, "messages", []) if m.role == "tool"
    }
    asked = {c.id: c.arguments for m in getattr(result, "messages", []) for c in m.tool_calls}
    records = []
    for number, span in enumerate(calls, start=1):
        below = f"{span.path}/{tool}"
        writer = [r for r in rows if r.path == span.path and r.turn == span.attrs.get("turn")]
        verifier = [
            r
            for r in rows
            if (r.path == below or r.path.startswith(below + "/"))
            and span.started <= r.started <= (span.ended or r.started)
        ]
        call_id = span.attrs.get("call_id")
        verdict = _parse(answers.get(call_id))
        draft = _parse(asked.get(call_id))
        problems = list(verdict.get("problems") or [])
        records.append(
            {
                "round": number,
                "outcome": verdict.get("outcome"),
                "problems": problems,
                "n_problems": len(problems),
                "chars_writer": sum(r.chars_in for r in writer),
                "chars_verifier": sum(r.chars_in for r in verifier),
                "chars_in": sum(r.chars_in for r in writer + verifier),
                "draft": draft.get("input") if draft else None,
            }
        )
    return records


def _parse(text: str | None) -> dict[str, Any]:
    if not text:
        return {}
    try:
        value = json.loads(text)
    except (json.JSONDecodeError, TypeError):
        return {}
    return value if isinstance(value, dict) else {}
