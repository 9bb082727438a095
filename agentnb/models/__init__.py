"""The model layer: provider-neutral types, the client protocol, scripted and real models."""

from .base import ModelClient
from .http.rules import Backoff
from .providers.openai.wire import ToolChoices
from .registry import model_from_spec, register_provider
from .scripted import FunctionModel, Say, ScriptedModel, say, tool_call, usage
from .settings import ModelSettings
from .types import Message, ModelRequest, ModelResponse, OutputSchema, ToolCall, ToolSpec, Usage

__all__ = [
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
