#!/usr/bin/env python3
"""hardcoded-secrets: credentials written into added lines."""

from __future__ import annotations

import math
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402

ADVICE = ("Remove the secret from the change, rotate it if it was real, "
          "and read it from the environment or a secret store instead.")

PROVIDER = [
    (re.compile(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b"), "AWS access key id"),
    (re.compile(r"aws_secret_access_key\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}\b", re.I),
     "AWS secret access key"),
    (re.compile(r"-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY( BLOCK)?-----"),
     "private key block"),
    (re.compile(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{50,}"), "GitHub token"),
    (re.compile(r"\bglpat-[A-Za-z0-9_\-]{20,}"), "GitLab token"),
    (re.compile(r"\bxox[abposr]-[A-Za-z0-9-]{10,}"), "Slack token"),
    (re.compile(r"\b[sr]k_live_[A-Za-z0-9]{20,}"), "Stripe live key"),
    (re.compile(r"\bAIza[0-9A-Za-z_\-]{35}\b"), "Google API key"),
    (re.compile(r"\bsk-(proj-|ant-(api\d\d-)?)?[A-Za-z0-9_\-]{32,}"), "API secret key"),
    (re.compile(r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b"), "SendGrid key"),
    (re.compile(r"\bnpm_[A-Za-z0-9]{36}\b"), "npm token"),
    (re.compile(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{20,}"),
     "Slack webhook URL"),
]
JWT = re.compile(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}")
URL_CRED = re.compile(r"\b[a-z][a-z0-9+.-]*://([^/\s:@\"']+):([^@\s/\"']{6,})@([^/\s:\"']+)", re.I)
SECRET_NAME = (
    r"(?:secret|token|passw(?:or)?d|passwd|pwd|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|"
    r"private[_-]?key|client[_-]?secret|credentials?|signing[_-]?key|encryption[_-]?key)"
)
NOT_A_SECRET_NAME = re.compile(
    r"(_|-)?(url|uri|endpoint|path|file|name|type|header|field|len|length|prefix|env|var|id|"
    r"key_id|count|expiry|expires|ttl|timeout|format|pattern|regex|re|label|hint|policy|mode|"
    r"method|kind|param|column|placeholder)$",
    re.I)
ASSIGN = re.compile(
    r"(?P<name>[A-Za-z_][\w.\-]*" + SECRET_NAME + r"[\w\-]*|" + SECRET_NAME + r")"
    r"[\"']?\s*"
    r"(?::\s*[A-Za-z_][\w\[\], .|]*?\s*(?==))?"  # a type annotation before `=`
    r"(?::=|=>|==|=|:)\s*"
    r"(?P<q>[\"'`]?)(?P<val>[^\s\"'`,;)}]+)(?P=q)",
    re.I,
)
PLACEHOLDER = re.compile(
    r"x{3,}|\*{3,}|\.{3}|change[_-]?me|example|dummy|fake|mock|sample|placeholder|your[_-]|replace|redacted|"
    r"^<.*>$|\$\{|\{\{|%\(|^\$|process\.env|os\.environ|getenv|^none$|^null$|^nil$|^true$|^false$|todo|"
    r"insert|here$|test|secret$|password$|^(.)\1+$|"
    # an interpolation, not a value: f"{password}", "{}".format, "%s", "<%= pw %>"
    r"^\{[^{}]*\}$|^%[sdv]$|^<%.*%>$",
    re.I,
)
LOCKFILE = re.compile(
    r"(^|/)(package-lock\.json|yarn\.lock|pnpm-lock\.yaml|go\.sum|poetry\.lock|Cargo\.lock|"
    r"uv\.lock|Pipfile\.lock|composer\.lock|[^/]*\.lock)$"
)
SAFE_HOSTS = re.compile(
    r"^(localhost|127\.0\.0\.1|0\.0\.0\.0|example\.(com|org)|db|postgres|redis|mysql|"
    r".*\.local|host)$",
    re.I,
)


def entropy(s: str) -> float:
    if not s:
        return 0.0
    counts = {c: s.count(c) for c in set(s)}
    return -sum(n / len(s) * math.log2(n / len(s)) for n in counts.values())


def looks_random(val: str) -> bool:
    if len(val) < 12 or PLACEHOLDER.search(val):
        return False
    if not (re.search(r"[A-Za-z]", val) and re.search(r"\d", val)):
        return False
    if re.fullmatch(r"[a-z]+(_[a-z]+)+|[A-Z]+(_[A-Z0-9]+)+|[\w.]+\.[a-z]{2,4}|/[\w/.-]+", val):
        return False  # identifiers, file names, paths
    return entropy(val) >= 3.0


def provider_key(text: str) -> str | None:
    """The kind of provider credential on the line (examples and placeholders aside)."""
    for rx, what in PROVIDER:
        m = rx.search(text)
        if m and "EXAMPLE" not in m.group(0).upper() and not PLACEHOLDER.search(m.group(0)[4:]):
            return what
    return None


# Whatever a line is flagged for starts with one of these: lines none of them matches
# are not read one by one.
ANY_FLAG = ss.any_of(*(rx for rx, _ in PROVIDER), JWT, URL_CRED, re.compile(SECRET_NAME, re.I))


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
