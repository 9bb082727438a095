"""Values valid for a JSON schema, generated deterministically from a seed.

`TestModel` calls each tool with arguments made here from the tool's schema, and answers a
structured output with a value made from the output schema. The generator covers what
pydantic writes for the types tools and outputs use: objects (their required properties: an
optional one keeps its default, so a call never invents, say, a document handle), arrays with their bounds, strings with their length bounds and common formats, numbers
with their bounds, enums, constants, unions, ``$ref`` into ``$defs`` (recursion bounded).
"""

from __future__ import annotations

import random
from typing import Any

_FORMATS = {
    "date": "2024-01-01",
    "date-time": "2024-01-01T00:00:00Z",
    "time": "12:00:00",
    "duration": "P1D",
    "email": "user@example.com",
    "uri": "https://example.com/",
    "url": "https://example.com/",
    "hostname": "example.com",
    "ipv4": "127.0.0.1",
    "ipv6": "::1",
}

_DEEPEST = 4
"""Past this depth of nesting a recursive schema gets its smallest value (empty arrays, the
null branch of a union)."""


def schema_value(schema: dict[str, Any], seed: int | str = 0) -> Any:
    """A value valid for ``schema``, the same for the same schema and seed."""
    return _Values(schema.get("$defs", {}), random.Random(str(seed))).of(schema, 0)


class _Values:
    def __init__(self, defs: dict[str, Any], rng: random.Random) -> None:
        self.defs = defs
        self.rng = rng

    def of(self, schema: dict[str, Any] | bool, depth: int) -> Any:
        if not isinstance(schema, dict) or not schema:
            return "a"
        if "$ref" in schema:
            return self.of(self.defs.get(schema["$ref"].rsplit("/", 1)[-1], {}), depth + 1)
        if "const" in schema:
            return schema["const"]
        if "enum" in schema:
            return self.rng.choice(schema["enum"])
        if "default" in schema and depth > _DEEPEST:
            return schema["default"]
        for key in ("anyOf", "oneOf"):
            if key in schema:
                return self.of(self._branch(schema[key], depth), depth)
        if "allOf" in schema:
            merged: dict[str, Any] = {}
            for part in schema["allOf"]:
                merged.update(part)
            return self.of({**merged, **{k: v for k, v in schema.items() if k != "allOf"}}, depth)
        kind = schema.get("type")
        if isinstance(kind, list):
            kind = next((k for k in kind if k != "null"), "null")
        if kind is None:
            kind = "object" if "properties" in schema else "string"
        return getattr(self, f"_{kind}", self._string)(schema, depth)

    def _branch(self, options: list[Any], depth: int) -> Any:
        real = [o for o in options if not (isinstance(o, dict) and o.get("type") == "null")]
        if not real or (depth > _DEEPEST and len(real) < len(options)):
            return {"type": "null"}
        return self.rng.choice(real)

    def _object(self, schema: dict[str, Any], depth: int) -> dict[str, Any]:
        properties: dict[str, Any] = schema.get("properties", {})
        required = set(schema.get("required", ()))
        value = {
            name: self.of(sub, depth + 1) for name, sub in properties.items() if name in required
        }
        extra = schema.get("additionalProperties")
        if not properties and isinstance(extra, dict) and depth <= _DEEPEST:
            value["key"] = self.of(extra, depth + 1)
        return value

    def _array(self, schema: dict[str, Any], depth: int) -> list[Any]:
        prefix = schema.get("prefixItems")
        if prefix is not None:
            return [self.of(item, depth + 1) for item in prefix]
        low = schema.get("minItems", 0)
        high = schema.get("maxItems", low + 2)
        count = low if depth > _DEEPEST else self.rng.randint(low, max(low, min(high, low + 2)))
        items = schema.get("items", {})
        if schema.get("uniqueItems"):
            seen: list[Any] = []
            for _ in range(count * 10):
                if len(seen) == count:
                    break
                candidate = self.of(items, depth + 1)
                if candidate not in seen:
                    seen.append(candidate)
            return seen
        return [self.of(items, depth + 1) for _ in range(count)]

    def _string(self, schema: dict[str, Any], depth: int) -> str:
        known = _FORMATS.get(schema.get("format", ""))
        if known is not None:
            return known
        if schema.get("format") == "uuid":
            return f"12345678-1234-4678-9234-{self.rng.getrandbits(48):012x}"
        low = schema.get("minLength", 1)
        high = schema.get("maxLength", max(low, 8))
        size = self.rng.randint(low, max(low, min(high, low + 7)))
        return "".join(self.rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(size))

    def _integer(self, schema: dict[str, Any], depth: int) -> int:
        low, high = self._bounds(schema, 1)
        number = self.rng.randint(int(low), int(high))
        step = schema.get("multipleOf")
        if isinstance(step, int) and step > 0:
            number = (int(low) + step - 1) // step * step if low > 0 else 0
        return number

    def _number(self, schema: dict[str, Any], depth: int) -> float:
        low, high = self._bounds(schema, 0.001)
        return round(self.rng.uniform(low, high), 3) if high > low else float(low)

    def _bounds(self, schema: dict[str, Any], epsilon: float) -> tuple[float, float]:
        """The inclusive bounds of a number (exclusive ones moved in by ``epsilon``)."""
        low = schema.get("minimum")
        if low is None and "exclusiveMinimum" in schema:
            low = schema["exclusiveMinimum"] + epsilon
        high = schema.get("maximum")
        if high is None and "exclusiveMaximum" in schema:
            high = schema["exclusiveMaximum"] - epsilon
        low = 0 if low is None else low
        high = low + 100 if high is None else high
        if epsilon == 1:  # integers inside fractional bounds
            low, high = -(-low // 1), high // 1
        return low, max(low, high)

    def _boolean(self, schema: dict[str, Any], depth: int) -> bool:
        return self.rng.random() < 0.5

    def _null(self, schema: dict[str, Any], depth: int) -> None:
        return None
