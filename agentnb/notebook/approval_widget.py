"""The approval prompt: a notebook's default approver for ``as_tool(..., needs_approval=...)``.

`widget_approver` shows who calls which sub-agent, the task and the attached documents, with
Approve / Reject buttons and a reason field, and waits for the click. The run awaits on its
event loop (agentnb's background loop, or the kernel's with ``await agentnb.run``); the
buttons' callbacks fire on the kernel's thread when the click arrives. A thread-safe future
joins the two.

Loading this module (the notebook layer loads it) installs `notebook_approver` as the
runtime's default approver.

A cell blocked in `run_sync` (``%%agent_run`` among others) holds the kernel's thread, so a
click could not be delivered until the run ends. There `text_approver` asks on the stdin
channel instead, like ``input()``, which a frontend answers while a cell runs.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import functools
import html
from typing import Any

from ..errors import NoApprover
from ..runtime import (
    Approval,
    Approver,
    PendingCall,
    in_notebook,
    main_thread_blocked,
    set_default_approver,
)
from ._snapshot import Snapshotted

PREVIEW_CHARS = 4_000
"""How much of a long input or document the prompt shows."""


class ApprovalPrompt:
    """The widget for one pending call; `decide` is what the buttons call."""

    def __init__(self, pending: PendingCall) -> None:
        import ipywidgets as w

        self.pending = pending
        self.future: concurrent.futures.Future[Approval] = concurrent.futures.Future()
        who = html.escape
        self.header = w.HTML(
            f"<b>Approval needed</b>: <b>{who(pending.caller)}</b> wants to call "
            f"<b>{who(pending.agent)}</b> (tool <code>{who(pending.tool)}</code>) at "
            f"<code>{who(pending.path)}</code>"
        )
        self.input = w.Textarea(
            value=_preview(pending.input),
            description="Input",
            disabled=True,
            layout=w.Layout(width="100%", height="6em"),
        )
        documents = []
        for handle, text in pending.artifacts.items():
            box = w.Textarea(
                value=_preview(text), disabled=True, layout=w.Layout(width="100%", height="10em")
            )
            documents.append((f"{handle} ({len(text):,} characters)", box))
        self.artifacts = w.Accordion(children=[box for _, box in documents])
        for index, (title, _) in enumerate(documents):
            self.artifacts.set_title(index, title)
        self.reason = w.Text(
            description="Reason",
            placeholder="why (sent to the calling agent when rejected)",
            layout=w.Layout(width="100%"),
        )
        self.approve_button = w.Button(description="Approve", button_style="success", icon="check")
        self.reject_button = w.Button(description="Reject", button_style="danger", icon="times")
        self.status = w.HTML()
        self.approve_button.on_click(lambda _: self.decide(True))
        self.reject_button.on_click(lambda _: self.decide(False))
        parts: list[Any] = [self.header, self.input]
        if documents:
            parts.append(self.artifacts)
        parts += [self.reason, w.HBox([self.approve_button, self.reject_button]), self.status]
        self.widget = _prompt_box()(parts)
        self.widget.prompt = self

    def snapshot_html(self) -> str:
        """The request and its decision as static HTML, for a saved notebook."""
        decision = self.status.value or "<i>Waiting for a decision.</i>"
        return (
            f"<div>{self.header.value}</div>"
            f"<pre>{html.escape(self.input.value)}</pre>"
            + "".join(
                f"<div>document <code>{html.escape(handle)}</code>, {len(text):,} characters</div>"
                for handle, text in self.pending.artifacts.items()
            )
            + f"<div>{decision}</div>"
        )

    def decide(self, approved: bool, reason: str | None = None) -> None:
        """Approve or reject (the buttons call this; the first decision wins)."""
        reason = self.reason.value.strip() if reason is None else reason
        try:
            self.future.set_result(Approval(approved, reason))
        except concurrent.futures.InvalidStateError:  # decided already, or the run stopped
            return
        self._close("Approved" if approved else "Rejected" + (f": {reason}" if reason else ""))

    def _close(self, status: str) -> None:
        for control in (self.approve_button, self.reject_button, self.reason):
            control.disabled = True
        self.status.value = f"<i>{html.escape(status)}</i>"
        self.widget.refresh_snapshot()

    async def wait(self) -> Approval:
        """The decision, awaited on whatever event loop the run uses."""
        try:
            return await asyncio.wrap_future(self.future)
        except asyncio.CancelledError:
            self.future.cancel()  # a late click then does nothing
            if self.future.cancelled():
                self._close("The run was stopped before a decision.")
            raise

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)


@functools.cache
def _prompt_box() -> type[Any]:
    """The prompt's box: a VBox whose outputs carry the prompt's snapshot (built on first use,
    so that loading this module does not load ipywidgets)."""
    import ipywidgets as w

    class ApprovalBox(Snapshotted, w.VBox):  # type: ignore[misc]  # ipywidgets is untyped
        prompt: ApprovalPrompt | None = None

        def snapshot_html(self) -> str:
            return "" if self.prompt is None else self.prompt.snapshot_html()

    return ApprovalBox


def _preview(text: str) -> str:
    if len(text) <= PREVIEW_CHARS:
        return text
    return f"{text[:PREVIEW_CHARS]}\n[... {len(text) - PREVIEW_CHARS:,} more characters]"


def _show(widget: Any) -> None:
    from IPython.display import display

    display(widget)  # type: ignore[no-untyped-call]


async def widget_approver(pending: PendingCall) -> Approval:
    """Show an `ApprovalPrompt` for ``pending`` and wait for a person's click."""
    prompt = ApprovalPrompt(pending)
    _show(prompt.widget)
    return await prompt.wait()


YES = frozenset({"y", "yes", "ok", "approve", "approved"})


def text_approver(pending: PendingCall) -> Approval:
    """Ask on the kernel's stdin channel (sync: the runtime calls it in a worker thread).

    ``y`` approves; anything else rejects, and text other than ``n`` is the reason.
    """
    from IPython import get_ipython
    from IPython.core.error import StdinNotImplementedError

    documents = ", ".join(f"{h} ({len(t):,} characters)" for h, t in pending.artifacts.items())
    print(
        f"Approval needed: {pending.caller} wants to call {pending.agent} "
        f"(tool {pending.tool}) at {pending.path}\nInput: {_preview(pending.input)}"
        + (f"\nDocuments: {documents}" if documents else ""),
        flush=True,
    )
    try:
        answer = get_ipython().kernel.raw_input("Approve? y = yes; a reason (or n) rejects: ")
    except StdinNotImplementedError:
        raise NoApprover(
            f"The call to {pending.tool} at {pending.path} needs approval, and this frontend "
            "cannot ask for input (a notebook run headless?). Pass run(..., approver=...)."
        ) from None
    answer = answer.strip()
    if answer.lower() in YES:
        return Approval(True)
    return Approval(False, "" if answer.lower() in ("", "n", "no") else answer)


def notebook_approver(pending: PendingCall) -> Approver | None:
    """The default approver in a kernel (None elsewhere): the widget, or the text prompt while
    a cell blocked in `run_sync` holds the kernel's thread (no click could arrive then)."""
    if not in_notebook():
        return None
    return text_approver if main_thread_blocked() else widget_approver


set_default_approver(notebook_approver)  # runs that set no approver ask a person here
