"""Tools from MCP servers: ``Agent(mcp_servers=[agentnb.mcp.stdio(...), agentnb.mcp.http(...)])``.

An MCP server is a source of tools, so it lives beside function tools in the runtime: the run
loop asks it for its tools when an agent starts (`server_tools`) and each of them is a
`BaseTool` like any other, so approval, tool guardrails, hooks, events and the trace apply
unchanged. The ``mcp`` SDK (``pip install -e ".[mcp]"``) is imported only when a run first
needs a server, never by ``import agentnb``.

- **Listed once.** A server's tools are listed the first time a run needs them and kept on
  the `Server` (``cache_tools=True``): later runs reuse the list without starting the server
  until a tool is called. ``server.refresh()`` forgets the list.
- **One connection per run.** Opened at the first use in a run, shared by the whole
  hierarchy, closed when the run ends (a stdio server is stopped).
- **Bounded.** Starting is bounded by ``connect_timeout``, listing and each call by
  ``timeout`` (and all of it by the run's own timeout). A server that cannot start or list its
  tools ends the run ``ok=False`` with `agentnb.errors.ToolFailed`; a call to a server that
  exited, failed or hung is an error result the model reads (``ERROR: ...``), its span's
  status ``error`` or ``timeout``, and the run goes on.
- **Measured.** Each agent span records what its servers' tool specs weigh
  (``attrs["tool_sources"]``); `agentnb.tool_sources` reads them per call.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal

from ... import checks
from ...errors import ToolFailed, UserError
from ...models.canonical import dumps, tool_payload
from ...trace.tokens import spec_tokens
from ..data.outcome import ToolOutcome
from ..guards.tool_guardrails import check_tool_guardrails
from ._mcp_connection import Connection, ServerUnavailable
from .function import APPROVAL_FORMS, DEFAULT_MAX_RESULT_CHARS, BaseTool, clip_result
from .schema import clean_schema

if TYPE_CHECKING:
    from ...trace.spans import Span
    from ..data.context import RunContext
    from .context import ToolCallContext

INSTALL = 'pip install -e ".[mcp]"'
SOURCE_PREFIX = "mcp:"
"""How a server's tools are labelled in ``tool_sources``: ``mcp:<server name>``."""


@dataclass(eq=False)
class Server:
    """How to reach one MCP server, and which of its tools to offer. Build it with
    `agentnb.mcp.stdio` or `agentnb.mcp.http`."""

    name: str
    """Names the server in errors, spans and tables (``mcp:<name>``)."""
    transport: Literal["stdio", "http"]
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)
    """Extra environment variables of a stdio server (their values never shown)."""
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    """HTTP headers sent to an HTTP server (their values never shown: they hold tokens)."""
    allowed_tools: tuple[str, ...] | None = None
    """The server's tools to offer, by their names on the server (None: all)."""
    prefix: str = ""
    """Put before each tool's name, to tell apart two servers' tools of the same name."""
    timeout: float = 60.0
    """Seconds a listing or one call may take before it is an error."""
    connect_timeout: float = 30.0
    """Seconds to start the server (or connect to it) and initialise the session."""
    cache_tools: bool = True
    """Keep the listed tools on the server for later runs (``refresh()`` forgets them)."""
    max_result_chars: int | None = DEFAULT_MAX_RESULT_CHARS
    needs_approval: Any = False
    """``True`` or ``fn(ctx, arguments) -> bool``: ask the run's approver before each call."""
    input_guardrails: tuple[Callable[..., Any], ...] = ()
    output_guardrails: tuple[Callable[..., Any], ...] = ()
    _listed: list[Any] | None = field(default=None, init=False, repr=False)

    def __post_init__(self) -> None:
        _require_sdk()  # now, not in the middle of a run
        where = f"agentnb.mcp.{self.transport}(...)"
        checks.text(self.name, f"{where} name", optional=False)
        checks.positive_seconds(self.timeout, f"{where} timeout")
        checks.positive_seconds(self.connect_timeout, f"{where} connect_timeout")
        checks.positive_int(self.max_result_chars, f"{where} max_result_chars")
        if not isinstance(self.prefix, str) or not re.fullmatch(r"[A-Za-z0-9_-]*", self.prefix):
            raise checks.fail(f"{where} prefix", "letters, digits, _ or -", self.prefix)
        allowed = self.allowed_tools
        if allowed is not None and (
            isinstance(allowed, str) or not all(isinstance(t, str) for t in allowed)
        ):
            raise checks.fail(f"{where} allowed_tools", "a list of tool names", allowed)
        if allowed is not None:
            self.allowed_tools = tuple(allowed)
        for label, given in (("env", self.env), ("headers", self.headers)):
            if given is not None and not (
                isinstance(given, Mapping)
                and all(isinstance(k, str) and isinstance(v, str) for k, v in given.items())
            ):
                raise UserError(f"{where} {label} must be a dict of text to text")
        approval = self.needs_approval
        if approval is not True and approval is not False and not callable(approval):
            raise checks.fail(f"{where} needs_approval", "True, False or a function", approval)
        self.input_guardrails = check_tool_guardrails(
            self.input_guardrails, f"{where} input_guardrails", "input"
        )
        self.output_guardrails = check_tool_guardrails(
            self.output_guardrails, f"{where} output_guardrails", "output"
        )

    @property
    def label(self) -> str:
        return f"MCP server {self.name!r}"

    @property
    def source(self) -> str:
        """The server's label in ``tool_sources`` and tables: ``mcp:<name>``."""
        return SOURCE_PREFIX + self.name

    def refresh(self) -> None:
        """Forget the listed tools: the next run lists them again."""
        self._listed = None

    def connection(self) -> Connection:
        """A new, unopened connection to the server (`server_tools` opens one per run)."""
        return Connection(self.label, self._open_transport)

    def _open_transport(self, errlog: Any) -> Any:
        if self.transport == "stdio":
            from mcp.client.stdio import StdioServerParameters, stdio_client

            params = StdioServerParameters(
                command=self.command, args=list(self.args), env=dict(self.env or {}), cwd=self.cwd
            )
            return stdio_client(params, errlog=errlog)
        return _http_transport(self.url, dict(self.headers or {}), self.timeout)

    def __repr__(self) -> str:
        where = f"{self.command} {' '.join(self.args)}".strip() if self.command else self.url
        secrets = sorted((self.env or {}) if self.transport == "stdio" else (self.headers or {}))
        hidden = (
            f", {'env' if self.transport == 'stdio' else 'headers'}={secrets}" if secrets else ""
        )
        return f"agentnb.mcp.{self.transport}({self.name!r}: {where}{hidden})"


def _http_transport(url: str, headers: dict[str, str], seconds: float) -> Any:
    import httpx2
    from mcp.client.streamable_http import streamable_http_client

    @_async_cm
    async def opened() -> Any:
        client = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(seconds))
        async with client, streamable_http_client(url, http_client=client) as streams:
            yield streams

    return opened()


def _async_cm(fn: Any) -> Any:
    import contextlib

    return contextlib.asynccontextmanager(fn)


def _require_sdk() -> None:
    import importlib.util
    import sys

    if "mcp" in sys.modules:
        found = sys.modules["mcp"] is not None  # None: blocked, as an uninstalled package is
    else:
        found = importlib.util.find_spec("mcp") is not None
    if not found:
        raise UserError(
            f"MCP servers need the mcp package, which is not installed: {INSTALL}"
        ) from None


@dataclass(eq=False)
class MCPTool(BaseTool):
    """One tool of an MCP server, called through the run's connection to it."""

    server: Server = field(kw_only=True)
    remote_name: str = field(kw_only=True)
    """The tool's name on the server (``name`` adds the server's ``prefix``)."""

    async def invoke(self, arguments: dict[str, Any], ctx: ToolCallContext) -> ToolOutcome:
        """Call the tool on the server; whatever goes wrong is an error the model reads."""
        server = self.server
        try:
            connection = await open_connection(server, ctx.run)
            result = await connection.request(
                "call_tool", server.timeout, self.remote_name, arguments
            )
        except ServerUnavailable as exc:
            timed_out = exc.status == "timeout"
            return ToolOutcome.error(
                f"{self.name} failed: {exc}", status="timeout" if timed_out else "error"
            )
        except Exception as exc:  # the SDK's MCPError (the server refused the request) and kin
            return ToolOutcome.error(f"{self.name} failed: {type(exc).__name__}: {exc}")
        text = result_text(result)
        if getattr(result, "is_error", False):
            return ToolOutcome.error(f"{self.name} failed: {text}")
        return ToolOutcome.ok(clip_result(text, server.max_result_chars))

    def __repr__(self) -> str:
        return f"MCPTool({self.name!r} of {self.server.source})"


def result_text(result: Any) -> str:
    """What the model reads of a ``CallToolResult``: its text parts joined; other parts (an
    image, a resource) named with their size; the structured content when there is no text."""
    parts: list[str] = []
    for item in getattr(result, "content", None) or ():
        kind = getattr(item, "type", "")
        if kind == "text":
            parts.append(item.text)
        elif kind == "resource" and hasattr(getattr(item, "resource", None), "text"):
            parts.append(item.resource.text)
        else:
            data = getattr(item, "data", "") or ""
            mime = getattr(item, "mime_type", None) or getattr(item, "mimeType", "")
            parts.append(f"[{kind or 'content'} {mime} of {len(data):,} characters]".strip())
    structured = getattr(result, "structured_content", None)
    if not parts and structured is not None:
        return dumps(structured)
    return "\n".join(parts)


# -- what the run loop calls


async def open_connection(server: Server, ctx: RunContext) -> Connection:
    """The run's open connection to ``server`` (opened now if it is the first use); a
    `ServerUnavailable` if it cannot be opened. The run closes it when it ends."""
    key = ("mcp", id(server))
    found = ctx.open_resources.get(key)
    if found is None:
        found = ctx.open_resources[key] = server.connection()
    connection: Connection = found
    await connection.open(server.connect_timeout)
    return connection


async def server_tools(
    servers: Sequence[Server],
    tools: dict[str, BaseTool],
    ctx: RunContext,
    span: Span,
    model: object = None,
) -> dict[str, BaseTool]:
    """``tools`` with the tools of ``servers`` added (listed once, filtered), for an agent
    whose span is ``span``; what each server's specs weigh goes on the span (characters, and
    tokens counted by ``model``'s tokenizer as its calls' ``tokens_in`` counts them). Raises
    `ToolFailed` (ending the run) when a server cannot list its tools or a name is taken."""
    offered = dict(tools)
    weights: dict[str, dict[str, int | str | None]] = {}
    agent = span.agent or span.name
    for server in servers:
        try:
            made = await _listed(server, ctx)
        except ServerUnavailable as exc:
            raise ToolFailed(
                f"{agent}: the tools of {server.label} could not be listed: {exc}. Check the "
                "server's command or URL (it must speak MCP), or raise its connect_timeout.",
                tool=server.source,
                agent=agent,
            ) from None
        chars = 0
        for each in made:
            if each.name in offered:
                raise ToolFailed(
                    f"{agent}: {server.label} offers a tool named {each.name!r}, a name "
                    f"already taken; give the server prefix='...' or leave the tool out with "
                    "allowed_tools=[...].",
                    tool=each.name,
                    agent=agent,
                )
            offered[each.name] = each
            chars += len(dumps(tool_payload(each.spec)))  # the rule of agentnb.trace.sizes
        tokens, method = spec_tokens((each.spec for each in made), model)
        weights[server.source] = {
            "tools": len(made),
            "chars": chars,
            "tokens": tokens,
            "tokens_method": method,
        }
    span.attrs["tool_sources"] = weights
    return offered


async def _listed(server: Server, ctx: RunContext) -> list[MCPTool]:
    listed = server._listed
    if listed is None:
        connection = await open_connection(server, ctx)
        listed = await _all_tools(connection, server.timeout)
        if server.cache_tools:
            server._listed = listed
    allowed = server.allowed_tools
    return [
        _tool(server, t) for t in listed if allowed is None or getattr(t, "name", "") in allowed
    ]


async def _all_tools(connection: Connection, seconds: float) -> list[Any]:
    """Every tool the server lists, following its pages."""
    tools: list[Any] = []
    cursor: str | None = None
    for _ in range(1000):  # a server that pages forever is cut off, not followed
        page = await connection.request(
            "list_tools", seconds, *(() if cursor is None else (cursor,))
        )
        tools.extend(page.tools)
        cursor = getattr(page, "next_cursor", None)
        if not cursor:
            break
    return tools


def _tool(server: Server, listed: Any) -> MCPTool:
    remote = listed.name
    schema = getattr(listed, "input_schema", None) or {"type": "object", "properties": {}}
    return MCPTool(
        server.prefix + remote,
        listed.description or "",
        clean_schema(dict(schema)),
        server=server,
        remote_name=remote,
        needs_approval=server.needs_approval,
        input_guardrails=server.input_guardrails,
        output_guardrails=server.output_guardrails,
    )


def check_servers(servers: Any, where: str) -> None:
    """A `UserError` unless ``servers`` is a list of `Server` (from `agentnb.mcp`)."""
    if not isinstance(servers, (list, tuple)) or not all(isinstance(s, Server) for s in servers):
        raise checks.fail(
            where, "a list of agentnb.mcp.stdio(...) / agentnb.mcp.http(...) servers", servers
        )
    names = [s.name for s in servers]
    if len(set(names)) != len(names):
        raise UserError(f"{where} names two servers alike ({names}); give each its own name=")


# -- the builders (`agentnb.mcp.stdio`, `agentnb.mcp.http`)


def stdio(
    command: str,
    args: Sequence[str] = (),
    *,
    env: Mapping[str, str] | None = None,
    cwd: str | None = None,
    name: str | None = None,
    **options: Any,
) -> Server:
    """A server started as a process that speaks MCP on stdin/stdout: ``stdio("npx", ["-y",
    "@modelcontextprotocol/server-filesystem", "/data"])``. ``env`` is added to a minimal
    environment (the SDK's: not this process's secrets). Options: see `Server`
    (``allowed_tools``, ``prefix``, ``timeout``, ``connect_timeout``, ``cache_tools``,
    ``needs_approval``, ``input_guardrails``, ``output_guardrails``, ``max_result_chars``)."""
    checks.text(command, "agentnb.mcp.stdio(command)", optional=False)
    if isinstance(args, str) or not all(isinstance(a, str) for a in args):
        raise checks.fail("agentnb.mcp.stdio(command, args)", "a list of text", args)
    return Server(
        name or _default_name(command, args),
        "stdio",
        command=command,
        args=tuple(args),
        env=dict(env) if env is not None else None,
        cwd=cwd,
        **_options(options),
    )


def http(
    url: str, *, headers: Mapping[str, str] | None = None, name: str | None = None, **options: Any
) -> Server:
    """A server reached over streamable HTTP: ``http("http://127.0.0.1:8000/mcp",
    headers={"Authorization": "Bearer ..."})`` (header values are never shown). Options: see
    `stdio`."""
    checks.text(url, "agentnb.mcp.http(url)", optional=False)
    if not re.match(r"https?://", url):
        raise checks.fail("agentnb.mcp.http(url)", "an http:// or https:// URL", url)
    host = re.sub(r"^https?://", "", url).split("/")[0].split("@")[-1]
    return Server(
        name or host,
        "http",
        url=url,
        headers=dict(headers) if headers is not None else None,
        **_options(options),
    )


_OPTIONS = frozenset(
    {
        "allowed_tools",
        "prefix",
        "timeout",
        "connect_timeout",
        "cache_tools",
        "max_result_chars",
        "needs_approval",
        "input_guardrails",
        "output_guardrails",
    }
)


def _options(options: dict[str, Any]) -> dict[str, Any]:
    unknown = sorted(set(options) - _OPTIONS)
    if unknown:
        raise UserError(
            f"Unknown MCP server option(s) {', '.join(unknown)}; a server takes "
            f"{', '.join(sorted(_OPTIONS))}."
        )
    if callable(options.get("needs_approval")):
        from ..data.callbacks import check_callable

        check_callable(options["needs_approval"], "MCP server needs_approval", *APPROVAL_FORMS)
    return options


def _default_name(command: str, args: Sequence[str]) -> str:
    """A server's name from how it is started: the npm package or script, else the command."""
    for arg in args:
        if not arg.startswith("-"):
            base = arg.rstrip("/").split("/")[-1]
            return re.sub(r"^server-|\.(py|js)$", "", base) or base
    return command.rstrip("/").split("/")[-1]
