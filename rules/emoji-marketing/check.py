#!/usr/bin/env python3
"""emoji-marketing: emoji and sales talk in added code, comments and messages."""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "_lib"))
import slopscan as ss  # noqa: E402

ADVICE = ("Say plainly what the code does: drop the emoji and the adjectives from comments, "
          "docstrings and messages.")
EMOJI = ss.Later(
    "[\U0001F000-\U0001F02F\U0001F0A0-\U0001F0FF\U0001F170-\U0001F251\U0001F300-\U0001FAFF"
    "\u2705\u274C\u274E\u2728\u26A1\u2B50\u2B55\u23F0-\u23F3\u231B\u2753-\u2757\u2764\u267B\u2615"
    "\u26A0\u26D4\uFE0F]"
)
MARKETING_PHRASES = (
    r"blazing(ly)?[- ]fast", r"lightning[- ]fast", r"super[- ]fast", r"world[- ]class",
    r"enterprise[- ]grade", r"production[- ]ready", r"battle[- ]tested",
    r"industrial[- ]strength", r"cutting[- ]edge", r"state[- ]of[- ]the[- ]art",
    r"next[- ]gen(eration)?", r"best[- ]in[- ]class", r"game[- ]chang\w*", r"supercharg\w*",
    r"seamless(ly)?", r"robust\s+and\s+(scalable|efficient|reliable)",
    r"elegant(ly)?\s+(solution|handles?)", r"powerful\s+and\s+(flexible|intuitive|elegant)",
    r"comprehensive\s+(solution|suite)", r"effortless(ly)?", r"revolutionary", r"unparalleled",
    r"rock[- ]solid", r"bulletproof", r"magic(al)?ally",
)
# Each phrase's first word, which a match holds within one comment or string, so within
# the line's text: a file with none of them (and no emoji: ASCII only) is not read.
FIRST_WORDS = tuple(p[: len(p) - len(p.lstrip("abcdefghijklmnopqrstuvwxyz"))]
                    for p in MARKETING_PHRASES)
MARKETING = ss.Later(rf"\b({'|'.join(MARKETING_PHRASES)})\b", ss.I, words=FIRST_WORDS)
# Where a string's words reach a person as the program's own voice.
MESSAGE_CALL = ss.Later(
    r"\b(print|echo|puts|log\w*|logger|logging|console|fmt|warn\w*|info|error|debug|"
    r"raise|throw|Error|Exception|panic|errors\.New|Errorf)\b"
)


# A value quoted in prose (`'🚀'`, "`✅`") is data the comment mentions, not its voice.
QUOTED = ss.Later(r"`[^`]+`|'[^'\s]{1,12}'|\"[^\"\s]{1,12}\"")
DOC_TAG = ss.Later(r"^\s*\*?\s*@(\w+)")
FENCE = ss.Later(r"^\s*\*?\s*(```|~~~)")


def example_lines(lines: list[ss.LexLine]) -> set[int]:
    """Lines of code examples inside documentation: an `@example` block of a doc comment (up
    to its next tag or its end), a fenced block, a doctest line. Their emoji are data."""
    inside: set[int] = set()
    example = fence = False
    for ll in lines:
        if not ll.doc:
            example = fence = False
            continue
        tag = DOC_TAG.match(ll.text)
        if tag:
            example = tag[1] == "example"
        if FENCE.match(ll.text):
            fence = not fence
            inside.add(ll.no)
        elif example or fence or ll.text.lstrip().startswith((">>>", "... ")):
            inside.add(ll.no)
    return inside


def scan(sf: ss.SourceFile, out: list[ss.Finding]) -> None:
    if not ss.may_hold(sf, FIRST_WORDS):
        return
    examples = example_lines(sf.lexed())
    for ll in sf.added_lexed():
        if ll.no in examples:
            continue
        doc_text = ll.text if (ll.doc and (ll.in_string or not ll.code.strip("\"' "))) else ""
        doc_text = doc_text.replace('"""', " ").replace("'''", " ")
        prose = QUOTED.sub("", " ".join(x for x in (ll.comment, doc_text) if x))
        snippet = ll.text.strip()[:50]
        if EMOJI.search(prose):
            message = f"emoji in a comment or docstring: {snippet!r}"
            out.append(ss.Finding(sf.path, ll.no, message))
            continue
        in_message = bool(ll.strings and MESSAGE_CALL.search(ll.code))
        if not sf.is_test and in_message and any(EMOJI.search(s) for s in ll.strings):
            out.append(ss.Finding(sf.path, ll.no, f"emoji in a message: {snippet!r}"))
            continue
        m = MARKETING.search(prose)
        if m is None and in_message:
            m = MARKETING.search(" ".join(ll.strings))
        if m:
            out.append(ss.Finding(sf.path, ll.no, f"marketing tone: {m.group(0)!r}"))


if __name__ == "__main__":
    ss.check_files(scan, ADVICE, ss.code_files)
