"""The test apps that run in ``handler-kit`` subprocesses, and the ``MODULE:ATTR`` targets that
load them from the repository root (the directory the subprocesses run in).

Nothing is imported here: the command-hook tests check what starting one of these apps loads.
"""

OPS_APP = "tests.support.apps.ops:app"
COMMAND_APP = "tests.support.apps.command:app"
CRASHY_APP = "tests.support.apps.command:crashy"
DIALECTS_APP = "tests.support.apps.dialects:app"
