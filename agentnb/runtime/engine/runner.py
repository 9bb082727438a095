"""The run loop: ask the model, run the tools it asks for, repeat until a final answer.

`run` is the entry point. Once a run has started it does not raise: a limit, a budget, a
timeout or a model failure ends it with ``ok=False``, the exception in ``.error`` and the
trace so far kept. Mistakes in how agentnb is called (`UserError`) raise before it starts.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace
from typing import Any, Unpack, cast

from pydantic import ValidationError

from ... import checks
from ...errors import (
    AgentRunError,
    BudgetExceeded,
    CallbackRaised,
    MaxTurnsExceeded,
    ModelRetry,
    OutputValidationError,
    RunCancelled,
    RunPaused,
    RunTimeout,
    ToolFailed,
    UserError,
)
from ...models.base import ModelClient
from ...models.response_cache import through
from ...models.settings import check_settings
from ...models.types import Message, ModelRequest, ModelResponse, ToolCall
from ...trace.calls import CallRow
from ...trace.spans import Span
from ...trace.tokens import preload
from ...words import plural
from ..agents.agent import Agent, model_client
from ..agents.instructions import system_prompt
from ..agents.output import OutputSpec, validation_errors
from ..agents.output_validators import retried, validated_output
from ..agents.prompt import section_sizes
from ..agents.settings import (
    FunctionToolResult,
    after_tool_calls,
    decided,
    stopping_call,
    turn_settings,
)
from ..data.approvals import Paused, pause_run
from ..data.context import RunContext, TokenBudget
from ..data.deadline import DeadlinePassed, within
from ..data.events import (
    Watchers,
    both,
    handed_off,
    listening,
    run_ended,
    send_log,
    subscriber,
    watch_spans,
    watchers_for,
)
from ..data.hooks import reads_rows
from ..data.options import DEFAULT as DEFAULT_OPTIONS
from ..data.options import RunKeywords, RunOptions, shows_run_keywords
from ..data.outcome import (
    RUN_AGAIN,
    NextStepFinalOutput,
    NextStepHandoff,
    NextStepRunAgain,
    ToolOutcome,
    model_text,
)
from ..data.result import RunResult
from ..data.state import AgentRun
from ..data.tasks import run_concurrently
from ..data.transfer import Transfer
from ..guards.guardrails import first_call, run_guardrails, start_input_checks
from ..guards.tool_guardrails import invoke_checked
from ..handoffs.handoff import HandoffTool
from ..tools.context import ToolCallContext
from ..tools.enabled import enabled_tools
from ..tools.function import BaseTool, read_arguments
from ..tools.mcp import server_tools
from .resume import answer_pending, keep_paused, resumed_history, script_positions


@shows_run_keywords
async def run(
    agent: Agent,
    input: str | list[Message],
    *,
    parent: ToolCallContext | None = None,
    **options: Unpack[RunKeywords],
) -> RunResult:
    """Run ``agent`` on ``input`` and return a `RunResult` (never raises once started).

    ``artifacts`` are documents the agents can hand to sub-agents by handle (the input itself
    is the handle ``"input"``). ``timeout`` and ``max_turns`` are shortcuts for the run's
    wall-clock limit and the root agent's turn limit. ``approver`` decides calls that need
    approval; ``deps`` is whatever the tools need.
    ``model`` is the model of every agent of the run that has none (sub-agents included);
    ``model_settings`` override the agents' own `ModelSettings` field by field.
    ``hooks`` (an `agentnb.Hooks`) see every agent of the run; ``on_event`` is called with
    each event `run_streamed` would yield, the start and end of every span included
    (``listeners``, the older ``fn(event, span)`` form, are deprecated). A hook or ``on_event`` that raises
    ends the run with its exception as the error. Every option is described on `RunOptions`;
    a bad one raises `UserError` before the run starts.

    ``parent`` (the `ToolCallContext` of a running tool) makes this run a child of that tool's
    run, as ``await ctx.delegate(agent, input)`` does: it then takes only ``max_turns`` and
    ``timeout`` (the rest is the calling run's); see `agentnb.runtime.engine.delegation`.
    """
    if parent is not None:
        from .delegation import check_parent

        check_parent(parent, options, "run")
        return await _run_child(parent, agent, input, **options)  # type: ignore[misc]
    return await execute(agent, input, start_context(agent, input, RunOptions.of(**options)))


def start_context(
    agent: Agent,
    input: str | list[Message],
    options: RunOptions = DEFAULT_OPTIONS,
    *,
    t0: float | None = None,
) -> RunContext:
    """Check the agent and input of a run and build its context (raises `UserError`).

    ``t0`` puts the run's trace on a clock shared with other runs (patterns use it)."""
    if not isinstance(agent, Agent):
        raise UserError(f"run() takes an Agent first, got {type(agent).__name__}")
    check_input(input)
    if not isinstance(options, RunOptions):
        raise UserError(f"options must be agentnb.RunOptions(...), got {type(options).__name__}")
    default = _default_model(options.model)
    model_client(agent, default)  # a UserError now for an agent without a usable model
    if _counts_while_running(agent, options):  # loaded before the run's clock starts
        preload(*_models(agent, default))
    ctx = RunContext.create(options, t0=t0)
    ctx.agent_loop = run_below
    ctx.default_model = default
    ctx.model_settings = check_settings(options.model_settings, "run(model_settings=...)")
    ctx.artifacts = {"input": _input_text(input), **ctx.artifacts}
    ctx.session = options.session
    on_event = options.on_event
    if options.hooks is not None or on_event is not None or options.listeners:
        sink = both(
            subscriber(on_event) if on_event is not None else None,
            listening(options.listeners) if options.listeners else None,
        )
        streams = options.stream if options.stream is not None else on_event is not None
        hooks = (options.hooks,) if options.hooks is not None else ()
        ctx.watchers = Watchers(sink, hooks, streams=streams)
        watch_spans(ctx)
    return ctx


def check_input(input: object, where: str = "run()'s input") -> None:
    """A run's input is text or a list of `Message`; anything else is a `UserError`."""
    if not isinstance(input, str) and not (
        isinstance(input, list) and all(isinstance(m, Message) for m in input)
    ):
        raise checks.fail(where, "text or a list of agentnb.Message", input)


def _counts_while_running(agent: Agent, options: RunOptions) -> bool:
    """Whether the run reads token counts as it runs: a token budget, or a hook given each
    call's row (other runs count when their rows are read, after the run)."""
    if options.limits is not None and options.limits.max_tokens is not None:
        return True
    return reads_rows(options.hooks) or reads_rows(agent.hooks)


def _models(agent: Agent, default: ModelClient | None) -> list[object]:
    """The models of ``agent`` and of the agents its tools may run, once each."""
    seen: set[int] = set()
    models: list[object] = [default]
    todo = [agent]
    while todo:
        each = todo.pop()
        if id(each) in seen:
            continue
        seen.add(id(each))
        models.append(each.model)
        for tool in each.tools:
            if isinstance(tool, BaseTool):
                todo.extend(sub for _, sub in tool.sub_agents())
    return [m for m in models if m is not None]


async def execute(agent: Agent, input: str | list[Message], ctx: RunContext) -> RunResult:
    """Run the root agent in a context from `start_context`; see `run`."""
    session = ctx.session
    if session is None:
        return await _execute(agent, input, ctx)
    session.claim()  # a UserError before the run starts when another run holds the session
    ended = False
    summary: tuple[int, str] | None = None  # the summary the run wrote, stored with its turn

    def end(result: RunResult) -> RunResult:
        nonlocal ended
        ended = True
        error = session.end_run(result, ctx.history, summary)
        if error is None:
            return result
        # Not saved: the run reports it rather than raising, and keeps what it produced.
        ctx.trace.log("session_not_saved", depth=0, path=agent.name, error=str(error))
        return replace(result, ok=False, error=error, partial=result.final_text)

    async def summarized(state: AgentRun, ctx: RunContext) -> None:
        nonlocal summary
        assert fold is not None
        summary = await summarize(fold, state, ctx)

    try:
        history = session.sent()
        fold = session.fold()
        if fold is not None:
            from .summaries import summarize, summarizer

            summarizer(fold.strategy, ctx.default_model)  # a UserError now for a bad model
        prepare = summarized if fold is not None else None
        return await _execute(agent, input, ctx, history, end, prepare)
    finally:
        if not ended:  # the run did not reach its end (interrupted, or its history unreadable)
            session.release()


async def _execute(
    agent: Agent,
    input: str | list[Message],
    ctx: RunContext,
    history: Sequence[Message] = (),
    end: Callable[[RunResult], RunResult] | None = None,
    prepare: Callable[[AgentRun, RunContext], Awaitable[None]] | None = None,
) -> RunResult:
    """``end`` sees the result before the run's last event (a session stores its turn);
    ``prepare`` runs first inside the run's timeout (a session's summary is written)."""
    trace = ctx.trace
    raised: BaseException | None = None  # by an on_event told of the run's start
    try:
        root_span = trace.start("run", agent.name, None, agent=agent.name, path=agent.name, depth=0)
    except CallbackRaised as exc:
        root_span, raised = trace.spans[-1], exc.error
    ctx.history = len(history)
    messages = list(history) + _initial_messages(input, ctx)
    ctx.inputs = tuple(messages)
    path = agent.name if ctx.resumed is None else ctx.resumed.path  # resumed after a handoff
    state = AgentRun(agent, messages, 0, path, (agent,), root_span)
    if ctx.limits.max_tokens is not None:  # a resumed run counts what it spent before the pause
        spent = getattr(ctx.resumed, "tokens_used", 0)
        state.budgets = (TokenBudget(ctx.limits.max_tokens, "the run", fatal=True, used=spent),)
    ctx.root = state
    ctx.active.append(state)
    trace.log("run_start", depth=0, path=agent.name, agent=agent.name)
    output: Any = None
    error: BaseException | None = None
    try:
        if raised is not None:
            raise CallbackRaised(raised)
        timeout = ctx.limits.timeout
        try:
            turns = ctx.max_turns or agent.max_turns
            output = await within(_resumed_then_loop(state, ctx, turns, prepare), timeout)
        except DeadlinePassed:
            raise RunTimeout(
                f"The run did not finish within its timeout of {timeout:g} s."
            ) from None
    except asyncio.CancelledError:
        _finish(ctx, state, "cancelled")
        await close_resources(ctx)
        raise
    except AgentRunError as exc:
        error = exc
    except CallbackRaised as exc:  # a hook or an on_event raised: its exception is the error
        error = exc.error
    except BaseException as exc:  # user code or a client raised (SystemExit too): report it
        error = exc
    status = "ok" if error is None else ("timeout" if isinstance(error, RunTimeout) else "error")
    if isinstance(error, RunPaused):  # where the scripts stand is part of the paused state
        ctx.scripts = script_positions(running(state), ctx)
    late = _finish(ctx, state, status, error)
    await close_resources(ctx)
    result = build_result(ctx, output, error or late)
    if end is not None:
        result = end(result)
    watchers = ctx.watchers
    if watchers is not None and watchers.sink is not None:  # streamed: the last event
        try:
            send_log(ctx)
            watchers.sink(run_ended(ctx, agent, result))
        except CallbackRaised as exc:  # the run's on_event raised at its end
            result = build_result(ctx, None, exc.error)
    return result


async def _resumed_then_loop(
    state: AgentRun,
    ctx: RunContext,
    max_turns: int,
    prepare: Callable[[AgentRun, RunContext], Awaitable[None]] | None = None,
) -> Any:
    """The agent's loop; in a resumed run, first the calls the pause left, decided (within the
    run's timeout, like the rest); before it, ``prepare`` (see `_execute`)."""
    if prepare is not None:
        await prepare(state, ctx)
    if ctx.resumed is not None:
        await ctx.resumed(state, ctx)
    return await agent_loop(state, ctx, max_turns)


def _items(response: ModelResponse) -> tuple[dict[str, Any], ...]:
    """The provider's reasoning and hosted-tool items of a response, kept on its message."""
    if not response.events:
        return ()
    return tuple(e for e in response.events if e.get("event") in ("reasoning", "hosted_tool"))


async def close_resources(ctx: RunContext) -> None:
    """Close what the run opened (MCP connections); each close is bounded, and a failure to
    close does not change how the run ended."""
    opened = list(ctx.open_resources.values())
    ctx.open_resources.clear()
    for each in opened:
        try:
            await each.close()
        except Exception:  # noqa: S110 (the run is over; a server that will not close is gone)
            pass


def _finish(
    ctx: RunContext, state: AgentRun, status: str, error: BaseException | None = None
) -> BaseException | None:
    """Close the run's spans and log its end; returns what an on_event raised meanwhile."""
    if state in ctx.active:
        ctx.active.remove(state)
    late = None
    # A watcher that raises at a span's end has ended that span: each retry has fewer to close.
    for _ in range(len(ctx.trace.spans) + 1):
        try:
            _close(ctx, status)
            break
        except CallbackRaised as exc:
            late = late or exc.error
    extra = {"error": f"{type(error).__name__}: {error}"} if error is not None else {}
    ctx.trace.log(
        "run_end",
        depth=0,
        path=state.path,
        agent=state.agent.name,
        status=status,
        model_calls=ctx.model_calls,
        **extra,
    )
    return late


def _close(ctx: RunContext, status: str) -> None:
    if ctx.trace.spans:  # spans still open below the run span were cut short; the run has status
        root = ctx.trace.spans[0]
        ctx.trace.close_open_under(root, "cancelled" if status == "ok" else status)
        if root.ended is None:
            ctx.trace.end(root, status)


def build_result(ctx: RunContext, output: Any, error: BaseException | None) -> RunResult:
    """The result of a run from its context: also used for runs cut short by an interrupt."""
    state = ctx.root
    assert state is not None
    if isinstance(error, asyncio.CancelledError):
        error = RunCancelled("The run was interrupted; the result holds what was done before.")
    return RunResult(
        output=output if error is None else None,
        ok=error is None,
        error=error,
        usage=ctx.usage,
        last_agent=state.agent,
        trace=ctx.trace,
        messages=state.messages,
        context=ctx,
        partial=state.last_text if error is not None else None,
        inputs=ctx.inputs,
    )


def _input_text(input: str | list[Message]) -> str:
    if isinstance(input, str):
        return input
    return "\n\n".join(m.content or "" for m in input if m.role == "user")


def _initial_messages(input: str | list[Message], ctx: RunContext) -> list[Message]:
    if isinstance(input, list):
        return list(input)
    extra = [h for h in ctx.artifacts if h != "input"]
    if not extra:
        return [Message.user(input)]
    listed = ", ".join(f"{h} ({len(ctx.artifacts[h]):,} characters)" for h in extra)
    return [
        Message.user(f"{input}\n\n[Attached documents, pass them to tools by handle: {listed}]")
    ]


def _default_model(model: ModelClient | str | None) -> ModelClient | None:
    """``run(model=...)`` as a client (a spec string resolved), or a `UserError`."""
    if model is None:
        return None
    if isinstance(model, str):
        from ...models.registry import model_from_spec

        model = model_from_spec(model)
    if not hasattr(model, "request"):
        raise UserError(
            f"run(model=...) must be a model client or a spec string like 'openai:gpt-4o-mini', "
            f"got {type(model).__name__}"
        )
    return cast(ModelClient, model)


REASK_PREFIX = "Your answer could not be read as"
"""How a re-ask for a structured answer starts (the message is marked ``generated``)."""


def running(state: AgentRun) -> Agent:
    """The agent ``state`` runs, as the engine knows it: the data floor holds it by what it
    reads of it (`agentnb.runtime.data.protocols.AgentLike`)."""
    agent = state.agent
    if not isinstance(agent, Agent):
        raise TypeError(f"an AgentRun runs an Agent, not {type(agent).__name__}")
    return agent


async def run_below(
    state: AgentRun, ctx: RunContext, max_turns: int, call_id: str | None = None
) -> Any:
    """`RunContext.run_below`: run an agent below another of the run (a sub-agent called as a
    tool, a guardrail's agent) until it answers. For a sub-agent, ``call_id`` names the call
    that runs it: in a resumed run it goes on from the history it had at the pause, the calls
    it was waiting on answered first; a pause inside it keeps its history in the run's state."""
    if call_id is None:
        return await agent_loop(state, ctx, max_turns)
    kept = resumed_history(ctx, state.path, call_id)
    if kept is not None:
        state.messages[:] = kept
    try:
        await answer_pending(state, ctx)
        return await agent_loop(state, ctx, max_turns)
    except RunPaused:
        keep_paused(ctx, state, call_id)
        raise


async def agent_loop(state: AgentRun, ctx: RunContext, max_turns: int) -> Any:
    """Run ``state.agent`` until it answers; follow handoffs. Returns the final output."""
    while True:
        step = await _turns(state, ctx, max_turns)
        if isinstance(step, NextStepFinalOutput):
            state.output = step.output
            if state.watchers is not None:
                await state.watchers.agent_ended(ctx, state, step.output)
            return step.output
        transfer = step.transfer
        source = state.agent
        ctx.trace.end(state.span, "ok", handed_to=transfer.target.name)
        await handed_off(ctx, state, source, transfer.target)
        state.handoffs.append(transfer.target.name)
        state.agent = transfer.target
        state.messages[:] = transfer.messages
        state.tally.reset()
        state.lineage = (*state.lineage[:-1], transfer.target)
        parent = next((s for s in ctx.trace.spans if s.span_id == state.span.parent_id), None)
        state.span = ctx.trace.start(
            "agent",
            transfer.target.name,
            parent,
            agent=transfer.target.name,
            path=state.path,
            depth=state.depth,
            routing=transfer.routing,
        )
        ctx.trace.log(
            "handoff",
            depth=state.depth,
            path=state.path,
            agent=transfer.target.name,
            source=source.name,
            routing=transfer.routing,
        )
        max_turns = running(state).max_turns


async def _turns(
    state: AgentRun, ctx: RunContext, max_turns: int
) -> NextStepFinalOutput | NextStepHandoff:
    """The agent's turns until it answers or hands off."""
    agent = running(state)
    model = model_client(agent, ctx.default_model)
    tools = await enabled_tools(agent.tool_map(), ctx, agent)
    specs = [t.spec_for(ctx) for t in tools.values()]
    structured = agent.output_adapter()
    schema = structured.schema if structured else None
    system = (
        agent.instructions
        if isinstance(agent.instructions, str)
        else await system_prompt(agent, ctx)
    )
    settings = turn_settings(agent.model_settings, ctx.model_settings)
    reasks = 0
    if state.span.kind != "agent":  # the root: open its agent span under the run span
        state.span = ctx.trace.start(
            "agent", agent.name, state.span, agent=agent.name, path=state.path, depth=0
        )
    if agent.mcp_servers:  # the MCP servers' tools, listed once per run (tools/mcp.py)
        tools = await server_tools(agent.mcp_servers, tools, ctx, state.span, model)
        specs = [t.spec for t in tools.values()]
    if isinstance(agent.instructions, (list, tuple)):  # what each prompt section weighs
        state.span.attrs["prompt_sections"] = section_sizes(agent.instructions)
    state.watchers = watchers = watchers_for(
        ctx, agent
    )  # a stream, hooks: None when nobody watches
    if watchers is not None:
        await watchers.agent_started(ctx, state)
    first = 1
    if state.resumed_at is not None:  # the resumed turn called tools: go on as after one
        resumed, state.resumed_at = state.resumed_at, None
        first = resumed + 1
        if agent.tool_use_behavior != "run_llm_again":
            calls = list(last_calls(state.messages))
            final = await _output_from_tools(calls, tools, state, ctx, structured)
            if final is not None:  # as in a plain run: a tool's result is the answer
                return await _finish_agent(final.output, state, ctx, resumed)
        if agent.reset_tool_choice:
            settings = after_tool_calls(settings)
    input_checks = (
        await start_input_checks(agent.guardrails("input"), state, ctx)
        if agent.input_guardrails
        else None
    )
    for turn in range(first, max_turns + 1):
        state.turns = turn
        request = ModelRequest(
            system, list(state.messages), specs, schema, agent.name, settings=settings
        )
        if input_checks is None:
            response = await call_model(model, request, state, ctx, turn)
        else:  # input guardrails still running: a tripwire cancels this first call
            response = await first_call(call_model(model, request, state, ctx, turn), input_checks)
            input_checks = None
        if response.tool_calls:
            calls = [
                c if c.id else ToolCall(c.name, c.arguments, f"call_{turn}_{i}")
                for i, c in enumerate(response.tool_calls)
            ]
            state.messages.append(Message.assistant(response.text, tuple(calls), _items(response)))
            if response.text:  # what it said so far: the partial result if a limit cuts it
                state.last_text = response.text
            step = await _run_tools(calls, tools, state, ctx, turn)
            if ctx.ended is not None:  # a run a tool started failed in a way that ends this one
                raise ctx.ended
            if isinstance(step, NextStepHandoff):
                return step
            if agent.tool_use_behavior != "run_llm_again":
                final = await _output_from_tools(calls, tools, state, ctx, structured)
                if final is not None:  # a tool's result is the answer: no further model call
                    return await _finish_agent(final.output, state, ctx, turn)
            if agent.reset_tool_choice:
                settings = after_tool_calls(settings)
            continue
        text = response.text or ""
        state.last_text = text
        state.messages.append(Message.assistant(text, (), _items(response)))
        if structured is None:
            output: Any = text
        else:
            try:
                output = structured.validate(text)
            except ValidationError as exc:
                if reasks >= agent.output_retries or turn == max_turns:  # no turn left to re-ask
                    raise OutputValidationError(
                        f"{agent.name}'s answer did not match {structured.schema.name} "
                        f"after {reasks + 1} attempt(s): {validation_errors(exc)}"
                    ) from None
                reasks += 1
                reask = (
                    f"{REASK_PREFIX} {structured.schema.name}: {validation_errors(exc)}. "
                    "Reply again with only a JSON object that matches the schema."
                )
                state.messages.append(Message("user", reask, generated=True))
                continue
        if agent.output_validators:
            try:
                output = await validated_output(agent.output_validators, ctx, output)
            except ModelRetry as exc:
                if reasks >= agent.output_retries or turn == max_turns:
                    raise OutputValidationError(
                        f"{agent.name}'s answer was refused by its output validator after "
                        f"{reasks + 1} attempt(s): {exc}"
                    ) from None
                reasks += 1
                retried(state, ctx, str(exc))
                continue
        route = agent.routing()
        if route is not None:
            routed = route.apply(output, state)
            if isinstance(routed, Transfer):
                return NextStepHandoff(routed)
            output = routed
        return await _finish_agent(output, state, ctx, turn)
    raise MaxTurnsExceeded(
        f"{agent.name} used all {max_turns} turns without a final answer (max_turns={max_turns}). "
        "Raise max_turns or check why it keeps calling tools."
    )


async def _finish_agent(
    output: Any, state: AgentRun, ctx: RunContext, turn: int
) -> NextStepFinalOutput:
    """The agent's output, once its output guardrails pass; the root's agent span ends here."""
    if running(state).output_guardrails:
        await run_guardrails(running(state).guardrails("output"), output, state, ctx, "output")
    if state.depth == 0:  # a sub-agent's span is ended by its AgentTool
        ctx.trace.end(state.span, "ok", turns=turn)
    return NextStepFinalOutput(output)


async def _output_from_tools(
    calls: list[ToolCall],
    tools: dict[str, BaseTool],
    state: AgentRun,
    ctx: RunContext,
    structured: OutputSpec | None,
) -> NextStepFinalOutput | None:
    """The agent's output from its tools' results under its ``tool_use_behavior``, or None
    when the model is to be asked again. Text is read as the ``output_type`` when there is one."""
    behavior = running(state).tool_use_behavior
    if callable(behavior):  # fn(ctx, results), openai-agents' form
        results = [
            FunctionToolResult(
                tools.get(c.name),
                c,
                _tool_result(state.messages, c.id),
                _call_status(c, ctx) not in ("error", "timeout"),
            )
            for c in calls
        ]
        verdict = await decided(behavior, ctx, results)
        if not verdict.is_final_output:
            return None
        output = verdict.final_output
        if structured is not None and isinstance(output, str):
            output = _typed(output, structured, state, "tool_use_behavior=fn(ctx, results)")
        return NextStepFinalOutput(output)
    stop = stopping_call(behavior, calls)
    if stop is None:
        return None
    answer = _tool_result(state.messages, calls[stop].id)
    _never_an_error_as_answer(calls[stop], answer, state, ctx)
    if structured is not None:
        return NextStepFinalOutput(
            _typed(answer, structured, state, f"the tool {calls[stop].name!r}")
        )
    return NextStepFinalOutput(answer)


def _typed(text: str, structured: OutputSpec, state: AgentRun, source: str) -> Any:
    """A tool's result read as the agent's output type (no model call is left to re-ask)."""
    try:
        return structured.validate(text)
    except ValidationError as exc:
        raise OutputValidationError(
            f"{state.agent.name}'s output from {source} (tool_use_behavior) did not match "
            f"{structured.schema.name}: {validation_errors(exc)}. Return a value of the "
            "output type from the tool, or drop output_type."
        ) from None


def _call_status(call: ToolCall, ctx: RunContext) -> str | None:
    """The status of the span of tool call ``call`` (None: no span was found)."""
    span = next(
        (
            s
            for s in reversed(ctx.trace.spans)
            if s.kind == "tool_call" and s.attrs.get("call_id") == call.id
        ),
        None,
    )
    return None if span is None else span.status


def _never_an_error_as_answer(call: ToolCall, text: str, state: AgentRun, ctx: RunContext) -> None:
    """Raise `ToolFailed` when the call whose result was to end the run failed (its span's
    status is ``error`` or ``timeout``): a tool error is never the answer of a run that
    succeeded."""
    if _call_status(call, ctx) not in ("error", "timeout"):
        return
    behavior = running(state).tool_use_behavior
    raise ToolFailed(
        f"{state.agent.name}: the tool {call.name!r}, whose result was to be the answer "
        f"(tool_use_behavior={behavior!r}), failed: {text}. Fix the tool, or use "
        "tool_use_behavior='run_llm_again' to let the model see the error and try again.",
        tool=call.name,
        agent=state.agent.name,
    )


def last_calls(messages: list[Message]) -> tuple[ToolCall, ...]:
    """The tool calls of the last assistant message (those a resumed turn answered)."""
    for message in reversed(messages):
        if message.role == "assistant":
            return message.tool_calls
    return ()


def _tool_result(messages: list[Message], call_id: str) -> str:
    for message in reversed(messages):
        if message.role == "tool" and message.tool_call_id == call_id:
            return message.content or ""
    return ""


async def call_model(
    model: ModelClient, request: ModelRequest, state: AgentRun, ctx: RunContext, turn: int
) -> ModelResponse:
    """One model call, checked against the call budget and recorded in the trace."""
    limit = ctx.limits.max_model_calls
    if limit is not None and ctx.model_calls >= limit:
        raise BudgetExceeded(
            f"Model-call budget exhausted at {state.path}: {plural(ctx.model_calls, 'call')} made, "
            f"Limits(max_model_calls={limit}) allows {limit}."
        )
    ctx.model_calls += 1
    trace = ctx.trace
    watchers = state.watchers
    if watchers is not None:
        await watchers.model_started(ctx, state, request)
    model = through(model, state.path, turn)  # an experiment's response cache, when one is on
    span = trace.start(
        "model_call",
        getattr(model, "name", type(model).__name__),
        state.span,
        agent=state.agent.name,
        path=state.path,
        depth=state.depth,
        turn=turn,
    )
    try:
        if watchers is None:
            response = await model.request(request)
        else:  # streamed when the run is
            response = await watchers.request(model, request, ctx, state, span)
    except BaseException as exc:
        status = "cancelled" if isinstance(exc, asyncio.CancelledError) else "error"
        try:
            trace.end(span, status)
        finally:  # the row is kept even when an on_event raises at the call's end
            _record(ctx, model, state, request, None, span, status, getattr(exc, "events", None))
        raise
    try:
        trace.end(span, "ok")
    finally:
        row = _record(ctx, model, state, request, response, span, "ok")
    if watchers is not None:
        await watchers.model_ended(ctx, state, response, row)
    return response


_LOGGED_EVENTS = (
    "retry",
    "structured_fallback",
    "hosted_tool",
    "reasoning",
    "server_state_lost",
    "cache_refused",
)
"""A model client's events that also go to the log lines (all stay on the call's span)."""


def _record(
    ctx: RunContext,
    model: ModelClient,
    state: AgentRun,
    request: ModelRequest,
    response: ModelResponse | None,
    span: Span,
    status: str,
    failed_events: list[dict[str, Any]] | None = None,
) -> CallRow:
    """Add the call's row to the trace, its sizes to its span, its usage to the run (its
    tokens are counted when the row is read: `CallRow.count_tokens`)."""
    events = response.events if response is not None else (failed_events or [])
    row = CallRow.measure(ctx.run_id, span, request, response, state.tally, status, events, model)
    ctx.trace.call_rows.append(row)
    attrs = span.attrs
    attrs["chars_in"], attrs["chars_out"], attrs["retries"] = (
        row.chars_in,
        row.chars_out,
        row.retries,
    )
    if events:
        attrs["events"] = events
        for event in events:  # an adapter's retries and fallbacks show in the log lines too
            if event.get("event") in _LOGGED_EVENTS:
                ctx.trace.log(
                    f"model_{event['event']}",
                    depth=state.depth,
                    path=state.path,
                    agent=state.agent.name,
                    **{k: v for k, v in event.items() if k != "event"},
                )
    if response is None:
        return row
    ctx.usage.add(response.usage, requests=1)
    state.usage.add(response.usage, requests=1)
    state.chars_in += row.chars_in
    if state.budgets:
        _charge(state, row)
    return row


def _charge(state: AgentRun, row: CallRow) -> None:
    """Count a call against every token budget in force, with the best count available."""
    spent, how = row.budget_tokens()
    for budget in state.budgets:
        budget.used += spent
        budget.method = how
        if budget.used > budget.limit:
            raise BudgetExceeded(
                f"Token budget of {budget.label} exceeded at {state.path}: {budget.used:,} tokens used, "
                f"the limit is {budget.limit:,} (counted with {how}).",
                fatal=budget.fatal,
            )


async def run_tools(calls: list[ToolCall], state: AgentRun, ctx: RunContext, turn: int) -> None:
    """Run ``calls`` of ``state.agent`` outside its turns (the calls a resumed run goes on with)."""
    agent = running(state)
    tools = await enabled_tools(agent.tool_map(), ctx, agent)
    if agent.mcp_servers:
        model = model_client(agent, ctx.default_model)
        tools = await server_tools(agent.mcp_servers, tools, ctx, state.span, model)
    await _run_tools(calls, tools, state, ctx, turn)


async def _run_tools(
    calls: list[ToolCall], tools: dict[str, BaseTool], state: AgentRun, ctx: RunContext, turn: int
) -> NextStepHandoff | NextStepRunAgain:
    """Run a turn's tool calls (concurrently when there are several) and add their results to
    the history; the first handoff among them, if any, is the next step."""
    if len(calls) == 1:
        outcomes = [await _run_tool(calls[0], tools, state, ctx, turn)]
    else:
        outcomes = await run_concurrently([_run_tool(c, tools, state, ctx, turn) for c in calls])
    handoff: Transfer | None = None
    paused: list[Paused] = []
    for call, outcome in zip(calls, outcomes):
        if isinstance(outcome.message, Paused):  # waiting for approval: no result yet
            paused.append(outcome.message)
            continue
        if handoff is None and outcome.transfer is not None:
            handoff = outcome.transfer
        state.messages.append(Message.tool(call, model_text(outcome)))
    if paused:
        pause_run(ctx, paused)
    return RUN_AGAIN if handoff is None else NextStepHandoff(handoff)


async def _run_tool(
    call: ToolCall, tools: dict[str, BaseTool], state: AgentRun, ctx: RunContext, turn: int
) -> ToolOutcome:
    trace = ctx.trace
    span = trace.start(
        "tool_call",
        call.name,
        state.span,
        agent=state.agent.name,
        path=state.path,
        depth=state.depth,
        turn=turn,
        call_id=call.id,
        args_chars=len(call.arguments),
    )
    tool = tools.get(call.name)
    watchers = (
        state.watchers if not isinstance(tool, HandoffTool) else None
    )  # a handoff: not a tool
    if watchers is not None:
        await watchers.tool_started(ctx, state, span, call)
    with trace.ends_on_failure(span):
        if tool is None:
            known = ", ".join(tools) or "none"
            outcome = ToolOutcome.error(
                f"there is no tool named {call.name!r}. Available tools: {known}."
            )
        else:
            arguments = read_arguments(tool.name, call.arguments)
            if isinstance(arguments, ToolOutcome):  # not a JSON object: the model is told
                outcome = arguments
            else:
                tcx = ToolCallContext(ctx, span, call.id, state, call.arguments, _run_child)
                outcome = await (
                    invoke_checked(tool, arguments, tcx)
                    if tool.checked
                    else tool.invoke(arguments, tcx)
                )
    if outcome.kind == "handed_off":
        trace.end(span, outcome.status)
    else:
        trace.end(span, outcome.status, result_chars=len(model_text(outcome)))
    if watchers is not None and not isinstance(outcome.message, Paused):
        await watchers.tool_ended(ctx, state, span, call, outcome)
    return outcome


async def _run_child(
    parent: ToolCallContext,
    agent: Agent,
    input: str | list[Message],
    *,
    max_turns: int | None = None,
    timeout: float | None = None,
) -> RunResult:
    """`ToolCallContext.delegate` and ``run(parent=...)``: a child run of a tool call
    (`agentnb.runtime.engine.delegation`, which imports this module: imported when used)."""
    from .delegation import run_child

    return await run_child(agent, input, parent, max_turns=max_turns, timeout=timeout)
