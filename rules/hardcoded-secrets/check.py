#!/usr/bin/env python3
"""hardcoded-secrets: credentials written into added lines."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402
from secretpatterns import (  # noqa: E402
    ANY_FLAG,
    ASSIGN,
    JWT,
    LOCKFILE,
    NOT_A_SECRET_NAME,
    PLACEHOLDER,
    PROVIDER,
    SAFE_HOSTS,
    URL_CRED,
)

ADVICE = ("Remove the secret from the change, rotate it if it was real, "
          "and read it from the environment or a secret store instead.")


def entropy(s: str) -> float:
    if not s:
        return 0.0
    import math  # a module of its own to load: paid only for a value that may be a secret

    counts = {c: s.count(c) for c in set(s)}
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


def looks_random(val: str) -> bool:
    if len(val) < 12 or PLACEHOLDER.search(val):
        return False
    if not (ss.rx(r"[A-Za-z]").search(val) and ss.rx(r"\d").search(val)):
        return False
    if ss.rx(r"[a-z]+(_[a-z]+)+|[A-Z]+(_[A-Z0-9]+)+|[\w.]+\.[a-z]{2,4}|/[\w/.-]+").fullmatch(val):
        return False  # identifiers, file names, paths
    return entropy(val) >= 3.0


def provider_key(text: str) -> str | None:
    """The kind of provider credential on the line (examples and placeholders aside)."""
    for rx, what in PROVIDER:
        m = rx.search(text)
        if m and "EXAMPLE" not in m.group(0).upper() and not PLACEHOLDER.search(m.group(0)[4:]):
            return what
    return None


def scan(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    if not ANY_FLAG.search("\n".join(sf.added.values())) or LOCKFILE.search(sf.path):
        return
    for no, text in sorted(sf.added.items()):
        what = provider_key(text)
        # a test CA's or server's key guards nothing outside the suite
        test_key = what == "private key block" and (
            sf.is_test or ss.FIXTURE_PATH_RE.search(sf.path)
        )
        if what is not None and not test_key:
            out.append(ss.Finding(sf.path, no, f"{what} in source"))
            continue
        if not sf.is_test and JWT.search(text):
            out.append(ss.Finding(sf.path, no, "JSON Web Token in source"))
            continue
        m = URL_CRED.search(text)
        if (
            m
            and not sf.is_test
            and not SAFE_HOSTS.match(m.group(3))
            and not PLACEHOLDER.search(m.group(2))
        ):
            out.append(ss.Finding(sf.path, no, "password embedded in a URL"))
            continue
        if sf.is_test:
            continue  # fake credentials in tests are fixtures; provider keys were checked above
        for m in ASSIGN.finditer(text):
            name, val = m.group("name"), m.group("val")
            if NOT_A_SECRET_NAME.search(name):
                continue
            if sf.lang in ss.CODE_LANGS and not m.group("q"):
                continue  # in code an unquoted value is an expression, not a literal
            if looks_random(val):
                out.append(ss.Finding(sf.path, no, f"hard-coded secret assigned to {name}"))
                break


if __name__ == "__main__":
    # a real key is real anywhere, in the project's test data too
    ss.check_files(scan, ADVICE, lambda payload: ss.files(payload, include_test_data=True))
