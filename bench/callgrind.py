"""Instructions counted by callgrind between two markers of a bench module's own run.

The module calls ``os.getppid()`` right before the work to count and ``os.getpgrp()`` right
after it: callgrind zeroes its counters at the first and dumps them at the second, so start-up
and shutdown are not counted. Instruction counts repeat run to run whatever else the machine
is doing, which req/s and CPU time on a shared machine do not."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile


def counted(module_argv: list[str]) -> int:
    """Instructions between the markers of ``python -m MODULE ARGS`` (``module_argv``), run
    under callgrind with ``PYTHONHASHSEED=0``."""
    with tempfile.TemporaryDirectory() as out:
        command = [
            "valgrind",
            "--tool=callgrind",
            f"--callgrind-out-file={out}/cg.out",
            "--zero-before=getppid",
            "--dump-before=getpgrp",
            sys.executable,
            "-m",
            *module_argv,
        ]
        env = {**os.environ, "PYTHONHASHSEED": "0"}
        done = subprocess.run(command, capture_output=True, text=True, env=env)
        if done.returncode:
            raise SystemExit(done.stderr[-3000:])
        dumps = sorted(name for name in os.listdir(out) if name != "cg.out")
        if not dumps:
            raise SystemExit("callgrind wrote no dump: the markers were not reached")
        with open(os.path.join(out, dumps[0])) as part:
            match = re.search(r"^summary: (\d+)", part.read(), re.MULTILINE)
        if match is None:
            raise SystemExit(f"no summary in {dumps}")
        return int(match.group(1))
