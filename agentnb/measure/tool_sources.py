"""What each source of tools adds to every model call: MCP servers' tool specs, by server.

Every tool spec is resent with every model call, so a server's specs weigh on each request
its agent makes. When an agent starts, the run records on its span what each MCP server's
specs weigh (``attrs["tool_sources"]``, measured by the rule of `agentnb.trace.sizes`); this
table spreads that over the agent's calls: "the filesystem server adds 4,100 characters to
every call" is one row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..errors import UserError

if TYPE_CHECKING:
    import pandas as pd

COLUMNS = (
    "label",
    "source",
    "tools",
    "calls",
    "chars_per_call",
    "chars",
    "share_of_chars_in",
    "tokens_per_call",
    "tokens",
    "share_of_tokens_in",
    "tokens_method",
)


def tool_sources(data: Any) -> pd.DataFrame:
    """One row per (run, tool source): its tools, the model calls that carried them, the
    characters its specs add to each call and over the run, and their share of ``chars_in``;
    the same in tokens, counted by the tokenizer of the calls' ``tokens_in`` (``tokens_method``
    names it; the token columns are empty when no tokenizer is known, as when only the
    provider's usage counts, which cannot tell the specs apart).

    ``data``: a `RunResult`, a list of them, or a dict ``label -> result`` (the label column
    tells them apart; for a list it is the position)."""
    import pandas as pd

    items = data.items() if isinstance(data, Mapping) else enumerate(_listed(data))
    rows: list[dict[str, Any]] = []
    for label, result in items:
        if not hasattr(result, "spans") or not hasattr(result, "calls"):
            raise UserError(
                f"tool_sources takes run results (agentnb.run(...)), got {type(result).__name__}"
            )
        calls = result.calls
        total = int(calls["chars_in"].sum()) if len(calls) else 0
        per_source: dict[str, _Seen] = {}
        for span in result.spans:
            weights = span.attrs.get("tool_sources") if span.kind == "agent" else None
            if not weights:
                continue
            n = int((calls["parent_id"] == span.span_id).sum()) if len(calls) else 0
            for source, weight in weights.items():
                per_source.setdefault(source, _Seen()).add(weight, n)
        for source, seen in per_source.items():
            rows.append({"label": label, "source": source, **seen.row(total, _tokens_in(calls))})
    return pd.DataFrame.from_records(rows, columns=list(COLUMNS))


class _Seen:
    """One source's weight summed over the agent spans that carried it."""

    def __init__(self) -> None:
        self.tools = self.calls = self.chars = 0
        self.tokens: int | None = 0
        self.methods: set[str] = set()

    def add(self, weight: Mapping[str, Any], calls: int) -> None:
        self.tools = max(self.tools, weight["tools"])
        self.calls += calls
        self.chars += calls * weight["chars"]
        tokens = weight.get("tokens")  # absent from traces recorded before tokens were
        self.methods.add(str(weight.get("tokens_method") or "unavailable"))
        self.tokens = (
            None if tokens is None or self.tokens is None else self.tokens + calls * tokens
        )

    def row(self, chars_in: int, tokens_in: int | None) -> dict[str, Any]:
        def per(total: int) -> float:
            return total / self.calls if self.calls else 0.0

        tokens = self.tokens
        return {
            "tools": self.tools,
            "calls": self.calls,
            "chars_per_call": per(self.chars),
            "chars": self.chars,
            "share_of_chars_in": self.chars / chars_in if chars_in else 0.0,
            "tokens_per_call": None if tokens is None else per(tokens),
            "tokens": tokens,
            "share_of_tokens_in": tokens / tokens_in if tokens is not None and tokens_in else None,
            "tokens_method": ", ".join(sorted(self.methods)),
        }


def _tokens_in(calls: Any) -> int | None:
    if not len(calls) or calls["tokens_in"].isna().any():
        return None
    return int(calls["tokens_in"].sum())


def _listed(data: Any) -> list[Any]:
    return list(data) if isinstance(data, (list, tuple)) else [data]
