"""`ModelSettings`: sampling and tool-choice settings sent with a model call.

Provider-neutral: each wire module maps the fields it can honour to its provider's names, and
raises `UserError` before any request for one it cannot (Anthropic has no ``seed``). A field
left ``None`` is not sent at all, so the provider's own default applies.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from .. import checks
from ..errors import UserError
from .request_fields import check_extra

TOOL_CHOICES = ("auto", "required", "none")
"""The tool choices every provider understands; any other string names the tool to call."""


@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Settings for a model call; ``None`` means "not set" (the provider's default).

    ``Agent(model_settings=...)`` sets them for an agent; ``run(..., model_settings=...)``
    overrides them field by field for every agent of the run.
    """

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    """The answer's token limit (``max_tokens`` / ``max_completion_tokens`` on the wire)."""
    tool_choice: str | None = None
    """``"auto"``, ``"required"``, ``"none"``, or a tool's name to force that tool. A forced
    choice applies to one turn: after the model calls a tool, the next turn is ``"auto"``."""
    parallel_tool_calls: bool | None = None
    seed: int | None = None
    stop: tuple[str, ...] | None = None
    """Stop sequences (a single string is accepted and kept as a one-item tuple)."""
    extra: Mapping[str, Any] | None = None
    """Fields passed to the provider's request body as they are (after the mapped ones)."""

    def __post_init__(self) -> None:
        checks.number(self.temperature, "ModelSettings(temperature=...)", least=0, optional=True)
        checks.number(self.top_p, "ModelSettings(top_p=...)", least=0, optional=True)
        checks.positive_int(self.max_tokens, "ModelSettings(max_tokens=...)")
        checks.integer(self.seed, "ModelSettings(seed=...)", optional=True)
        if self.tool_choice is not None and (
            not isinstance(self.tool_choice, str) or not self.tool_choice
        ):
            raise checks.fail(
                "ModelSettings(tool_choice=...)",
                f"one of {', '.join(TOOL_CHOICES)} or a tool's name",
                self.tool_choice,
            )
        checks.flag(
            self.parallel_tool_calls, "ModelSettings(parallel_tool_calls=...)", optional=True
        )
        stop = self.stop
        if isinstance(stop, str):
            object.__setattr__(self, "stop", (stop,))
        elif stop is not None:
            if not isinstance(stop, (list, tuple)) or not all(isinstance(s, str) for s in stop):
                raise checks.fail("ModelSettings(stop=...)", "a string or a list of strings", stop)
            object.__setattr__(self, "stop", tuple(stop))
        checks.mapping(self.extra, "ModelSettings(extra=...)")
        check_extra(self.extra, "ModelSettings(extra=...)", settings=True)
        if self.extra is not None:
            object.__setattr__(self, "extra", dict(self.extra))

    def merged(self, override: ModelSettings | None) -> ModelSettings:
        """These settings with every field ``override`` sets replaced (``extra`` dicts merged)."""
        if override is None:
            return self
        changes = {
            f.name: getattr(override, f.name)
            for f in fields(override)
            if getattr(override, f.name) is not None
        }
        if self.extra and override.extra:
            changes["extra"] = {**self.extra, **override.extra}
        return replace(self, **changes) if changes else self

    @property
    def forces_tool(self) -> bool:
        """Whether the tool choice makes the model call a tool (``"required"`` or a name)."""
        return self.tool_choice is not None and self.tool_choice not in ("auto", "none")

    def __repr__(self) -> str:  # only what is set: most fields are None
        shown = ", ".join(
            f"{f.name}={getattr(self, f.name)!r}"
            for f in fields(self)
            if getattr(self, f.name) is not None
        )
        return f"ModelSettings({shown})"

    def __hash__(self) -> int:  # ``extra`` is a dict: hash what identifies the settings
        return hash(tuple(repr(getattr(self, f.name)) for f in fields(self)))


def check_settings(value: Any, where: str) -> ModelSettings | None:
    """``value`` as settings, or a `UserError` naming ``where`` they were given."""
    if value is None or isinstance(value, ModelSettings):
        return value
    raise checks.fail(where, "agentnb.ModelSettings(...) or None", value)


def unsupported(provider: str, field: str, value: Any, hint: str = "") -> UserError:
    """The error for a setting a provider cannot honour (raised before any request)."""
    return UserError(
        f"{provider} cannot honour ModelSettings({field}={value!r}){': ' + hint if hint else ''}. "
        "Remove it from the agent's or the run's model_settings."
    )
