"""``python -m slopjudge``: the same as the ``slopjudge`` command."""

import sys

from .cli import main

sys.exit(main())
