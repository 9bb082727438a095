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

COLUMNS = ("label", "source", "tools", "calls", "chars_per_call", "chars", "share_of_chars_in")


def tool_sources(data: Any) -> pd.DataFrame:
    """One row per (run, tool source): its tools, the model calls that carried them, the
    characters its specs add to each call and over the run, and their share of ``chars_in``.

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
        per_source: dict[str, dict[str, int]] = {}
        for span in result.spans:
            weights = span.attrs.get("tool_sources") if span.kind == "agent" else None
            if not weights:
                continue
            n = int((calls["parent_id"] == span.span_id).sum()) if len(calls) else 0
            for source, weight in weights.items():
                seen = per_source.setdefault(source, {"tools": 0, "calls": 0, "chars": 0})
                seen["tools"] = max(seen["tools"], weight["tools"])
                seen["calls"] += n
                seen["chars"] += n * weight["chars"]
        for source, seen in per_source.items():
            rows.append(
                {
                    "label": label,
                    "source": source,
                    "tools": seen["tools"],
                    "calls": seen["calls"],
                    "chars_per_call": seen["chars"] / seen["calls"] if seen["calls"] else 0.0,
                    "chars": seen["chars"],
                    "share_of_chars_in": seen["chars"] / total if total else 0.0,
                }
            )
    return pd.DataFrame.from_records(rows, columns=list(COLUMNS))


def _listed(data: Any) -> list[Any]:
    return list(data) if isinstance(data, (list, tuple)) else [data]
