"""Signatures that list their keywords: ``**options: Unpack[SomeOptions]`` shown as the options.

A run's keyword options are defined once (`RunKeywords`, the fields of `RunOptions`; an agent
tool's in `AsToolOptions`), and every entry point takes them as ``**options``, which a type
checker reads but `inspect.signature`, `help` and Jupyter's Shift-Tab show only as
``**options``. `lists_keywords` gives such a function a ``__signature__`` made from the one
definition, each keyword with its annotation and default, so a reader sees ``timeout``,
``max_turns``, ``approver``; a test keeps every entry point's keywords equal to the definition.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, ForwardRef, TypeVar

F = TypeVar("F", bound=Callable[..., Any])


def keywords_of(options: type) -> dict[str, str]:
    """The keywords of a ``TypedDict`` of options, with their annotations as written."""
    return {
        name: annotation.__forward_arg__ if isinstance(annotation, ForwardRef) else annotation
        for name, annotation in options.__annotations__.items()
    }


def lists_keywords(
    fn: F, options: type, defaults: Mapping[str, Any], *, skip: frozenset[str] = frozenset()
) -> F:
    """``fn`` with a signature whose ``**options`` is replaced by the keywords of ``options``
    (defaults from ``defaults``; a keyword ``fn`` names itself, or one in ``skip``, is left out)."""
    target: Any = getattr(fn, "__func__", fn)  # a classmethod's function
    signature = inspect.signature(target)
    kept = [p for p in signature.parameters.values() if p.kind is not p.VAR_KEYWORD]
    named = {p.name for p in kept} | skip
    listed = [
        inspect.Parameter(
            name,
            inspect.Parameter.KEYWORD_ONLY,
            default=defaults.get(name, None),
            annotation=annotation,
        )
        for name, annotation in keywords_of(options).items()
        if name not in named
    ]
    target.__signature__ = signature.replace(parameters=[*kept, *listed])
    return fn
