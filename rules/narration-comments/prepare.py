#!/usr/bin/env python3
"""narration-comments prepare: ask the judge only when added comments look like narration.

Narration: a comment that restates the next line ("# increment i" over
`i += 1`), or that narrates the edit itself ("# Added error handling",
"# Updated to use the new API", "# Step 3: ...").
"""

from __future__ import annotations

import json
import os
import re
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402

STOP = {
    "the", "a", "an", "to", "of", "and", "or", "it", "this", "that", "we", "for", "in", "on",
    "with", "is", "be", "by", "as", "from", "into", "our", "new", "now", "then", "here", "all",
    "each", "its", "if",
}
VERB_KEYWORDS = {
    "return": {"return", "returns", "returning"},
    "import": {"import", "imports", "importing"},
    "for": {"loop", "iterate", "iterating", "looping", "go", "through", "over"},
    "while": {"loop", "looping", "while", "until"},
    "if": {"check", "checks", "checking", "if", "whether"},
    "raise": {"raise", "throw", "error"},
    "throw": {"raise", "throw", "error"},
    "def": {"define", "function"},
    "class": {"define", "class"},
    "print": {"print", "log", "output"},
    "try": {"try", "attempt"},
}
# The edit told in the past tense ("Added error handling", "Updated to use the new API",
# "Changed from X to Y"), not the code's action in the imperative ("Update the icon",
# "Remove trailing slashes"), which is how a comment says what the code below does. A past
# participle used as an adjective ("Fixed-size buffer", "Removed entries are kept") is not
# narration either.
EDIT_NARRATION = ss.Later(
    r"^\s*((added|updated|changed|modified|fixed|removed|refactored|replaced|rewrote|rewritten|"
    r"switched|converted|moved|renamed)(?![-\w])(?!\s+\w+\s+(is|are|was|were|get|gets)\b)"
    r"|now\s+(we|uses?|returns?|handles?)\b|new:|old:|previously\b|was\s+\w+\s+before\b|"
    r"step\s+\d+\s*[:.-]|as\s+requested\b|per\s+(the\s+)?(request|review|instructions?)\b)",
    re.I,
)
# A comment right above a declaration documents it, and naming what it documents is its
# convention (a Go doc comment starts with the name; a section header names the type).
DECLARATION = ss.Later(
    r"^\s*(export\s+)?(default\s+)?(async\s+)?(def|class|func|type|interface|struct|function|"
    r"enum|module|namespace)\b")
WHY_WORDS = ss.Later(
    r"\b(because|since|so\s+that|otherwise|why|workaround|note|careful|must|never|"
    r"avoid|required|keep|assumes?|invariant|spec|rfc|see\s|issue|bug|hack)\b",
    re.I,
)
# Words a comment uses to restate a line of each shape.
INCREMENT_WORDS = {"increment", "increase", "add", "one", "counter", "count"}
INIT_WORDS = {"initialize", "initialise", "init", "create", "empty", "set", "reset", "declare"}
ASSIGN_WORDS = {
    "set", "assign", "store", "save", "get", "create", "define", "declare", "variable",
}
CALL_WORDS = {"call", "calls", "calling", "invoke", "get", "fetch", "run", "function", "method"}


def restates(comment: str, code: str) -> bool:
    cw = [w for w in ss.words(comment) if w not in STOP]
    if not cw or len(cw) > 7 or WHY_WORDS.search(comment):
        return False
    code_words = set(ss.words(code))
    first = (re.match(r"\s*(\w+)", code) or [None, ""])[1]
    code_words |= VERB_KEYWORDS.get(first, set())
    if re.search(r"\+=\s*1\b|\+\+", code):
        code_words |= INCREMENT_WORDS
    if re.search(r"=\s*(\[\]|\{\}|dict\(\)|list\(\)|set\(\)|0|None|null|\"\")\s*;?\s*$", code):
        code_words |= INIT_WORDS
    if re.search(r"^\s*(const|let|var)?\s*[\w.]+\s*:?=\s*", code):
        code_words |= ASSIGN_WORDS
    if re.search(r"\w\s*\(", code):
        code_words |= CALL_WORDS
    stems = {w.rstrip("s") for w in code_words}
    hits = sum(1 for w in cw if w in code_words or w.rstrip("s") in stems)
    return hits / len(cw) >= 0.6


def main() -> None:
    payload = ss.load_payload()
    found: list[dict] = []
    for sf in ss.code_files(payload):
        lines = sf.lexed()
        for i, ll in enumerate(lines):
            if not ll.added or not ll.comment:
                continue
            if EDIT_NARRATION.search(ll.comment):
                found.append({
                    "path": sf.path, "line": ll.no, "comment": ll.comment,
                    "kind": "narrates the edit",
                })
                continue
            code = ll.code.strip()
            if not code:
                nxt = next((n for n in lines[i + 1 : i + 3] if n.code.strip()), None)
                after = lines[i + 1] if i + 1 < len(lines) else None
                paragraph = after is not None and after.comment and not after.code.strip()
                if nxt is None or paragraph:
                    continue  # a comment paragraph explains; a one-liner over one line restates
                if DECLARATION.match(nxt.code):
                    continue  # documents the declaration below it
                code = nxt.code.strip()
            if restates(ll.comment, code):
                found.append({
                    "path": sf.path, "line": ll.no, "comment": ll.comment, "code": code[:120],
                    "kind": "restates the code",
                })
    if len(found) < 2 and not any(f["kind"] == "narrates the edit" for f in found):
        print(json.dumps({"skip": True}))
        return
    print(json.dumps({"additionalContext": {"suspicious_comments": found[:40]}}))


if __name__ == "__main__":
    ss.main_guard(main)
