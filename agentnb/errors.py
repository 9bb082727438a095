"""The exception tree, grouped by who is at fault.

- `UserError`: agentnb was called the wrong way. Raised at once, at construction where possible.
- `AgentRunError`: something stopped a run that had started. `run` never raises these; they end
  the run with ``ok=False`` and sit in ``RunResult.error``, with the partial trace kept.
- `ModelBehaviorError`: the model (or its script) did something the runtime cannot act on.

Every message says what happened and, where there is a choice, what to do about it.
"""

from __future__ import annotations

from typing import Any


class AgentnbError(Exception):
    """Base class of every error agentnb raises."""

    def __reduce__(self) -> tuple[Any, ...]:
        # Pickled with its attributes and rebuilt without calling __init__, whose keyword-only
        # arguments (GuardrailTripped's ``guardrail=``) the default pickling would not pass.
        return (_restored, (type(self), self.args, dict(self.__dict__)))


def _restored(cls: type[AgentnbError], args: tuple[Any, ...], state: dict[str, Any]) -> Any:
    error = cls.__new__(cls, *args)
    error.args = args
    error.__dict__.update(state)
    return error


class UserError(AgentnbError, ValueError):
    """agentnb was used the wrong way: fix the call, the agent or the tool definition."""


class NoApprover(UserError):
    """A call needs a person's approval but the run has no approver (and no notebook to ask in).

    Found only once a run has started, so like an `AgentRunError` it ends the run with
    ``ok=False`` rather than raising; unlike one, it is never turned into text for the caller
    (a missing approver is a setup mistake, not something a model can work around).
    """


class AgentRunError(AgentnbError):
    """A run that had started could not finish. Held in ``RunResult.error``."""


class MaxTurnsExceeded(AgentRunError):
    """An agent used all its turns without a final answer."""


class RunTimeout(AgentRunError):
    """The run's wall-clock limit passed."""


class BudgetExceeded(AgentRunError):
    """A model-call or token budget ran out.

    ``fatal`` budgets (the run's own `Limits`) end the whole run; a sub-agent's budget set with
    ``as_tool(max_tokens=...)`` only ends that sub-agent, and its caller is told so in text.
    """

    def __init__(self, message: str, *, fatal: bool = True) -> None:
        super().__init__(message)
        self.fatal = fatal


class RunCancelled(AgentRunError):
    """The run was interrupted (Kernel -> Interrupt, Ctrl-C, or a cancelled task)."""


class GuardrailTripped(AgentRunError):
    """A guardrail's tripwire fired (or a tool guardrail said stop): the run ends here.

    ``guardrail`` is its name, ``agent`` the agent (or tool) it checked, ``stage`` what it
    checked (``input``, ``output``, ``tool_input``, ``tool_output``), ``info`` what it reported.
    """

    def __init__(
        self, message: str, *, guardrail: str, agent: str, stage: str, info: object = None
    ) -> None:
        super().__init__(message)
        self.guardrail = guardrail
        self.agent = agent
        self.stage = stage
        self.info = info


class ToolFailed(AgentRunError):
    """A tool whose result was to be the answer (``tool_use_behavior="stop_on_first_tool"`` or
    `StopAtTools`) failed: it raised, its arguments were not valid, or no tool has its name.

    The run ends ``ok=False`` rather than answer with an error text; ``tool`` is the tool's
    name, ``agent`` the agent that called it, and the message holds what the tool said.
    """

    def __init__(self, message: str, *, tool: str, agent: str) -> None:
        super().__init__(message)
        self.tool = tool
        self.agent = agent


class ModelBehaviorError(AgentRunError):
    """The model produced something the runtime cannot act on."""


class OutputValidationError(ModelBehaviorError):
    """The final answer did not match the agent's ``output_type``, even after re-asking."""


class ScriptExhausted(ModelBehaviorError):
    """A ScriptedModel was asked for more replies than its script holds."""


class ModelHTTPError(AgentRunError):
    """The model's server answered with an error that retrying did not fix.

    ``events`` are the adapter's events of the failed call (its retries), traced like a
    response's events.
    """

    def __init__(
        self, message: str, *, status: int | None = None, events: list[dict[str, Any]] | None = None
    ) -> None:
        super().__init__(message)
        self.status = status
        self.events = list(events or [])


class StreamBroken(ModelHTTPError):
    """A model's stream stopped after its first delta without the provider's end marker.

    Retrying is only safe before the first delta (what was shown cannot be taken back), so a
    stream broken later ends the call; the text received so far is kept on the call's span
    (``partial_text``).
    """


class UnreadableReply(ModelHTTPError, ModelBehaviorError):
    """The server's reply, whole or streamed, is not what its API says: it cannot be read
    (not valid UTF-8, an output that is not a list), or a stream's end disagrees with what
    was streamed. Not retried: the same server would send it again.
    """


class ReplayMismatch(AgentRunError):
    """A replayed run sent a request that differs from the recording."""


class RunPaused(AgentRunError):
    """The run stopped at calls that need approval (``approver="pause"``): the result's
    ``interruptions`` lists them and ``agentnb.resume(agent, result.to_state(), approvals)``
    goes on from there."""


class SessionNotSaved(AgentRunError):
    """A run on an `agentnb.Session` ended ok, but its turn could not be stored (a full disk,
    a read-only, locked or damaged file), or its claim on the session could not be ended.

    The run ends ``ok=False`` with this error instead of raising; its ``output`` and trace are
    kept, so nothing the run did is lost. ``session`` is the session's id, ``path`` its file.
    """

    def __init__(self, message: str, *, session: str, path: str | None) -> None:
        super().__init__(message)
        self.session = session
        self.path = path


class AgentnbWarning(UserWarning):
    """agentnb accepted something that is likely not what was meant (a tool the model is shown
    without a description, parameters without types): the message says what to add."""


class ModelRetry(Exception):
    """Raised by an output validator (or a tool) to make the model try again: the message is
    what the model is told. Not an error of the run unless the retries run out."""


class CallbackRaised(BaseException):
    """Carries an exception raised by user code that agentnb calls back during a run (a hook,
    an on_event callback, a stream subscriber) to the end of the run.

    Not an error users see: the run ends with ``ok=False`` and ``RunResult.error`` holding the
    exception carried (``.error``). It derives from ``BaseException`` so that no handler of a
    sub-agent's failures (which become text for the caller) stops it on the way.
    """

    def __init__(self, error: BaseException) -> None:
        super().__init__(error)
        self.error = error


__all__ = [
    "AgentRunError",
    "AgentnbWarning",
    "AgentnbError",
    "BudgetExceeded",
    "GuardrailTripped",
    "MaxTurnsExceeded",
    "ModelBehaviorError",
    "ModelHTTPError",
    "ModelRetry",
    "NoApprover",
    "OutputValidationError",
    "ReplayMismatch",
    "RunCancelled",
    "RunPaused",
    "RunTimeout",
    "ScriptExhausted",
    "SessionNotSaved",
    "StreamBroken",
    "ToolFailed",
    "UnreadableReply",
    "UserError",
]
