"""Which prompt section costs what: system-prompt characters attributed to their sections.

A section shared by many agents (an output format, a list of constraints) is written once but
resent on every model call of every agent that uses it. The runner records, on each agent span,
what each section of that agent's prompt weighs (`agentnb.runtime.agents.prompt.section_sizes`); here
every model call's ``chars_in_system`` is split along those sections. Agents whose instructions
are a plain string (or a callable) show as one row labelled ``(instructions)``.

The attribution is exact: per call, the sections plus ``(separators)`` add up to
``chars_in_system``, so the table's ``total_chars`` sums to ``calls["chars_in_system"].sum()``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    import pandas as pd

WHOLE_PROMPT = "(instructions)"
"""The label of a prompt that was not assembled from sections."""

AGENT_COLUMNS = ["agent", "path", "section", "chars_per_call", "calls", "total_chars", "share"]
SECTION_COLUMNS = ["section", "agents", "chars_per_call", "calls", "total_chars", "share"]


def section_costs(result: Any, *, by: Literal["agent", "section"] = "agent") -> pd.DataFrame:
    """System-prompt characters of a run, per prompt section.

    ``by="agent"``: one row per (agent, path, section) in prompt order, with the characters the
    section adds to each call, how many calls sent it, the total, and its ``share`` of all
    system-prompt characters of the run.
    ``by="section"``: one row per section across the hierarchy (most expensive first), with the
    agents that use it: a section shared by five agents shows its full cost here. Sections
    are told apart by heading, so give shared ones a heading no other section uses.
    """
    import pandas as pd

    if by not in ("agent", "section"):
        raise ValueError(f"by must be 'agent' or 'section', got {by!r}")
    trace = result.trace
    sections = {s.span_id: s.attrs.get("prompt_sections") for s in trace.spans if s.kind == "agent"}
    rows: dict[tuple[str, str, str], dict[str, Any]] = {}
    for call in trace.call_rows:
        if result.path is not None and not _under(call.path, result.path):
            continue
        parts: dict[str, int] = {}
        for label, chars in sections.get(call.parent_id) or ((WHOLE_PROMPT, call.chars_in_system),):
            parts[label] = parts.get(label, 0) + chars  # two sections may share a heading
        for label, chars in parts.items():
            key = (call.agent, call.path, label)
            row = rows.get(key)
            if row is None:
                row = rows[key] = {
                    "agent": key[0],
                    "path": key[1],
                    "section": label,
                    "order": len(rows),
                    "calls": 0,
                    "total_chars": 0,
                }
            row["calls"] += 1
            row["total_chars"] += chars
    frame = pd.DataFrame(list(rows.values()), columns=["order", *AGENT_COLUMNS])
    grand_total = frame["total_chars"].sum()
    if by == "section":
        frame = (
            frame.groupby("section", sort=False)
            .agg(
                agents=("agent", lambda names: ", ".join(dict.fromkeys(names))),
                calls=("calls", "sum"),
                total_chars=("total_chars", "sum"),
            )
            .reset_index()
            .sort_values("total_chars", ascending=False, kind="stable")
        )
        columns = SECTION_COLUMNS
    else:
        columns = AGENT_COLUMNS
    frame["chars_per_call"] = _per_call(frame["total_chars"], frame["calls"])
    frame["share"] = frame["total_chars"] / grand_total if grand_total else 0.0
    return frame[columns].reset_index(drop=True)


def _per_call(total: pd.Series, calls: pd.Series) -> pd.Series:
    # Whole characters when every call sent the same size (the usual case), else the mean.
    per_call = total / calls.where(calls > 0)
    if bool((total % calls.where(calls > 0) == 0).all()):
        return per_call.astype("int64")
    return per_call


def _under(path: str, prefix: str) -> bool:
    return path == prefix or path.startswith(prefix + "/")
