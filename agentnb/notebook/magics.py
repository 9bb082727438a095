"""``%%agent`` and ``%%agent_run``: thin shells over `agentnb.notebook.commands`.

A magic parses its line, looks names up in the user namespace and calls the plain function.
Every mistake in a cell is an IPython `UsageError`: one line, naming the valid choices, and
no traceback (like jupysql's ``%%sql``). Settings are traitlets, so
``%config AgentMagics.default_model = "openai:gpt-4o-mini"`` works as in jupysql.
"""

from __future__ import annotations

import argparse
import keyword
import re
import shlex
from typing import Any, NoReturn

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, magics_class
from traitlets import Bool, CaselessStrEnum, Float, Int, Unicode

from ..errors import UserError
from ..models.types import Message
from ..runtime import Session
from . import commands, hints
from ._names import (
    resolve_model,
    resolve_output,
    resolve_result,
    resolve_session,
    resolve_tools,
    the_agent,
)


class _Parser(argparse.ArgumentParser):
    """argparse that reports every problem as a one-line `UsageError` with the usage."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(f"{self.prog}: {message}; usage: {_usage(self)}")


def _usage(parser: argparse.ArgumentParser) -> str:
    return parser.usage or parser.prog


def _options(parser: argparse.ArgumentParser) -> str:
    return ", ".join(s for a in parser._actions for s in a.option_strings)


def _parser(name: str, options: list[tuple[tuple[str, ...], dict[str, Any]]]) -> _Parser:
    shown = " ".join(
        f"[{flags[0]} {kwargs['metavar']}]" if "metavar" in kwargs else f"[{flags[0]}]"
        for flags, kwargs in options
    )
    parser = _Parser(prog=name, usage=f"{name} NAME {shown}", add_help=False, allow_abbrev=False)
    parser.add_argument("name", metavar="NAME")
    for flags, kwargs in options:
        parser.add_argument(*flags, **kwargs)
    return parser


def _positive(kind: type) -> Any:
    def parse(text: str) -> Any:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"{text!r} must be positive")
        return value

    parse.__name__ = kind.__name__
    return parse


def _run_id(text: str) -> str:
    if not text or any(c.isspace() for c in text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a run id: use one word without spaces, e.g. review-1"
        )
    return text


AGENT = _parser(
    "%%agent",
    [
        (("--model",), {"metavar": "M"}),
        (("--tools",), {"metavar": "a,b"}),
        (("--output",), {"metavar": "TYPE"}),
        (("--max-turns",), {"metavar": "N", "type": _positive(int), "dest": "max_turns"}),
        (("--timeout",), {"metavar": "S", "type": _positive(float)}),
    ],
)
AGENT_RUN = _parser(
    "%%agent_run",
    [
        (("-o", "--out"), {"metavar": "VAR", "dest": "out"}),
        (("--timeout",), {"metavar": "S", "type": _positive(float)}),
        (("--run-id",), {"metavar": "ID", "type": _run_id, "dest": "run_id"}),
        (("--continue",), {"metavar": "PREV", "dest": "previous"}),
        (("--session",), {"metavar": "S"}),
        (("--no-stream",), {"action": "store_true", "dest": "no_stream"}),
    ],
)


def parse(parser: _Parser, line: str) -> argparse.Namespace:
    """Parse a magic's line; an unknown option lists the valid ones."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise UsageError(f"{parser.prog}: {exc} in {line!r}; usage: {_usage(parser)}") from None
    args, extra = parser.parse_known_args(words)
    if extra:
        what = "option" if extra[0].startswith("-") else "argument"
        raise UsageError(
            f"{parser.prog}: unknown {what} {extra[0]!r}; valid options: {_options(parser)}; "
            f"usage: {_usage(parser)}"
        )
    if not args.name.isidentifier() or keyword.iskeyword(args.name):
        raise UsageError(f"{parser.prog}: NAME must be a Python identifier, got {args.name!r}")
    return args


@magics_class
class AgentMagics(Magics):
    """Define agents (``%%agent``) and run them (``%%agent_run``) from notebook cells."""

    default_model = Unicode(
        None,
        allow_none=True,
        config=True,
        help="Model for %%agent cells without --model: a spec string ('openai:gpt-4o-mini') or "
        "the name of a variable holding a model client (%config copies objects, so name it).",
    )
    max_turns = Int(10, config=True, help="Default --max-turns for %%agent.")
    timeout = Float(
        None, allow_none=True, config=True, help="Default --timeout (seconds) for %%agent_run."
    )
    live = CaselessStrEnum(
        ["auto", "always", "never"],
        "auto",
        config=True,
        help="Show the live RunMonitor during %%agent_run: 'auto' shows it in a Jupyter kernel "
        "(not in a terminal).",
    )

    stream = Bool(
        True,
        config=True,
        help="Stream %%agent_run (the live monitor shows each agent's text as it is written); "
        "--no-stream turns it off for one cell.",
    )

    @property
    def namespace(self) -> dict[str, Any]:
        return self.shell.user_ns if self.shell is not None else {}

    def hidden(self) -> set[str]:
        """Names IPython put in the namespace itself: never offered as choices."""
        return set(getattr(self.shell, "user_ns_hidden", {}) or {})

    @cell_magic
    def agent(self, line: str, cell: str) -> None:
        """``%%agent NAME [--model M] [--tools a,b] [--output TYPE] [--max-turns N] [--timeout S]``

        The cell body is the agent's instructions; the agent is bound to NAME."""
        args = parse(AGENT, line)
        if not commands.strip_directives(cell):
            raise UsageError(
                f"%%agent {args.name}: the cell body is the agent's instructions, and it is "
                f"empty; write them on the lines under the magic, e.g. "
                f"'%%agent {args.name} --model my_model' then 'You review contract clauses.'"
            )
        ns, hidden = self.namespace, self.hidden()
        model = resolve_model(
            args.model if args.model is not None else self.default_model, ns, hidden
        )
        tools = resolve_tools(args.tools, ns, hidden) if args.tools else []
        output = resolve_output(args.output, ns, hidden) if args.output else None
        try:
            agent = commands.define_agent(
                args.name,
                cell,
                model=model,
                tools=tools,
                output=output,
                max_turns=args.max_turns or self.max_turns,
                timeout=args.timeout,
            )
        except UserError as exc:
            raise UsageError(f"%%agent: {_one_line(exc)}") from None
        ns[args.name] = agent
        print(commands.summary(agent))

    @cell_magic
    def agent_run(self, line: str, cell: str) -> None:
        """``%%agent_run NAME [-o VAR] [--timeout S] [--run-id ID] [--continue PREV] [--session S] [--no-stream]``

        Runs agent NAME on the cell body ({identifier} interpolated from the namespace), with
        a live monitor, and displays the result; -o VAR stores the RunResult in VAR. --run-id
        fixes the run id (random otherwise), so the log lines are the same on every run.
        --continue PREV sends the conversation of the earlier result PREV, then the cell body.
        --session S keeps the conversation in the `agentnb.Session` S (a variable; a new
        in-memory session named S is bound to S when there is none), so each cell continues it.
        Agents without a model (sub-agents included) use ``AgentMagics.default_model``.
        Streamed (the default), the monitor shows each agent's text as it is written and the
        result then takes its place; --no-stream shows the monitor's last state above it."""
        args = parse(AGENT_RUN, line)
        ns, hidden = self.namespace, self.hidden()
        agent = the_agent(args.name, ns, hidden)
        previous = resolve_result(args.previous, ns, hidden) if args.previous else None
        options: dict[str, Any] = {}
        if args.session is not None:
            if previous is not None:
                raise UsageError(
                    "%%agent_run: --continue and --session both give the run a history; "
                    "pass one of them (--session S keeps the conversation across cells)"
                )
            # a new conversation when S is not defined: bound to S once it ran
            options["session"] = resolve_session(args.session, ns, hidden) or Session(
                id=args.session
            )
        if self.default_model is not None:
            options["model"] = resolve_model(self.default_model, ns, hidden)
        if args.out is not None and (not args.out.isidentifier() or keyword.iskeyword(args.out)):
            raise UsageError(f"%%agent_run: -o needs a Python identifier, got {args.out!r}")
        try:
            text = commands.interpolate(commands.strip_directives(cell), ns)
        except UserError as exc:
            raise UsageError(f"%%agent_run: {_one_line(exc)}") from None
        if not text:
            raise UsageError(
                f"%%agent_run {args.name}: the cell body is the input to the agent, and it is "
                f"empty; write it on the lines under the magic, e.g. "
                f"'%%agent_run {args.name} -o result' then 'Review this clause: {{clause}}'"
            )
        timeout = args.timeout or commands.agent_timeout(agent) or self.timeout
        input: str | list[Message] = text
        if previous is not None:
            input = [*previous.to_input_list(), Message.user(text)]
        stream = self.stream and not args.no_stream
        monitor: Any = False
        if self._live():
            from .monitor import RunMonitor

            monitor = RunMonitor(agent.name)
        try:
            result = commands.run_live(
                agent,
                input,
                timeout=timeout,
                monitor=monitor,
                run_id=args.run_id,
                stream=stream,
                **options,
            )
        except UserError as exc:  # e.g. an agent whose model spec cannot be resolved
            raise UsageError(f"%%agent_run: {_one_line(exc)}") from None
        if args.out is not None:
            ns[args.out] = result
        if args.session is not None:
            ns[args.session] = options["session"]
        if monitor is not False and stream:
            monitor.replace(result)  # the final result takes the live view's place
        else:
            from IPython.display import display

            display(result)  # type: ignore[no-untyped-call]

    def _live(self) -> bool:
        if self.live == "auto":
            return bool(getattr(self.shell, "kernel", None) is not None)
        return bool(self.live == "always")


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split())


_OUR_MAGIC_ALONE = re.compile(r"%%agent(_run)?(\s|$)")


def give_empty_body(lines: list[str]) -> list[str]:
    """An input transformer: a cell that is only a ``%%agent``/``%%agent_run`` line gets a blank
    body. IPython refuses a cell magic with an empty body before the magic runs, with a
    generic message; with a blank body the magic runs and says what its body is for."""
    if len(lines) == 1 and _OUR_MAGIC_ALONE.match(lines[0]):
        return [lines[0].rstrip("\n") + "\n", "\n"]
    return lines


def load_ipython_extension(ipython: Any) -> None:
    """Register the magics once: loading again (``%reload_ext``) reuses the same instance, so
    ``%config AgentMagics`` settings survive and nothing is registered twice."""
    hints.install(ipython)
    cleanup = ipython.input_transformers_cleanup
    if give_empty_body not in cleanup:
        cleanup.append(give_empty_body)
    existing = [c for c in ipython.configurables if type(c).__name__ == "AgentMagics"]
    if existing:
        ipython.register_magics(existing[0])
        return
    ipython.register_magics(AgentMagics(shell=ipython))
