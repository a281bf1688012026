"""Suite-wide settings.

Every payload slopjudge builds while the suite runs, in this process and in every
subprocess it starts (hooks, `slopjudge run`, `slopjudge test`), is validated against
``schemas/payload.schema.json``: a payload of the wrong shape raises where it is built.
"""

from __future__ import annotations

import os

from slopjudge.payload import CHECK_ENV

os.environ[CHECK_ENV] = "1"
