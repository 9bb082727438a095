"""Prompt sections: instructions assembled from reusable, conditional parts."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..errors import UserError


@dataclass(frozen=True)
class PromptSection:
    """A headed part of a system prompt; left out when ``condition`` is false."""

    heading: str
    content: str
    condition: bool = True

    def render(self) -> str:
        return (
            f"## {self.heading}\n{self.content.strip()}" if self.heading else self.content.strip()
        )


def assemble_prompt(sections: Iterable[PromptSection | str]) -> str:
    """Join the sections whose condition holds, separated by blank lines (strings pass as they are)."""
    parts = []
    for section in sections:
        if isinstance(section, str):
            parts.append(section.strip())
        elif isinstance(section, PromptSection):
            if section.condition:
                parts.append(section.render())
        else:
            raise UserError(
                f"Instructions lists take PromptSection or str items, got {type(section).__name__}"
            )
    return "\n\n".join(p for p in parts if p)
