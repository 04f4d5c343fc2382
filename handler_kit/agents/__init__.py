"""Real agents against a scripted model: the proof that installed hooks work in Claude Code and
Codex themselves, not only in tests of our own reading of their documentation.

- :mod:`handler_kit.agents.versions`: the pinned agent versions, in one place;
- :mod:`handler_kit.agents.model`: :class:`ScriptedModel`, a model server on 127.0.0.1 that
  answers each agent turn from a script (:class:`Shell`, :class:`ToolCall`, :class:`Say`) and
  records every request;
- :mod:`handler_kit.agents.runner`: :func:`run_app`, one headless run of an agent with an
  app's hooks installed by ``handler-kit install``, returning an :class:`AgentRun`
  (:func:`install_hooks` and :func:`run_agent` are its two halves, to reuse one project).

``python -m handler_kit.agents install --cache DIR`` installs the pinned agents with npm into
``DIR/<versions>`` (reused when present) and prints that folder.
"""

from handler_kit.agents.model import ModelRequest, Say, ScriptedModel, Shell, ToolCall, Turn
from handler_kit.agents.runner import AgentRun, InstallFailed, install_hooks, run_agent, run_app
from handler_kit.agents.versions import AGENTS, CLAUDE_CODE, CODEX

__all__ = [
    "AGENTS",
    "CLAUDE_CODE",
    "CODEX",
    "AgentRun",
    "InstallFailed",
    "ModelRequest",
    "Say",
    "ScriptedModel",
    "Shell",
    "ToolCall",
    "Turn",
    "install_hooks",
    "run_agent",
    "run_app",
]
