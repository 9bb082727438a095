"""The trace layer: spans, one row per model call, sizes and token counts."""

from .sizes import COMPONENTS, canonical_request, request_sizes
from .spans import CALL_COLUMNS, Span, Trace
from .tokens import set_tokenizer, tokenizer

__all__ = [
    "CALL_COLUMNS",
    "COMPONENTS",
    "Span",
    "Trace",
    "canonical_request",
    "request_sizes",
    "set_tokenizer",
    "tokenizer",
]
