"""One line instead of a traceback for the mistakes a newcomer makes in a cell.

Installed on the running IPython shell when the notebook layer loads (``import agentnb`` in a
kernel, or ``%load_ext agentnb``):

- an agentnb `UserError` (agentnb called the wrong way) shows its message, which says what to
  do, without the frames of agentnb's internals;
- ``asyncio.run(...)`` in a cell, where Jupyter's loop is already running, says to ``await``
  or to call ``agentnb.run_sync``;
- a forgotten ``await`` (``agentnb.run(...).output``) says the same.

The coroutine a cell gave to ``asyncio.run`` can never be awaited (only the traceback IPython
keeps holds it), so it is closed when the hint is shown: otherwise its "coroutine ... was never
awaited" warning comes whenever the garbage collector frees that traceback, in some later
cell's output. A forgotten ``await`` leaves the coroutine with the user (``result`` may still be
awaited), so it is left open, and only the error's own reference to it is dropped: its warning,
if it comes, comes when the user lets go of it, as in a script.

Every other exception shows IPython's usual traceback. IPython keeps one such handler per
shell (``set_custom_exc``); one installed by another extension is kept and called for the
exceptions this module does not shorten.
"""

from __future__ import annotations

import inspect
import sys
from types import TracebackType
from typing import Any

from ..errors import UserError

AWAIT_HINT = (
    "in a notebook cell, write `result = await agentnb.run(agent, input)`, "
    "or `result = agentnb.run_sync(agent, input)` (which works in a cell and in a script)"
)


def hint_for(error: BaseException) -> str | None:
    """The one line shown for ``error`` instead of a traceback, or None for a traceback."""
    if isinstance(error, UserError):
        return f"{type(error).__name__}: {error}"
    text = str(error)
    if isinstance(error, RuntimeError) and "cannot be called from a running event loop" in text:
        return f"{text}: Jupyter's event loop is already running; {AWAIT_HINT}."
    if isinstance(error, AttributeError) and text.startswith("'coroutine' object has no attribute"):
        return f"{text}: the coroutine was never awaited; {AWAIT_HINT}."
    return None


def install(shell: Any) -> None:
    """Show `hint_for`'s line for the errors it knows in ``shell``'s cells; keep any handler
    another extension installed for the rest."""
    previous = getattr(shell, "CustomTB", None)
    if getattr(previous, "_agentnb_hints", False):
        return
    kept_types = tuple(getattr(shell, "custom_exceptions", ()))

    def show(self: Any, etype: type, value: BaseException, tb: Any, tb_offset: Any = None) -> Any:
        line = hint_for(value)
        if line is None:
            if previous is not None and kept_types and isinstance(value, kept_types):
                return previous(etype, value, tb, tb_offset)
            return self.showtraceback((etype, value, tb), tb_offset=tb_offset)
        if isinstance(value, RuntimeError):
            close_unawaited_coroutines(tb)
        elif isinstance(value, AttributeError):
            value.obj = None
        print(line, file=sys.stderr)
        return None

    show._agentnb_hints = True  # type: ignore[attr-defined]
    shell.set_custom_exc((Exception,), show)


def close_unawaited_coroutines(tb: TracebackType | None) -> None:
    """Close the coroutines never started that asyncio's frames in ``tb`` were given (the
    argument of an ``asyncio.run`` that refused to run): nothing can await them any more."""
    while tb is not None:
        frame = tb.tb_frame
        if str(frame.f_globals.get("__name__", "")).startswith("asyncio"):
            for value in frame.f_locals.values():
                if inspect.iscoroutine(value) and (
                    inspect.getcoroutinestate(value) == inspect.CORO_CREATED
                ):
                    value.close()
        tb = tb.tb_next


def _install_on_running_shell() -> None:
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    if shell is not None and hasattr(shell, "set_custom_exc"):
        install(shell)


_install_on_running_shell()
