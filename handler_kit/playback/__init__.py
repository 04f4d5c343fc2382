"""Policy test cases played through a real agent (``handler-kit test --runtime``): each case's
tool call, prompt or reply is made by a scripted model inside Claude Code or Codex, with the
app's hooks installed by ``handler-kit install``, and the verdict is what the agent enforced.

- :mod:`handler_kit.playback.plan`: a case to a run (:func:`plan`: a :class:`Play`, or
  :class:`NotPlayed` and why), pure;
- :mod:`handler_kit.playback.judge`: a run's observations compared with the case;
- :mod:`handler_kit.playback.stub`: the stub MCP server that offers a case's tool;
- :mod:`handler_kit.playback.run`: :class:`Player`, which runs the agent per case.
"""

from handler_kit.playback.plan import NotPlayed, Play, plan
from handler_kit.playback.run import AgentNotFound, Player, find_agent

__all__ = ["AgentNotFound", "NotPlayed", "Play", "Player", "find_agent", "plan"]
