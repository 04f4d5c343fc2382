"""The test apps, one per purpose: those that run in ``handler-kit`` subprocesses (with the
``MODULE:ATTR`` targets below, which load them from the repository root, the directory the
subprocesses run in), and those the folders' fixtures serve in process (``client``,
``runtime_semantics``, ``webhook``).

Nothing is imported here: the command-hook tests check what starting one of these apps loads.
"""

OPS_APP = "tests.support.apps.ops:app"
COMMAND_APP = "tests.support.apps.command:app"
CRASHY_APP = "tests.support.apps.command:crashy"
DIALECTS_APP = "tests.support.apps.dialects:app"
INTERRUPTS_APP = "tests.support.apps.interrupts:app"
