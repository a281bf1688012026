#!/usr/bin/env python3
"""blanket-suppressions: added lint/type suppressions that name no specific problem."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402

TYPE_CHECKING = False
if TYPE_CHECKING:
    import re

ADVICE = ("Fix the reported problem; if it must stay, suppress only the specific code "
          "(e.g. `# noqa: E501`, `# type: ignore[attr-defined]`, "
          "`// eslint-disable-next-line no-console`, "
          "`//nolint:errcheck // why`, `// @ts-expect-error why`).")

# A suppression starts its comment, or follows another one's `#`; one quoted in prose does not.
LEAD = r"(^|(?<![`'\"\w])#\s*)"
HASH = [
    (ss.Later(LEAD + r"type:\s*ignore(?!\s*\[)", words=("type:",)),
     "bare `# type: ignore` silences every type error on the line"),
    (ss.Later(LEAD + r"pyright:\s*ignore(?!\s*\[)", words=("pyright:",)),
     "bare `# pyright: ignore` silences every error on the line"),
    # `# noqa E721` (no colon) still names the code the author meant to silence
    (ss.Later(LEAD + r"noqa(?!\s*:?\s*[A-Z]+\d)", ss.I, words=("noqa",)),
     "bare `# noqa` silences every lint on the line"),
    (ss.Later(LEAD + r"ruff\s*:\s*noqa(?!\s*:\s*[A-Z]+\d)", words=("ruff",)),
     "file-wide `# ruff: noqa` silences every lint"),
    (ss.Later(LEAD + r"flake8\s*:\s*noqa\b", words=("flake8",)),
     "file-wide `# flake8: noqa` silences every lint"),
    (ss.Later(LEAD + r"mypy\s*:\s*ignore-errors\b", words=("mypy",)),
     "file-wide `# mypy: ignore-errors`"),
    (ss.Later(LEAD + r"pylint\s*:\s*(disable\s*=\s*all\b|skip-file\b)", words=("pylint",)),
     "pylint disabled for everything"),
    (ss.Later(LEAD + r"nosec(?!\s+B\d)", words=("nosec",)),
     "bare `# nosec` silences every security finding"),
    (ss.Later(LEAD + r"rubocop:disable\s+all\b", words=("rubocop:disable",)),
     "rubocop disabled for everything"),
]
SLASH = [
    # with a reason of a few words (`@ts-ignore: because X is untyped`) it is explained
    (ss.Later(r"^\s*@ts-ignore\b(?!\s*[:\-\u2013\u2014]?\s*\w+\W+\w+\W+\w+)",
              words=("@ts-ignore",)),
     "`@ts-ignore` hides the type error (use `@ts-expect-error` with a reason)"),
    # typescript-eslint's ban-ts-comment: `@ts-expect-error` needs a description of at
    # least 3 characters (`// @ts-expect-error: upstream types lack X`).
    (ss.Later(r"^\s*@ts-expect-error\b\s*[:\-\u2013\u2014]?\s*\S{0,2}\s*(\*/)?\s*$",
              words=("@ts-expect-error",)),
     "`@ts-expect-error` without a description hides the type error unexplained"),
    (ss.Later(r"^\s*@ts-nocheck\b", words=("@ts-nocheck",)),
     "`@ts-nocheck` turns type checking off for the file"),
    (ss.Later(r"^\s*(jshint\s+ignore:start|tslint:disable)\s*$",
              words=("jshint", "tslint:disable")),
     "linter disabled with no rule list"),
]

# Directives that name the checks they silence, parsed into those names: a rule is matched by
# its whole name (`no-empty` is not `no-empty-function`), whatever the spacing around `:`.
NOLINT = ss.Later(r"^\s*nolint\b\s*(?::\s*(?P<names>[\w-]+(?:\s*,\s*[\w-]+)*))?(?P<rest>.*)$",
                  words=("nolint",))
ESLINT = ss.Later(r"^\s*eslint-disable(?P<kind>-next-line|-line)?(?![\w-])(?P<names>.*?)"
                  r"(?:\s--(?P<reason>.*?))?\s*(\*/)?\s*$", words=("eslint-disable",))
# The checks that catch a dropped error: silencing one by name with no word on why drops the
# error it points at for good (RUBRIC S6 "a scoped suppression over a finding that is real").
# (errorlint and wrapcheck ask how an error is compared or wrapped, not whether it is dropped.)
GO_ERROR_CHECKS = {"errcheck", "nilerr"}
ES_ERROR_CHECKS = {"no-empty", "no-floating-promises", "no-misused-promises", "catch-or-return",
                   "no-unsafe-finally", "handle-callback-err"}


def _names(text: str) -> list[str]:
    return [n for n in ss.rx(r"[\s,]+").split(text.strip()) if n]


def _slash_directive(text: str) -> str | None:
    m = NOLINT.match(text)
    if m:
        names = _names(m["names"] or "")
        if not names or "all" in names:
            return "bare `//nolint` silences every linter"
        explained = ss.rx(r"//\s*\S|\w+\W+\w+").search(m["rest"])
        if GO_ERROR_CHECKS & set(names) and not explained:
            return "`//nolint:errcheck` without a reason drops the error it points at"
        return None
    m = ESLINT.match(text)
    if m:
        names = [n.rsplit("/", 1)[-1] for n in _names(m["names"])]
        if not names:
            return "`eslint-disable` with no rule list turns ESLint off"
        if ES_ERROR_CHECKS & set(names) and not (m["reason"] or "").strip():
            return "eslint error-handling rule disabled without a reason"
    return None


RAISES = ss.Later(r"\braises\s*\(|assertRaises|toThrow|\.throws\s*\(|rejects\b")


def _match(table: list[tuple[re.Pattern[str], str]], text: str) -> str | None:
    for rx, msg in table:
        if rx.search(text):
            return msg
    return _slash_directive(text) if table is SLASH else None


def _closeness(a: str, b: str) -> float:
    import difflib  # its import compiles a regex: paid only when a suppression is carried

    return difflib.SequenceMatcher(None, a, b).ratio()


def scan(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    if sf.lang is None:
        return
    table = HASH if sf.lang in ("python", "hash") else SLASH
    # A suppression the old version already had, on a line the change only edits, moves or
    # reshapes (an import sorter regrouping suppressed import lines), was not added
    # by this change: each removed suppression carries one added one of the same kind over,
    # the closest in code first.
    removed = [ss.NewLine(0, t, False) for t in sf.removed]
    carried = [(_match(table, ll.comment), ll.code.strip()) for ll in ss.lex(removed, sf.lang)
               if ll.comment and _match(table, ll.comment)]
    lexed = sf.lexed()
    found: list[tuple[ss.LexLine, str]] = []
    for i, ll in sf.added_indexed():
        text = ll.comment
        if not text:
            continue
        if sf.is_test and RAISES.search(" ".join(p.code for p in lexed[max(0, i - 4) : i + 1])):
            continue  # a test passing a wrong type on purpose, to see it rejected
        msg = _match(table, text)
        if msg is None or (sf.is_test and msg.startswith("`@ts-expect-error`")):
            continue  # in a test, `@ts-expect-error` asserts that the line must not type-check
        found.append((ll, msg))
    ranked = sorted(found, key=lambda f: -max(
        (_closeness(c[1], f[0].code.strip())
         for c in carried if c[0] == f[1]), default=0.0))
    for ll, msg in ranked:
        same = next((c for c in carried if c[0] == msg), None)
        if same is not None:
            carried.remove(same)
            continue
        out.append(ss.Finding(sf.path, ll.no, msg))

if __name__ == "__main__":
    ss.check_files(scan, ADVICE)
