"""Old module paths that still import: every module moved since the last release, for one release.

Code written against an old path (``from agentnb.runtime.loop.result import RunResult``) and a
pickle made before a move (which names the module its classes were defined in) keep working: a
finder on `sys.meta_path` answers an old dotted name with the module that now lives at the new
one, the same module object, so ``isinstance`` and monkeypatching see one module. A folder that
no longer exists (``agentnb.runtime.loop``) is an empty stand-in package, so that its old
children import through it. The table is the one list of what moved (inspect_ai keeps its
``relocated_module_attribute`` the same way); `agentnb/__init__.py` installs the finder, so it is
in place before any ``agentnb.*`` import resolves.

Importing a module sets it as an attribute of its parent package. An old path named like the
function its parent now exports (``agentnb.measure.sweep``) must not replace that function, so
such a parent keeps its attribute (`_KeepsFunctions`).
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Sequence

MOVED: dict[str, str] = {
    "agentnb.measure.attempt": "agentnb.measure.experiments.trial",
    "agentnb.measure.experiment": "agentnb.measure.experiments.runs",
    "agentnb.measure.live": "agentnb.measure.experiments.live",
    "agentnb.measure.pareto": "agentnb.measure.frontier",
    "agentnb.measure.store": "agentnb.measure.experiments.store",
    "agentnb.measure.stored": "agentnb.measure.experiments.stored",
    "agentnb.measure.sweep": "agentnb.measure.sweeps",
    "agentnb.measure.writer": "agentnb.measure.experiments.writer",
    "agentnb.models._anthropic_stream": "agentnb.models.providers.anthropic.stream",
    "agentnb.models._anthropic_wire": "agentnb.models.providers.anthropic.wire",
    "agentnb.models._deadline": "agentnb.models.http.attempt_limit",
    "agentnb.models._http": "agentnb.models.http.rules",
    "agentnb.models._http_model": "agentnb.models.http.model",
    "agentnb.models._llama_launch": "agentnb.models.local_server.launch",
    "agentnb.models._openai_stream": "agentnb.models.providers.openai.stream",
    "agentnb.models._openai_wire": "agentnb.models.providers.openai.wire",
    "agentnb.models._recording_file": "agentnb.models.recorded.file",
    "agentnb.models._responses_state": "agentnb.models.providers.openai_responses.state",
    "agentnb.models._responses_stream": "agentnb.models.providers.openai_responses.stream",
    "agentnb.models._responses_wire": "agentnb.models.providers.openai_responses.wire",
    "agentnb.models._send": "agentnb.models.http.send",
    "agentnb.models._sse": "agentnb.models.http.sse",
    "agentnb.models.anthropic": "agentnb.models.providers.anthropic.adapter",
    "agentnb.models.checks": "agentnb.checks",
    "agentnb.models.local": "agentnb.models.local_server.model",
    "agentnb.models.openai": "agentnb.models.providers.openai.adapter",
    "agentnb.models.openai_responses": "agentnb.models.providers.openai_responses.adapter",
    "agentnb.models.recording": "agentnb.models.recorded.recorder",
    "agentnb.models.responses_server": "agentnb.models.providers.openai_responses.server",
    "agentnb.models.tokenizing": "agentnb.models.local_server.tokenizer",
    "agentnb.patterns.chain": "agentnb.patterns.chains",
    "agentnb.patterns.parallel": "agentnb.patterns.fan_out",
    "agentnb.runtime._loop": "agentnb.runtime.engine.blocking",
    "agentnb.runtime._off_loop": "agentnb.runtime.data.off_loop",
    "agentnb.runtime._tasks": "agentnb.runtime.data.tasks",
    "agentnb.runtime._thread_loop": "agentnb.runtime.engine.thread_loop",
    "agentnb.runtime.agent": "agentnb.runtime.agents.agent",
    "agentnb.runtime.agent_tool": "agentnb.runtime.tools.agent_tool",
    "agentnb.runtime.approval": "agentnb.runtime.guards.approval",
    "agentnb.runtime.callbacks": "agentnb.runtime.data.callbacks",
    "agentnb.runtime.context": "agentnb.runtime.data.context",
    "agentnb.runtime.deadline": "agentnb.runtime.data.deadline",
    "agentnb.runtime.enabled": "agentnb.runtime.tools.enabled",
    "agentnb.runtime.events": "agentnb.runtime.data.events",
    "agentnb.runtime.graph": "agentnb.runtime.agents.graph",
    "agentnb.runtime.guardrails": "agentnb.runtime.guards.guardrails",
    "agentnb.runtime.handoff_filters": "agentnb.runtime.handoffs.filters",
    "agentnb.runtime.hooks": "agentnb.runtime.data.hooks",
    "agentnb.runtime.instructions": "agentnb.runtime.agents.instructions",
    "agentnb.runtime.options": "agentnb.runtime.data.options",
    "agentnb.runtime.outcome": "agentnb.runtime.data.outcome",
    "agentnb.runtime.output": "agentnb.runtime.agents.output",
    "agentnb.runtime.output_validators": "agentnb.runtime.agents.output_validators",
    "agentnb.runtime.pause": "agentnb.runtime.engine.resume",
    "agentnb.runtime.prompt": "agentnb.runtime.agents.prompt",
    "agentnb.runtime.result": "agentnb.runtime.data.result",
    "agentnb.runtime.runner": "agentnb.runtime.engine.runner",
    "agentnb.runtime.settings": "agentnb.runtime.agents.settings",
    "agentnb.runtime.state": "agentnb.runtime.data.state",
    "agentnb.runtime.stream_output": "agentnb.runtime.data.stream_output",
    "agentnb.runtime.streaming": "agentnb.runtime.engine.streaming",
    "agentnb.runtime.team": "agentnb.runtime.engine.teams",
    "agentnb.runtime.tool_context": "agentnb.runtime.tools.context",
    "agentnb.runtime.tool_guardrails": "agentnb.runtime.guards.tool_guardrails",
    "agentnb.runtime.tool_schema": "agentnb.runtime.tools.schema",
    "agentnb.runtime.transfer": "agentnb.runtime.data.transfer",
    "agentnb.runtime.agents.callbacks": "agentnb.runtime.data.callbacks",
    "agentnb.runtime.engine.agent_tool": "agentnb.runtime.tools.agent_tool",
    "agentnb.runtime.handoffs.transfer": "agentnb.runtime.data.transfer",
    "agentnb.runtime.loop._off_loop": "agentnb.runtime.data.off_loop",
    "agentnb.runtime.loop._sync": "agentnb.runtime.engine.blocking",
    "agentnb.runtime.loop._tasks": "agentnb.runtime.data.tasks",
    "agentnb.runtime.loop._thread_loop": "agentnb.runtime.engine.thread_loop",
    "agentnb.runtime.loop.context": "agentnb.runtime.data.context",
    "agentnb.runtime.loop.deadline": "agentnb.runtime.data.deadline",
    "agentnb.runtime.loop.options": "agentnb.runtime.data.options",
    "agentnb.runtime.loop.outcome": "agentnb.runtime.data.outcome",
    "agentnb.runtime.loop.pause": "agentnb.runtime.engine.resume",
    "agentnb.runtime.loop.result": "agentnb.runtime.data.result",
    "agentnb.runtime.loop.runner": "agentnb.runtime.engine.runner",
    "agentnb.runtime.loop.state": "agentnb.runtime.data.state",
    "agentnb.runtime.tools.team": "agentnb.runtime.engine.teams",
    "agentnb.runtime.watch.events": "agentnb.runtime.data.events",
    "agentnb.runtime.watch.hooks": "agentnb.runtime.data.hooks",
    "agentnb.runtime.watch.stream_output": "agentnb.runtime.data.stream_output",
    "agentnb.runtime.watch.streaming": "agentnb.runtime.engine.streaming",
}
"""Old dotted module name -> where that module lives now."""

GONE_PACKAGES = frozenset({"agentnb.runtime.loop", "agentnb.runtime.watch"})
"""Folders that no longer exist: their old children are in `MOVED`."""


class _KeepsFunctions(types.ModuleType):
    """A package whose exported functions are not replaced by an old submodule of that name."""

    def __setattr__(self, name: str, value: object) -> None:
        current = self.__dict__.get(name)
        if isinstance(value, types.ModuleType) and callable(current):
            return
        super().__setattr__(name, value)


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(
        self,
        fullname: str,
        path: Sequence[str] | None = None,
        target: types.ModuleType | None = None,
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname in MOVED:
            return importlib.machinery.ModuleSpec(fullname, self)
        if fullname in GONE_PACKAGES:
            return importlib.machinery.ModuleSpec(fullname, self, is_package=True)
        return None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        if spec.name in GONE_PACKAGES:
            stand_in = types.ModuleType(spec.name, f"Moved: see {__name__}.MOVED.")
            stand_in.__path__ = []
            return stand_in
        parent = sys.modules.get(spec.name.rpartition(".")[0])
        if parent is not None and type(parent) is types.ModuleType:
            parent.__class__ = _KeepsFunctions
        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = module.__spec__
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """The module was loaded at its new path already; importlib gave it the old path's spec
        on the way, and it gets its own back."""
        own = module.__spec__.loader_state if module.__spec__ else None
        if isinstance(own, importlib.machinery.ModuleSpec):
            module.__spec__ = own


def install() -> None:
    """Put the finder on `sys.meta_path` (once)."""
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        sys.meta_path.append(_OldPaths())


install()
