"""One answer every time: bench/stress.py (the README's main job repeated, half of the
runs beside two busy CPU loops, and a 3-file change's dry run repeated) at a size CI
affords. Every run of a job must give the same outcome and print no traceback. How
long a run takes is the bench's figure (``max wall``), not asserted here."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_repeated_runs_give_one_outcome_and_no_traceback() -> None:
    sj = shutil.which("slopjudge", path=os.path.dirname(sys.executable))
    assert sj is not None, "slopjudge is not installed beside this interpreter"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "stress.py"), "--runs", "20", "--files-runs", "20",
         "--slopjudge", sj], capture_output=True, text=True, timeout=1800)
    lines = [ln for ln in proc.stdout.splitlines() if " runs (" in ln]
    assert len(lines) == 2, proc.stdout + proc.stderr
    for line in lines:
        found = re.search(r"distinct outcomes (\d+), max wall [\d.]+ s .*tracebacks (\d+)", line)
        assert found is not None, line
        assert (found.group(1), found.group(2)) == ("1", "0"), proc.stdout
