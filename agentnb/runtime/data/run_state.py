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
from typing import Any

from ...errors import UserError
from ...models.types import Message

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
