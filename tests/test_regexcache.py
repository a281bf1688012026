"""The compiled-pattern cache of the PreToolUse hook (checks/regexcache.py): a pattern
taken from the file behaves as one compiled afresh, and a file slopjudge did not sign,
or one with a program changed, is never read. Each step is a fresh interpreter, as each
hook call is."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

PATTERNS = [
    (r"(?P<word>\w+)\s*=\s*(?P<value>[^#\n]*)", 0),
    (r"^\s*except(\s*\(?\s*(Base)?Exception\s*\)?)?\s*:", 0),
    (r"todo|fixme|xxx", 2),  # re.IGNORECASE
    (r"^(?:.*/)?(?:[^/]+/)*vendor/.*$", 16 | 8),  # re.DOTALL | re.MULTILINE
    (r"[\u2600-\u27bf\U0001f300-\U0001faff]+", 0),
    (rb"\x00[\x01-\x7f]{2,}", 0),
    (r"""(?x) \d+ # digits
         \. \d*""", 0),
]
SAMPLES = ["key = value # c", "    except Exception:", "a TODO here", "src/vendor/x.py\nb",
           "done \u2705 \U0001f680", "12.5 and 3.", "nothing"]

# Steps run in a fresh interpreter: load the file, compile PATTERNS (recording whether
# re's parser ran), save, and print what each pattern answers for SAMPLES.
STEP = r"""
import json, re, sys
from re import _parser
from slopjudge.checks.regexcache import RegexCache

parsed = []
real = _parser.parse
def parse(p, flags=0, state=None):
    parsed.append(p)
    return real(p, flags, state) if state is not None else real(p, flags)
_parser.parse = parse
cache = RegexCache(sys.argv[1], sys.argv[2])
cache.load()
patterns, samples = json.loads(sys.argv[3])
answers = []
for pattern, flags in patterns:
    if isinstance(pattern, list):
        pattern = bytes(pattern)
    rx = re.compile(pattern, flags)
    texts = [s.encode("latin-1", "replace") if isinstance(pattern, bytes) else s for s in samples]
    answers.append([rx.pattern if isinstance(pattern, str) else list(rx.pattern), rx.flags,
                    rx.groups, dict(rx.groupindex),
                    [[m.span(), [str(g) for g in m.groups()]] for t in texts
                     for m in rx.finditer(t)]])
_parser.parse = real
cache.save()
print(json.dumps({"parsed": len(parsed), "answers": answers}))
"""


def _step(tmp_path: Path, cache: Path) -> dict[str, object]:
    patterns = [[list(p) if isinstance(p, bytes) else p, f] for p, f in PATTERNS]
    env = {k: v for k, v in os.environ.items() if not k.startswith(("SLOPJUDGE_", "PYTHON"))}
    env["XDG_STATE_HOME"] = str(tmp_path / "state")
    out = subprocess.run([sys.executable, "-c", STEP, str(cache), str(tmp_path / "ws"),
                          json.dumps([patterns, SAMPLES])], env=env, capture_output=True,
                         text=True, check=True, timeout=120)
    result: dict[str, object] = json.loads(out.stdout)
    return result


def test_patterns_come_back_from_the_file_as_they_compile(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    cache = tmp_path / "ws" / ".slopjudge" / "cache" / "regex.bin"
    first = _step(tmp_path, cache)
    assert first["parsed"] and cache.is_file()
    second = _step(tmp_path, cache)
    assert second["parsed"] == 0  # every pattern came from the file
    assert second["answers"] == first["answers"]


def test_a_file_changed_outside_slopjudge_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    cache = tmp_path / "ws" / ".slopjudge" / "cache" / "regex.bin"
    first = _step(tmp_path, cache)
    raw = bytearray(cache.read_bytes())
    raw[-40] ^= 0x01  # one bit of a program (or of a pattern's text)
    cache.write_bytes(bytes(raw))
    again = _step(tmp_path, cache)
    assert again["parsed"] == first["parsed"]  # compiled afresh, the file ignored
    assert again["answers"] == first["answers"]


def test_without_a_key_to_sign_with_nothing_is_kept(tmp_path: Path) -> None:
    (tmp_path / "ws").mkdir()
    (tmp_path / "state").write_text("not a folder: no key can be made under it\n")
    cache = tmp_path / "ws" / ".slopjudge" / "cache" / "regex.bin"
    _step(tmp_path, cache)
    assert not cache.exists()
