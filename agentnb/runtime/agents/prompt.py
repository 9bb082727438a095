"""Prompt sections: instructions assembled from reusable, conditional parts.

Shared sections (an output format, a list of constraints) are written once and reused by many
agents. Because each one is resent on every model call of every agent that uses it, the runner
records what each section weighs (`section_sizes`), so `agentnb.measure.section_costs` can say
which shared section costs what across a hierarchy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ... import checks
from ...errors import UserError
from ...trace.sizes import escaped_length

SEPARATOR = "\n\n"
"""What goes between two sections of an assembled prompt."""

SEPARATORS_LABEL = "(separators)"
"""The label under which `section_sizes` counts the separators."""


@dataclass(frozen=True)
class PromptSection:
    """A headed part of a system prompt; left out when ``condition`` is false."""

    heading: str
    content: str
    condition: bool = True

    def __post_init__(self) -> None:
        checks.text(self.heading, "PromptSection(heading)")
        checks.text(self.content, "PromptSection(content)")
        checks.flag(self.condition, "PromptSection(condition=...)")

    def render(self) -> str:
        return (
            f"## {self.heading}\n{self.content.strip()}" if self.heading else self.content.strip()
        )


def prompt_parts(sections: Iterable[PromptSection | str]) -> list[tuple[str, str]]:
    """The parts that make it into the prompt, as ``(label, rendered text)`` pairs.

    The label is the heading; a plain string (or a section without a heading) is labelled by
    its first line, cut to 40 characters. `assemble_prompt` joins exactly these texts.
    """
    parts: list[tuple[str, str]] = []
    for section in sections:
        if isinstance(section, str):
            text, label = section.strip(), ""
        elif isinstance(section, PromptSection):
            if not section.condition:
                continue
            text, label = section.render(), section.heading
        else:
            raise UserError(
                f"Instructions lists take PromptSection or str items, got {type(section).__name__}"
            )
        if text:
            parts.append((label or _first_line(text), text))
    return parts


def assemble_prompt(sections: Iterable[PromptSection | str]) -> str:
    """Join the sections whose condition holds, separated by blank lines (strings pass as they are)."""
    return SEPARATOR.join(text for _, text in prompt_parts(sections))


def section_sizes(sections: Iterable[PromptSection | str]) -> tuple[tuple[str, int], ...]:
    """What each part of an assembled prompt weighs in "characters sent", in prompt order.

    Characters follow the rule of `agentnb.trace.sizes` (escaped JSON content), which is
    additive over concatenation, so the sizes plus the ``(separators)`` entry sum exactly to
    the ``chars_in_system`` of a call that sends the assembled prompt.
    """
    parts = prompt_parts(sections)
    sizes = [(label, escaped_length(text)) for label, text in parts]
    if len(parts) > 1:
        sizes.append((SEPARATORS_LABEL, escaped_length(SEPARATOR) * (len(parts) - 1)))
    return tuple(sizes)


def _first_line(text: str) -> str:
    line = text.splitlines()[0].strip()
    return line if len(line) <= 40 else line[:39] + "…"
