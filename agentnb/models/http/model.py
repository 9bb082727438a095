"""`HTTPModel`: what every adapter that talks to a server over HTTP shares.

An adapter (`OpenAIModel`, `AnthropicModel`) keeps what is its provider's: how to make its
SDK's client, one attempt on the wire, how to read a reply. The rest is here, written once:
the constructor's common options, finding the key, reading an SDK's exceptions
(`._http.Failure`), closing, pickling; and, through `._send.Slots`, one client per event
loop, a limit on requests in flight, a bound on each attempt (`._deadline.Deadline`),
retries with `._http.Backoff` and ``Retry-After`` (each retry traced as an event), and the
`ModelHTTPError` a failed call ends with.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import replace
from types import ModuleType
from typing import Any, ClassVar

from ... import checks
from ...errors import UserError
from ..request_fields import check_extra
from .attempt_limit import AttemptTimeout
from .rules import Backoff, Failure, Secret, UrlCredentials, display_url, server_message
from .send import Slots

NO_KEY = "not-needed"
"""Sent as the key to a server given by ``base_url`` when no key is set: vLLM, Ollama,
LM Studio, llama.cpp and local proxies ignore it unless they were started with a key."""

DEFAULT_BACKOFF = Backoff()

MAX_RESPONSE_CHARS = 20_000_000
"""The default bound on one reply's text and tool arguments: far above any answer a model
writes, well below what fills a notebook's memory when a server never stops sending."""


class HTTPModel:
    """The base of model clients that reach a server through a provider's SDK.

    A subclass sets the class attributes that name its provider, calls
    ``super().__init__(...)`` with the options every adapter takes, and implements
    `_sdk` (the SDK's module, imported when first needed), `_make_client` and ``request``
    (with `Slots.slot` and `Slots.send`).
    """

    provider: ClassVar[str]
    """The class's name as users write it, for messages: ``"OpenAIModel"``."""
    example: ClassVar[str]
    """A model name to show in messages: ``"gpt-4o-mini"``."""
    key_env: ClassVar[str]
    base_url_env: ClassVar[str]
    host: ClassVar[str]
    """The provider's own host, where a key is needed: ``"api.openai.com"``."""
    client_kind: ClassVar[str]
    """What ``client=`` takes, for messages: ``"openai.AsyncOpenAI"``."""
    client_attr: ClassVar[str]
    """An attribute such a client has (``"chat"``), to refuse something else at once."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None,
        api_key: str | None,
        client: Any,
        max_concurrency: int,
        max_retries: int,
        timeout: float | None,
        backoff: Backoff | float,
        params: Mapping[str, Any] | None,
        name: str | None,
        stream_idle: float | None = None,
        max_response_chars: int = MAX_RESPONSE_CHARS,
    ) -> None:
        if not isinstance(model, str) or not model.strip():
            raise checks.fail(
                f"{self.provider}(model)", f"a model name such as {self.example!r}", model
            )
        where = f"{self.provider}({{}}=...)".format
        checks.positive_int(max_concurrency, where("max_concurrency"), optional=False)
        checks.non_negative_int(max_retries, where("max_retries"))
        checks.positive_seconds(timeout, where("timeout"), infinite=False)
        checks.positive_seconds(stream_idle, where("stream_idle"), infinite=False)
        checks.positive_int(max_response_chars, where("max_response_chars"), optional=False)
        checks.mapping(params, where("params"))
        check_extra(params, where("params"), settings=False)
        checks.text(api_key, where("api_key"), optional=True, quote=False)  # it may be a key
        checks.text(base_url, where("base_url"), optional=True)
        checks.text(name, where("name"), optional=True)
        self.model = model
        self.name = name or model
        self.max_concurrency = max_concurrency
        self.max_retries = max_retries
        self.timeout = timeout
        self.stream_idle = stream_idle
        self.max_response_chars = max_response_chars
        self.backoff = Backoff.of(backoff)
        self.params = dict(params or {})
        self._key: Secret | None = None
        self._url: str | None = None
        self._url_headers: dict[str, Secret] = {}
        """The headers a ``base_url``'s ``user:password@`` became (`UrlCredentials`)."""
        self._url_secrets: tuple[Secret, ...] = ()
        self._credentials_left_behind = False
        self._client = client
        if client is not None:
            if not hasattr(client, self.client_attr):
                raise UserError(
                    f"client must be an {self.client_kind} (or compatible), got {type(client).__name__}"
                )
            self._client = client.with_options(max_retries=0)  # agentnb retries, and traces it
            self.base_url = display_url(str(client.base_url))
        else:
            given = base_url or os.environ.get(self.base_url_env) or None
            split = UrlCredentials.split(given, where("base_url"))
            self._url, self._url_headers, self._url_secrets = (
                split.url,
                split.headers,
                split.secrets,
            )
            self.base_url = display_url(self._url)
            self._key = Secret(self._find_key(api_key))
        self._slots = Slots(self)
        try:  # imported now, so that a process's first call does not pay for it in its time
            self._sdk()
        except ImportError:  # a client given without its package: imported when first used
            pass

    endpoint_id: Any = None
    """What names the server in a response-cache key instead of ``base_url`` (a local
    model's server: its model file, not the port it happened to get)."""

    def _wire(self, api: str, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """A request as sent, for `wire_request`: no credential (``base_url`` is shown without
        user, password or query string) and no client-side option such as ``timeout``."""
        body = {k: v for k, v in body.items() if k != "timeout"}
        endpoint = self.endpoint_id or self.base_url or f"https://{self.host}"
        return {"api": api, "endpoint": endpoint, "path": path, "body": body}

    # -- what a provider supplies

    def _sdk(self) -> ModuleType:
        """The provider's SDK module (``openai``, ``anthropic``)."""
        raise NotImplementedError

    def _make_client(self, api_key: str, base_url: str | None) -> Any:
        """A new SDK client that does not retry by itself."""
        raise NotImplementedError

    # -- shared

    def _find_key(self, api_key: str | None) -> str:
        key = api_key or os.environ.get(self.key_env)
        if key:
            return key
        if self._url and self.host not in self._url:
            return NO_KEY
        raise UserError(
            f"{self.provider}({self.model!r}) needs an API key: set the {self.key_env} environment "
            f"variable (or pass api_key=...). For a local server or a proxy pass base_url=... or "
            f"set {self.base_url_env}; no key is needed then."
        )

    def _new_client(self) -> Any:
        if self._credentials_left_behind:
            raise UserError(
                f"{self!r} is a copy (pickled or deep-copied) of a model whose base_url held "
                "user:password@, which never travels: make the model where it is used"
            )
        if self._key is None:  # unpickled: keys do not travel, the environment has it here
            self._key = Secret(self._find_key(None))
        client = self._make_client(self._key.reveal(), self._url)
        if self._url_headers:
            shown = {name: value.reveal() for name, value in self._url_headers.items()}
            client = client.with_options(default_headers=shown)
        return client

    def _failure(self, exc: Exception) -> Failure | None:
        """What an exception of one attempt was; None when it is not the SDK's nor a
        `Deadline`'s (a bug, not a failure of the server: it is let through)."""
        sdk = self._sdk()
        scrub = self._slots.scrub  # here, where the reply is read: nothing keeps the key after
        if isinstance(exc, sdk.APIStatusError):
            said = scrub(server_message(exc))
            return Failure.status_error(exc.status_code, said, exc.response.headers)
        if not isinstance(exc, sdk.APIError) and not _from_transport(exc):
            return None
        if isinstance(exc, sdk.APIError) and not isinstance(exc, sdk.APIConnectionError):
            said = scrub(f"an unreadable reply ({exc or type(exc).__name__})")
            return Failure(None, said, retryable=False)
        failed = Failure.of(exc, self._url or self.base_url, self.timeout)
        return replace(failed, message=scrub(failed.message))

    async def aclose(self) -> None:
        """Close the HTTP client of the running event loop (if agentnb created it)."""
        await self._slots.aclose()

    def close(self) -> None:
        """Close the HTTP clients agentnb created on other event loops (``run_sync``'s
        included), e.g. before the server they talk to goes away; ``await aclose()`` closes
        the running loop's."""
        self._slots.close_others()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.model!r}, base_url={self.base_url!r})"

    def __getstate__(self) -> dict[str, Any]:
        """A pickled model (a sweep sent to other processes) carries no key: the copy reads
        it from the environment where it runs. A model made with ``client=`` is refused, since
        the client holds the key."""
        if self._client is not None:
            raise UserError(
                f"{self!r} was made with client=..., which holds the API key: it cannot be "
                "pickled. Make it with api_key/base_url instead (the key is then read from "
                f"{self.key_env} where the copy runs)."
            )
        state = dict(self.__dict__)
        state["_key"] = None
        state["_slots"] = None
        state["_credentials_left_behind"] = bool(self._url_headers)
        state["_url_headers"] = {}
        state["_url_secrets"] = ()
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        self._slots = Slots(self)


def _from_transport(exc: BaseException) -> bool:
    """Whether ``exc`` is an HTTP client's own (httpx or a fork) or a `Deadline`'s."""
    module = type(exc).__module__.split(".")[0]
    return module.startswith(("httpx", "httpcore")) or isinstance(exc, AttemptTimeout)
