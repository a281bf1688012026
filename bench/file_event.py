#!/usr/bin/env python3
"""Benchmark: what a per-file judge pays for its file's sloprail event.

For files of N lines (one ``sr:`` marker in 50), times building one unit's event
(``payload.file_event``: both contents scanned for markers) against the same
unit's template render, the cost a per-file judge paid already, measured in
the same run. Prints milliseconds per file, best of ``--repeat``.

    python bench/file_event.py [--lines 1000 10000 100000] [--repeat 5]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from slopjudge.loading.templates import render, synthetic_payload  # noqa: E402
from slopjudge.payload import file_event  # noqa: E402

TEMPLATE = """\
Review {{ event.path }} ({{ event.kind }}).
<file path="{{ event.path }}">
{{ event.newContent }}
</file>
{% for m in event.newMarkers %}{{ m.kind }} {{ m.fqn }} {{ m.line }}
{% endfor %}
"""


def _text(lines: int, salt: str) -> str:
    return "".join(
        f"# sr:invariant mod.f{n}\n" if n % 50 == 0 else f"value_{n} = compute({n}, '{salt}')\n"
        for n in range(lines)
    )


def _best(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, nargs="+", default=[1000, 10000, 100000])
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        template = Path(tmp, "judge.md.j2")
        template.write_text(TEMPLATE)
        print(f"{'lines':>8} {'file_event ms':>14} {'render ms (baseline)':>21} {'share':>6}")
        for lines in args.lines:
            f = {"path": "src/mod.py", "status": "M", "oldPath": None,
                 "oldContent": _text(lines, "old"), "newContent": _text(lines, "new")}
            base = synthetic_payload(tmp)
            event = file_event(base["event"], f)
            payload = dict(base, event=event)
            build = _best(lambda f=f, e=base["event"]: file_event(e, f), args.repeat)
            draw = _best(
                lambda p=payload: render(str(template), p, rule_dir=tmp, template_dirs=[]),
                args.repeat,
            )
            print(f"{lines:>8} {build:>14.2f} {draw:>21.2f} {build / (build + draw):>6.0%}")


if __name__ == "__main__":
    main()
