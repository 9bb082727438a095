"""The model layer: provider-neutral types, the client protocol, scripted and real models."""

from .base import ModelClient
from .http.rules import Backoff
from .providers.openai.wire import ToolChoices
from .registry import model_from_spec, register_provider
from .scripted import FunctionModel, Say, ScriptedModel, say, tool_call, usage
from .settings import ModelSettings
from .testing import TestModel
from .types import Message, ModelRequest, ModelResponse, OutputSchema, ToolCall, ToolSpec, Usage

ALLOW_MODEL_REQUESTS = True
"""Set to False (in a test suite's conftest) to make every request to a real endpoint an
error that names this switch; ``AGENTNB_ALLOW_MODEL_REQUESTS=0`` does the same from the
environment. Offline models (scripted, function, `TestModel`) are not affected."""

__all__ = [
    "ALLOW_MODEL_REQUESTS",
    "Backoff",
    "FunctionModel",
    "Message",
    "ModelClient",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "OutputSchema",
    "Say",
    "ScriptedModel",
    "TestModel",
    "ToolCall",
    "ToolChoices",
    "ToolSpec",
    "Usage",
    "model_from_spec",
    "register_provider",
    "say",
    "tool_call",
    "usage",
]
