"""`OpenAIResponsesModel`: OpenAI's Responses API, through the ``openai`` package's async client.

`OpenAIModel` speaks Chat Completions, which every compatible server understands; the
Responses API (``POST /v1/responses``) is OpenAI's newer one, the default of openai-agents,
and the only one with hosted tools (web search, file search, code interpreter: `HostedTool`)
and reasoning items. The wire format is converted in `._responses_wire`; everything else
(the concurrency limit, retries with backoff traced as events, the bound on each attempt,
one client per event loop, the key kept masked and never pickled) is `HTTPModel`'s, shared
with the other adapters.

It can keep the conversation on the server (``conversation="server"``): each request then
names the response it continues (``previous_response_id``) and sends only the new items,
while the provider still bills the whole context (`._responses_state` says how the chain
is found). The ``server_state`` event of each call says what was sent; the calls table's
``chars_on_wire`` column shows it beside the billed tokens.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Literal

from .... import checks
from ....errors import UserError
from ...canonical import canonical_request
from ...deltas import StreamItem
from ...http.first_byte import http_client
from ...http.model import DEFAULT_BACKOFF, MAX_RESPONSE_CHARS, HTTPModel
from ...http.rules import Backoff, Failure
from ...request_fields import extra_body
from ...types import ModelRequest, ModelResponse
from .state import Continuation, ResponseChains
from .wire import STATE_FIELDS, HostedTool, MalformedReply, request_to_wire, response_from_wire

__all__ = ["Conversation", "HostedTool", "OpenAIResponsesModel"]

Conversation = Literal["client", "server"]


@dataclass(slots=True)
class Plan:
    """How one call sends its history, and the ``server_state`` event that says so."""

    request: ModelRequest
    at: Continuation
    event: dict[str, Any] | None

    def body(self, model: OpenAIResponsesModel, **extra: Any) -> dict[str, Any]:
        """The keyword arguments of ``responses.create``, the model's ``params`` included."""
        body = request_to_wire(
            model.model, self.request, self.request.messages[self.at.start :], model.tools
        )
        body["store"] = model.conversation == "server"
        if self.at.previous_response_id is not None:
            body["previous_response_id"] = self.at.previous_response_id
        fields = extra_body(model.params, body)  # ModelSettings.extra, then params
        return {**body, **fields, **extra, "timeout": model.timeout}

    def lost(self, model: OpenAIResponsesModel, failed: Failure, events: list[Any]) -> bool:
        """After a 400/404 naming ``previous_response_id`` (the server forgot the response):
        send the whole history instead, once. True when the call is to be tried again so."""
        gone = self.at.previous_response_id
        if (
            gone is None
            or failed.status not in (400, 404)
            or "previous" not in failed.message.lower()
        ):
            return False
        model._chains.forget(gone)
        events.append({"event": "server_state_lost", "previous_response_id": gone})
        self.at = Continuation(None, 0)
        if self.event is not None:  # the call's one server_state event now says what went
            self.event.update(model._sent_event(self.request, self.at))
        return True


class OpenAIResponsesModel(HTTPModel):
    """A model client for OpenAI's Responses API (``POST /v1/responses``).

    ``OpenAIResponsesModel("gpt-4o-mini")`` uses OpenAI with ``OPENAI_API_KEY``; ``base_url``
    (or ``OPENAI_BASE_URL``) points it at another server that speaks the API, ``client=`` takes
    a configured ``openai.AsyncOpenAI`` as is. Its spec string is
    ``"openai-responses:gpt-4o-mini"``.

    - ``conversation``: ``"client"`` (default) sends the whole history every time, with
      ``store=false``; ``"server"`` stores each response on the server (``store=true``) and
      sends only the items after the response a request continues (``previous_response_id``).
      The provider bills the whole context either way; the calls table's ``chars_on_wire`` is
      what went on the wire.
    - ``tools``: hosted tools (`HostedTool`) sent with every request beside the agent's own
      tools; the server runs them, the trace shows their calls (``hosted_tool`` events).
    - ``max_concurrency``, ``max_retries``, ``timeout``, ``stream_idle``, ``backoff``,
      ``params``, ``name``: as for `OpenAIModel`.

    Structured output is asked for with ``text.format`` (a JSON schema), tools are sent
    non-strict (agentnb validates the arguments itself).
    """

    provider = "OpenAIResponsesModel"
    example = "gpt-4o-mini"
    key_env = "OPENAI_API_KEY"
    base_url_env = "OPENAI_BASE_URL"
    host = "api.openai.com"
    client_kind = "openai.AsyncOpenAI"
    client_attr = "responses"

    def __init__(
        self,
        model: str,
        *,
        conversation: Conversation = "client",
        tools: Sequence[HostedTool] = (),
        base_url: str | None = None,
        api_key: str | None = None,
        client: Any = None,
        max_concurrency: int = 8,
        max_retries: int = 3,
        timeout: float | None = 120.0,
        backoff: Backoff | float = DEFAULT_BACKOFF,
        params: Mapping[str, Any] | None = None,
        name: str | None = None,
        stream_idle: float | None = None,
        max_response_chars: int = MAX_RESPONSE_CHARS,
    ) -> None:
        checks.one_of(conversation, "OpenAIResponsesModel(conversation=...)", ("client", "server"))
        refuse_state_fields(params, "OpenAIResponsesModel(params=...)")
        tools = list(tools) if isinstance(tools, (list, tuple)) else tools
        if not isinstance(tools, list) or not all(isinstance(t, HostedTool) for t in tools):
            raise UserError(
                "OpenAIResponsesModel(tools=...) takes a list of HostedTool "
                f"(e.g. [HostedTool('web_search')]); got {tools!r}"[:300]
                + ". The agent's own tools go to Agent(tools=...)."
            )
        super().__init__(
            model,
            base_url=base_url,
            api_key=api_key,
            client=client,
            max_concurrency=max_concurrency,
            max_retries=max_retries,
            timeout=timeout,
            backoff=backoff,
            params=params,
            name=name,
            stream_idle=stream_idle,
            max_response_chars=max_response_chars,
        )
        self.conversation: Conversation = conversation
        self.tools: tuple[HostedTool, ...] = tuple(tools)
        self._chains = ResponseChains()

    def _sdk(self) -> ModuleType:
        import openai

        return openai

    def _make_client(self, api_key: str, base_url: str | None) -> Any:
        import openai

        return openai.AsyncOpenAI(
            api_key=api_key, base_url=base_url, max_retries=0, http_client=http_client(openai)
        )

    def _plan(self, request: ModelRequest, events: list[dict[str, Any]]) -> Plan:
        """What this call sends: in server mode, the continuation and its traced event."""
        if self.conversation == "client":
            return Plan(request, Continuation(None, 0), None)
        at = self._chains.continuation(request.messages)
        event = self._sent_event(request, at)
        events.append(event)
        return Plan(request, at, event)

    def _sent_event(self, request: ModelRequest, at: Continuation) -> dict[str, Any]:
        """The ``server_state`` event: what was sent, measured by the one rule of "characters
        sent" (the canonical request, here with only the messages that went)."""
        sent = ModelRequest(
            request.system,
            request.messages[at.start :],
            request.tools,
            request.output_schema,
            request.agent,
        )
        return {
            "event": "server_state",
            "previous_response_id": at.previous_response_id,
            "messages_kept": at.start,
            "messages_sent": len(request.messages) - at.start,
            "chars_on_wire": len(canonical_request(sent)),
        }

    def _remember(self, request: ModelRequest, response: ModelResponse, rid: str | None) -> None:
        if self.conversation == "server":
            self._chains.remember(request.messages, response, rid)

    def wire_request(self, request: ModelRequest) -> dict[str, Any]:
        """What this call sends (the whole history, as ``conversation="client"`` sends it),
        as the response cache keys it."""
        body = Plan(request, Continuation(None, 0), None).body(self)
        return self._wire("openai.responses", "/responses", body)

    async def request(self, request: ModelRequest) -> ModelResponse:
        async with self._slots.slot() as (client, events):
            plan = self._plan(request, events)

            async def attempt() -> Any:
                body = plan.body(self)
                return await client.responses.with_raw_response.create(**body)

            def fallback(failed: Failure) -> bool:
                return plan.lost(self, failed, events)

            async def read(raw: Any) -> ModelResponse:
                response, rid = response_from_wire(raw.parse())
                self._remember(request, response, rid)
                return response

            return await self._slots.send(
                attempt,
                read,
                events,
                reply="a response",
                malformed=MalformedReply,
                fallback=fallback,
            )

    def stream(self, request: ModelRequest) -> AsyncIterator[StreamItem]:
        """The call streamed: text and function-call argument deltas, then the response (its
        usage from ``response.completed``). Retried like `request` until the first delta; a
        stream broken after it (no ``response.completed``) raises `agentnb.errors.StreamBroken`."""
        from .stream import stream_response

        return stream_response(self, request)

    def __getstate__(self) -> dict[str, Any]:
        state = super().__getstate__()
        state["_chains"] = None  # a copy elsewhere starts its own chains
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        super().__setstate__(state)
        self._chains = ResponseChains()


def refuse_state_fields(fields: Mapping[str, Any] | None, where: str) -> None:
    """A `UserError` for a field of `STATE_FIELDS` in ``fields``."""
    for key in STATE_FIELDS:
        if fields and isinstance(fields, Mapping) and key in fields:
            raise UserError(
                f"{where} cannot set {key!r}: OpenAIResponsesModel(conversation='client' or "
                f"'server') sets it, so that the trace shows what the server kept. Remove {key!r}."
            )
