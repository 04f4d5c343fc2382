"""Loaded at the start of every child process of a `make mutation` run (reliability/mutation.py
puts this folder on PYTHONPATH).

While mutmut records which tests call which function (``MUTANT_UNDER_TEST=stats``), a child a
test starts would record its calls too, into a process nobody reads, looking for mutmut's
configuration from the child's own working folder and slowing every call of the mutated
modules past the command hook's deadlines. The child runs the unmutated functions instead; while
a mutant is tested the child inherits its name and runs it.
"""

import os

if os.environ.get("MUTANT_UNDER_TEST") == "stats":
    os.environ["MUTANT_UNDER_TEST"] = ""
