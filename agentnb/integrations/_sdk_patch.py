"""The only private parts of openai-agents that agentnb touches, wrapped in one place.

openai-agents has no public hook that sees every model call with what the model is handed
(system instructions, input items, tools, handoffs, output schema) when its tracing is off, and
none that marks where a run (or a sub-agent's nested run) begins. So while a capture is open,
three names are replaced by thin wrappers that call the originals:

- ``agents.run_internal.run_loop.get_model``: the function each turn uses to resolve the
  agent's model; the wrapper returns a measuring stand-in for that model;
- ``agents.run.AgentRunner.run`` and ``AgentRunner.run_streamed``: where every run starts
  (``Runner.run``, ``run_sync``, ``run_streamed`` and ``Agent.as_tool``'s nested runs).

They are installed when the first capture opens and restored when the last one closes, so an
unused integration costs nothing. `check` says plainly when an SDK release moved one of them;
a test calls it, so an upgrade fails there first. Tested with openai-agents 0.24.
"""

from __future__ import annotations

import importlib
import threading
from collections.abc import Callable
from typing import Any

from ..errors import UserError

TESTED = ">=0.24,<0.25"
"""The openai-agents versions this wrapping was written and tested against."""

_TARGETS = (
    ("agents.run_internal.run_loop", None, "get_model"),
    ("agents.run", "AgentRunner", "run"),
    ("agents.run", "AgentRunner", "run_streamed"),
)

_lock = threading.Lock()
_users = 0
_saved: list[tuple[Any, str, Any]] = []
_checked: list[bool] = []  # `check` passed once: the SDK's modules do not move while it runs


def _owner(module: str, cls: str | None) -> Any:
    owner: Any = importlib.import_module(module)
    return getattr(owner, cls) if cls else owner


def check() -> None:
    """Raise `UserError` naming what moved if this openai-agents lacks a wrapped function."""
    try:
        import agents
    except ImportError:
        raise UserError(
            "agentnb.integrations.openai_agents needs openai-agents: pip install 'agentnb[openai-agents]'"
        ) from None
    for module, cls, name in _TARGETS:
        where = f"{module}.{cls + '.' if cls else ''}{name}"
        try:
            found = getattr(_owner(module, cls), name)
        except (ImportError, AttributeError):
            found = None
        if not callable(found):
            version = getattr(agents, "__version__", "?")
            raise UserError(
                f"openai-agents {version} has no {where}, which agentnb's capture wraps "
                f"(tested with openai-agents{TESTED}); install a tested version or update "
                "agentnb/integrations/_sdk_patch.py"
            )


def install(
    get_model: Callable[[Callable[..., Any]], Callable[..., Any]],
    run: Callable[[Callable[..., Any]], Callable[..., Any]],
    run_streamed: Callable[[Callable[..., Any]], Callable[..., Any]],
) -> None:
    """Wrap the three functions (each factory gets the original); counted, see `uninstall`."""
    global _users
    with _lock:
        _users += 1
        if _users > 1:
            return
        if not _checked:
            check()
            _checked.append(True)
        for (module, cls, name), factory in zip(_TARGETS, (get_model, run, run_streamed)):
            owner = _owner(module, cls)
            original = owner.__dict__[name]
            _saved.append((owner, name, original))
            setattr(owner, name, factory(original))


def uninstall() -> None:
    """Restore the originals when the last capture closes."""
    global _users
    with _lock:
        _users = max(0, _users - 1)
        if _users:
            return
        while _saved:
            owner, name, original = _saved.pop()
            setattr(owner, name, original)


def installed() -> bool:
    """True while a capture holds the wrappers."""
    return bool(_saved)
