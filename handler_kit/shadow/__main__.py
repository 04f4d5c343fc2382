"""``python -m handler_kit.shadow MODULE:ATTR``: the shadow candidate's process
(:mod:`handler_kit.shadow.process`), started by the server."""

import sys

from handler_kit.shadow.process import main

sys.exit(main())
