"""``python -m slopjudge``: the same as the ``slopjudge`` command."""

import sys

from slopjudge.cli import main

sys.exit(main())
