"""`RunState`: a paused run written down, sealed so that resuming it checks it was not changed.

A state holds the conversation of every paused agent (the user's input, the model's answers,
the tool results), the documents attached to the run, the calls waiting for approval and the
run's records so far (usage, the tokens its token budget counts, calls table, decisions). It holds no key and no agent definition.

Sealing: ``integrity.fields`` has the SHA-256 of each top-level field's canonical JSON,
``integrity.digest`` the SHA-256 of that map. With a key (``to_state(key=...)``),
``integrity.signature`` is the HMAC-SHA256 of the same map: without the key nobody can
make an edited state pass. An unsigned state is protected against accidents (a truncated
file, a hand edit), a signed one against people.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from ...errors import RunPaused, UserError
from ...models.types import Message

if TYPE_CHECKING:
    from .context import RunContext
    from .result import RunResult

STATE_VERSION = 3

_INTEGRITY = "integrity"


class RunState(dict[str, Any]):
    """A paused run's state (``result.to_state()``): a JSON-able dict, sealed; pass it (or the
    same dict read back from JSON) to `agentnb.resume`."""

    @classmethod
    def from_json(cls, text: str | bytes) -> RunState:
        """A state read back from the JSON text `to_json` wrote (a `UserError` if it is not
        a JSON object)."""
        try:
            value = json.loads(text)
        except (TypeError, ValueError, RecursionError) as exc:
            raise UserError(
                f"RunState.from_json() takes the JSON text of a state: {type(exc).__name__}"
            ) from None
        if not isinstance(value, dict):
            raise UserError(
                f"RunState.from_json() takes a JSON object, got a JSON {type(value).__name__}"
            )
        return cls(value)

    def to_json(self) -> str:
        """The state as JSON text (what `from_json` reads)."""
        return json.dumps(self, ensure_ascii=False)

    @property
    def interruptions(self) -> list[Any]:
        """The calls waiting for approval, as `Interruption` objects (a `UserError` if the
        state is damaged)."""
        from .approvals import Interruption
        from .state_checks import check_shape

        return [Interruption(**i.model_dump()) for i in check_shape(self).interruptions]


def canonical(value: Any) -> str:
    """The one JSON text of ``value`` that digests and signatures are taken over (a
    `UserError` for what JSON cannot hold)."""
    try:
        return json.dumps(
            value, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False
        )
    except (TypeError, ValueError, RecursionError) as exc:
        raise UserError(
            f"The state is not JSON ({type(exc).__name__}: {exc}); resume() takes the dict "
            "result.to_state() gave, or the same read back from JSON."
        ) from None


def _key_bytes(key: Any, where: str) -> bytes:
    if isinstance(key, str) and key:
        return key.encode()
    if isinstance(key, bytes) and key:
        return key
    raise UserError(f"{where}(key=...) must be a non-empty str or bytes, got {type(key).__name__}")


def seal(content: dict[str, Any], key: str | bytes | None = None) -> RunState:
    """``content`` (a state without its ``integrity``) with its digests, signed with ``key``
    when one is given: what ``to_state`` returns. Sealing an edited state is on whoever does it."""
    body = {k: v for k, v in content.items() if k != _INTEGRITY}
    fields = {name: _sha256(canonical(value)) for name, value in body.items()}
    integrity: dict[str, Any] = {"fields": fields, "digest": _sha256(canonical(fields))}
    if key is not None:
        integrity["signature"] = _hmac(_key_bytes(key, "to_state"), fields)
    return RunState({**body, _INTEGRITY: integrity})


def verify(state: dict[str, Any], key: str | bytes | None) -> None:
    """A `UserError` unless ``state`` is as it was sealed (and signed with ``key``, if given)."""
    secret = None if key is None else _key_bytes(key, "resume")
    integrity = state.get(_INTEGRITY)
    if not isinstance(integrity, dict) or not isinstance(integrity.get("fields"), dict):
        raise UserError(
            "resume(): the state has no integrity record (to_state() writes one), so it cannot "
            "be checked; resume only a state as result.to_state() gave it."
        )
    recorded = integrity["fields"]
    body = {k: v for k, v in state.items() if k != _INTEGRITY}
    changed = sorted(
        str(name)
        for name in set(body) | set(recorded)
        if name not in body or recorded.get(name) != _sha256(canonical(body[name]))
    )
    if changed:
        raise UserError(
            f"resume(): the state was changed after to_state(): {', '.join(changed)} "
            "no longer match(es) its digest. Resume a state only as to_state() wrote it."
        )
    if integrity.get("digest") != _sha256(canonical(recorded)):
        raise UserError("resume(): the state's digest does not match its fields: it was changed.")
    signature = integrity.get("signature")
    if secret is None:
        if signature is not None:
            raise UserError(
                "resume(): this state is signed; pass resume(..., key=...) with the key given "
                "to to_state(key=...)."
            )
        return
    if not isinstance(signature, str):
        raise UserError(
            "resume(key=...): the state is not signed (to_state(key=...) signs it); an unsigned "
            "state is refused when a key is given, since its signature may have been removed."
        )
    if not hmac.compare_digest(signature, _hmac(secret, recorded)):
        raise UserError(
            "resume(key=...): the state's signature does not match: it was changed after "
            "to_state(key=...) by someone without the key, or the key is not the one it was "
            "signed with."
        )


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _hmac(key: bytes, fields: dict[str, Any]) -> str:
    return hmac.new(key, canonical(fields).encode(), hashlib.sha256).hexdigest()


def message_state(m: Message) -> dict[str, Any]:
    """A message as the state holds it."""
    return {
        "role": m.role,
        "content": m.content,
        "tool_calls": [[c.name, c.arguments, c.id] for c in m.tool_calls],
        "tool_call_id": m.tool_call_id,
        "name": m.name,
        "generated": m.generated,
    }


def run_state(result: RunResult, key: str | bytes | None = None) -> RunState:
    """``result.to_state()``: a sealed, JSON-able state to resume a paused run from. All of it
    is the run's data; where the agents' scripts stood is what the engine wrote down as the
    run paused (`RunContext.scripts`)."""
    ctx = result.context
    if ctx is None or not isinstance(result.error, RunPaused) or ctx.root is None:
        raise UserError(
            "to_state() is for a paused run (approver='pause', error RunPaused); this run "
            f"ended with {type(result.error).__name__ if result.error else 'ok=True'}."
        )
    state = ctx.root
    _check_one_pause_per_path(ctx)
    kept = dict(ctx.paused_agents)
    listed = {(i.path, i.call_id) for i in ctx.interruptions}
    listed |= {(path.rpartition("/")[0], call_id) for path, (call_id, _) in kept.items()}
    rerun = [
        {"path": path, "call_id": c.id, "tool": c.name, "arguments_text": c.arguments}
        for path, messages in [(state.path, state.messages)]
        + [(p, sub.messages) for p, (_, sub) in kept.items()]
        for c in unanswered(messages)
        if (path, c.id) not in listed
    ]
    return seal(
        {
            "agentnb_state": STATE_VERSION,
            "run_id": ctx.run_id,
            "agent": state.agent.name,
            "path": state.path,
            "turns": state.turns,
            "messages": [message_state(m) for m in state.messages],
            "interruptions": [asdict(i) for i in ctx.interruptions],
            "rerun": rerun,
            "sub_agents": {
                path: {
                    "agent": sub.agent.name,
                    "turns": sub.turns,
                    "messages": [message_state(m) for m in sub.messages],
                    "call_id": call_id,
                }
                for path, (call_id, sub) in kept.items()
            },
            "artifacts": {k: v for k, v in ctx.artifacts.items() if k != "input"},
            "input": ctx.artifacts.get("input", ""),
            "usage": asdict(ctx.usage),
            "model_calls": ctx.model_calls,
            "tokens_used": sum(
                row.budget_tokens()[0] for row in ctx.trace.call_rows if row.status == "ok"
            ),
            "calls": [_row(row.as_dict()) for row in ctx.trace.call_rows],
            "approvals": [_jsonable(asdict(r)) for r in ctx.approvals],
            "scripts": dict(ctx.scripts),
        },
        key,
    )


def _check_one_pause_per_path(ctx: RunContext) -> None:
    """A `UserError` when the pause went through two calls of one sub-agent at once: a state
    keeps one paused history per sub-agent path, so such a run cannot be resumed."""
    keys = [(i.path, i.call_id) for i in ctx.interruptions]
    twice = sorted(set(ctx.paused_twice) | {path for path, _ in keys if keys.count((path, _)) > 1})
    if not twice:
        return
    path = twice[0]
    parent, _, tool = path.rpartition("/")
    raise UserError(
        f"to_state(): the run paused inside two calls of {tool!r} made at once by {parent} "
        f"(path {path}); a state holds one paused call per sub-agent path, so this run cannot "
        "be resumed. Decide those calls during the run instead (approver=a function, or "
        "agentnb.approve_all), or give the sub-agent one tool per parallel call "
        f"(agent.as_tool(name='{tool}_2', ...)) so each pause has its own path."
    )


def _row(row: dict[str, Any]) -> dict[str, Any]:
    """A calls row as JSON: NaN as None, the prefix (not JSON) left out."""
    clean = {k: (None if isinstance(v, float) and v != v else v) for k, v in row.items()}
    clean["prefix"] = None
    return _jsonable(clean)


def _jsonable(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (v if _is_json(v) else str(v)) for k, v in row.items()}


def _is_json(value: Any) -> bool:
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return False
    return True


def unanswered(messages: list[Any]) -> list[Any]:
    """The calls of the last assistant message without a result after it (messages as
    `Message` or `MessageState`; calls as (name, arguments, id))."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "assistant":
            answered = {m.tool_call_id for m in messages[index + 1 :] if m.role == "tool"}
            return [c for c in _calls(message) if _id(c) not in answered]
    return []


def _calls(message: Any) -> list[Any]:
    return list(message.tool_calls)


def _id(call: Any) -> str:
    return call[2] if isinstance(call, list) else str(call.id)
