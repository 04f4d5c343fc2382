"""Claude Code's ``settings.json``: the hooks a HookApp adds there, and writing them safely."""
