"""The check kinds, one module each: ``script`` and ``judge`` (with ``prepare``)."""
