"""The patterns of the hardcoded-secrets rule (its check.py reads them from here).

A helper beside slopscan, not the check's own module. Each is compiled where first
used: most changes hold no line any of them is asked about, and :data:`ANY_FLAG`, which
every changed file's added lines are searched with, is compiled only for added lines that
hold one of :data:`FLAG_WORDS`.
"""

from __future__ import annotations

import slopscan as ss

PROVIDER = [
    (ss.Later(r"\b(AKIA|ASIA)[0-9A-Z]{16}\b", words=("AKIA", "ASIA")), "AWS access key id"),
    (ss.Later(r"aws_secret_access_key\s*[:=]\s*[\"']?[A-Za-z0-9/+=]{40}\b", ss.I,
              words=("aws_secret_access_key",)),
     "AWS secret access key"),
    (ss.Later(r"-----BEGIN ((RSA|EC|DSA|OPENSSH|ENCRYPTED|PGP) )?PRIVATE KEY( BLOCK)?-----",
              words=("PRIVATE KEY",)),
     "private key block"),
    (ss.Later(r"\bgh[pousr]_[A-Za-z0-9]{36,}\b|\bgithub_pat_[A-Za-z0-9_]{50,}",
              words=("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_")), "GitHub token"),
    (ss.Later(r"\bglpat-[A-Za-z0-9_\-]{20,}", words=("glpat-",)), "GitLab token"),
    (ss.Later(r"\bxox[abposr]-[A-Za-z0-9-]{10,}", words=("xox",)), "Slack token"),
    (ss.Later(r"\b[sr]k_live_[A-Za-z0-9]{20,}", words=("k_live_",)), "Stripe live key"),
    (ss.Later(r"\bAIza[0-9A-Za-z_\-]{35}\b", words=("AIza",)), "Google API key"),
    (ss.Later(r"\bsk-(proj-|ant-(api\d\d-)?)?[A-Za-z0-9_\-]{32,}", words=("sk-",)),
     "API secret key"),
    (ss.Later(r"\bSG\.[A-Za-z0-9_\-]{22}\.[A-Za-z0-9_\-]{43}\b", words=("SG.",)), "SendGrid key"),
    (ss.Later(r"\bnpm_[A-Za-z0-9]{36}\b", words=("npm_",)), "npm token"),
    (ss.Later(r"https://hooks\.slack\.com/services/T[A-Z0-9]+/B[A-Z0-9]+/[A-Za-z0-9]{20,}",
              words=("hooks.slack.com",)),
     "Slack webhook URL"),
]
JWT = ss.Later(r"\beyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}",
               words=("eyJ",))
URL_CRED = ss.Later(r"\b[a-z][a-z0-9+.-]*://([^/\s:@\"']+):([^@\s/\"']{6,})@([^/\s:\"']+)", ss.I,
                    words=("://",))
SECRET_NAME = (
    r"(?:secret|token|passw(?:or)?d|passwd|pwd|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|"
    r"private[_-]?key|client[_-]?secret|credentials?|signing[_-]?key|encryption[_-]?key)"
)
# One of these is in every match of SECRET_NAME (in any case).
SECRET_WORDS = (
    "secret", "token", "passw", "pwd", "credential",
    *(f"{a}{sep}key" for a in ("api", "access", "auth", "private", "signing", "encryption")
      for sep in ("", "_", "-")),
)
NOT_A_SECRET_NAME = ss.Later(
    r"(_|-)?(url|uri|endpoint|path|file|name|type|header|field|len|length|prefix|env|var|id|"
    r"key_id|count|expiry|expires|ttl|timeout|format|pattern|regex|re|label|hint|policy|mode|"
    r"method|kind|param|column|placeholder)$",
    ss.I)
ASSIGN = ss.Later(
    r"(?P<name>[A-Za-z_][\w.\-]*" + SECRET_NAME + r"[\w\-]*|" + SECRET_NAME + r")"
    r"[\"']?\s*"
    r"(?::\s*[A-Za-z_][\w\[\], .|]*?\s*(?==))?"  # a type annotation before `=`
    r"(?::=|=>|==|=|:)\s*"
    r"(?P<q>[\"'`]?)(?P<val>[^\s\"'`,;)}]+)(?P=q)",
    ss.I,
    words=SECRET_WORDS,
)
PLACEHOLDER = ss.Later(
    r"x{3,}|\*{3,}|\.{3}|change[_-]?me|example|dummy|fake|mock|sample|placeholder|your[_-]|replace|redacted|"
    r"^<.*>$|\$\{|\{\{|%\(|^\$|process\.env|os\.environ|getenv|^none$|^null$|^nil$|^true$|^false$|todo|"
    r"insert|here$|test|secret$|password$|^(.)\1+$|"
    # an interpolation, not a value: f"{password}", "{}".format, "%s", "<%= pw %>"
    r"^\{[^{}]*\}$|^%[sdv]$|^<%.*%>$",
    ss.I,
)
SAFE_HOSTS = ss.Later(
    r"^(localhost|127\.0\.0\.1|0\.0\.0\.0|example\.(com|org)|db|postgres|redis|mysql|"
    r".*\.local|host)$",
    ss.I,
)
LOCKFILE = ss.Later(
    r"(^|/)(package-lock\.json|yarn\.lock|pnpm-lock\.yaml|go\.sum|poetry\.lock|Cargo\.lock|"
    r"uv\.lock|Pipfile\.lock|composer\.lock|[^/]*\.lock)$"
)


# Whatever a line is flagged for starts with one of these: lines none of them matches
# are not read one by one (nor is the pattern compiled when they hold none of its words).
_FLAGGED = [*(rx for rx, _ in PROVIDER), JWT, URL_CRED,
            ss.Later(SECRET_NAME, ss.I, words=SECRET_WORDS)]
ANY_FLAG = ss.any_of(*_FLAGGED, words=tuple(w.lower() for rx in _FLAGGED for w in rx.words),
                     fold=True)
