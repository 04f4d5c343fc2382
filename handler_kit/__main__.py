"""``python -m handler_kit``: the ``handler-kit`` command."""

import sys

from handler_kit.cli import main

sys.exit(main())
