"""The verdict cache: same question, same answer; only real verdicts are kept."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_judge_check import PASS, calls, fake_runner, make_ctx, write_exe

from slopjudge.checks.judge import run_judge
from slopjudge.judging.cache import VerdictCache, cache_key

BASE = dict(instruction_version="1", model="size-md", allowed_tools=["Read"], disallowed_tools=[],
            runner_identity="sr-agent")


def test_key_depends_on_every_part() -> None:
    key = cache_key("prompt", **BASE)  # type: ignore[arg-type]
    assert len(key) == 64 and key == cache_key("prompt", **BASE)  # type: ignore[arg-type]
    variants = [
        cache_key("prompt!", **BASE),  # type: ignore[arg-type]
        cache_key("prompt", **{**BASE, "instruction_version": "2"}),  # type: ignore[arg-type]
        cache_key("prompt", **{**BASE, "model": "size-lg"}),  # type: ignore[arg-type]
        cache_key("prompt", **{**BASE, "allowed_tools": ["Read", "Grep"]}),  # type: ignore[arg-type]
        cache_key("prompt", **{**BASE, "allowed_tools": [], "disallowed_tools": ["Read"]}),  # type: ignore[arg-type]
        cache_key("prompt", **{**BASE, "runner_identity": "slopjudge-agent"}),  # type: ignore[arg-type]
        cache_key("prompt", **{**BASE, "allowed_tools": ["Read Grep"]}),  # type: ignore[arg-type]
    ]
    assert len({key, *variants}) == 1 + len(variants)


def test_get_put_roundtrip_atomic(tmp_path: Path) -> None:
    cache = VerdictCache(str(tmp_path / "c"))
    key = cache_key("p", **BASE)  # type: ignore[arg-type]
    assert cache.get(key) is None
    verdict = {
        "pass": False,
        "reasoning": "r",
        "findings": [{"path": "a", "line": 2, "message": "m"}],
    }
    cache.put(key, verdict)
    assert cache.get(key) == verdict
    files = [p for p in (tmp_path / "c").rglob("*") if p.is_file()]
    assert [p.name for p in files] == [f"{key}.json"]  # no temporary file left behind


@pytest.mark.parametrize(
    "bad", [{"pass": "true", "reasoning": "x"}, {"reasoning": "x"}, {"error": "boom"}]
)
def test_only_verdicts_are_put(tmp_path: Path, bad: dict[str, object]) -> None:
    cache = VerdictCache(str(tmp_path))
    with pytest.raises(ValueError):
        cache.put(cache_key("p", **BASE), bad)  # type: ignore[arg-type]
    assert not any(tmp_path.rglob("*.json"))


def test_a_corrupted_entry_is_a_miss(tmp_path: Path) -> None:
    cache = VerdictCache(str(tmp_path))
    key = cache_key("p", **BASE)  # type: ignore[arg-type]
    cache.put(key, {"pass": True, "reasoning": "x"})
    (tmp_path / key[:2] / f"{key}.json").write_text('{"pass": "true"')
    assert cache.get(key) is None
    with pytest.raises(ValueError):
        cache.get("../../etc/passwd")


def test_second_run_is_a_cache_hit(tmp_path: Path) -> None:
    ctx = make_ctx(
        tmp_path, cache_dir=str(tmp_path / "cache"), runner=fake_runner(tmp_path, f"echo '{PASS}'")
    )
    first = run_judge(ctx)
    second = run_judge(ctx)
    assert (first.outcome, first.cache_hit) == ("pass", False)
    assert (second.outcome, second.cache_hit, second.reason) == ("pass", True, "clean change")
    assert calls(tmp_path) == 1
    assert second.prompt_sha256 == first.prompt_sha256


def test_refusals_are_cached_errors_are_not(tmp_path: Path) -> None:
    refuse = fake_runner(tmp_path, """echo 'JUDGE-REASON-JSON: "nope"' >&2; exit 2""")
    ctx = make_ctx(tmp_path, cache_dir=str(tmp_path / "cache"), runner=refuse)
    assert run_judge(ctx).reason == "nope"
    again = run_judge(ctx)
    assert (again.reason, again.cache_hit) == ("nope", True) and calls(tmp_path) == 1

    other = tmp_path / "other"
    other.mkdir()
    crash = fake_runner(other, "echo 'sr-agent: harness-failure: authentication' >&2; exit 1")
    ctx2 = make_ctx(other, cache_dir=str(other / "cache"), runner=crash)
    assert run_judge(ctx2).outcome == "error"
    assert run_judge(ctx2).cache_hit is False
    assert calls(other) == 2
    assert not any((other / "cache").rglob("*.json"))


def test_no_cache_bypasses(tmp_path: Path) -> None:
    ctx = make_ctx(
        tmp_path, cache_dir=str(tmp_path / "cache"), runner=fake_runner(tmp_path, f"echo '{PASS}'")
    )
    run_judge(ctx)
    ctx.options.no_cache = True
    assert run_judge(ctx).cache_hit is False
    assert calls(tmp_path) == 2


def test_a_changed_prompt_misses(tmp_path: Path) -> None:
    ctx = make_ctx(
        tmp_path, cache_dir=str(tmp_path / "cache"), runner=fake_runner(tmp_path, f"echo '{PASS}'")
    )
    run_judge(ctx)
    # The prompt is rendered from the change's files: another diff is another prompt.
    ctx.payload["changeset"]["files"][0]["diff"] += "+one more line\n"
    assert run_judge(ctx).cache_hit is False
    assert calls(tmp_path) == 2


def test_min_confidence_applies_to_cached_verdicts(tmp_path: Path) -> None:
    body = """echo '{"pass": true, "reasoning": "ok", "confidence": 0.6}'"""
    ctx = make_ctx(tmp_path, cache_dir=str(tmp_path / "cache"), min_confidence=0.5,
                   runner=fake_runner(tmp_path, body))
    assert run_judge(ctx).outcome == "pass"
    ctx.check.min_confidence = 0.9
    hit = run_judge(ctx)
    assert (hit.outcome, hit.cache_hit) == ("refuse", True)
    assert hit.reason.startswith("confidence 0.6 below min_confidence 0.9")


def test_each_file_caches_per_file(tmp_path: Path) -> None:
    files = {"a.py": ("a\n", "a2\n"), "b.py": ("b\n", "b2\n")}
    ctx = make_ctx(tmp_path, each="file", files=files, cache_dir=str(tmp_path / "cache"),
                   runner=fake_runner(tmp_path, f"echo '{PASS}'"))
    assert run_judge(ctx).outcome == "pass" and calls(tmp_path) == 2
    # Change only b.py: a.py's verdict comes from the cache.
    b = ctx.payload["changeset"]["files"][1]
    b["diff"] += "+extra\n"
    result = run_judge(ctx)
    assert result.outcome == "pass" and calls(tmp_path) == 3
    assert result.cache_hit is False
    assert run_judge(ctx).cache_hit is True and calls(tmp_path) == 3


def test_prepare_fingerprint_is_part_of_the_key(tmp_path: Path) -> None:
    fp = tmp_path / "fp"
    fp.write_text("v1")
    prep = write_exe(tmp_path / "prep.sh", f"""#!/bin/bash
printf '{{"fingerprint": "%s"}}' "$(cat "{fp}")"
""")
    ctx = make_ctx(tmp_path, prepare=prep, cache_dir=str(tmp_path / "cache"),
                   runner=fake_runner(tmp_path, f"echo '{PASS}'"))
    run_judge(ctx)
    assert run_judge(ctx).cache_hit is True
    fp.write_text("v2")
    assert run_judge(ctx).cache_hit is False
    assert calls(tmp_path) == 2


def test_an_empty_prepare_fingerprint_is_not_the_same_as_none(tmp_path: Path) -> None:
    said = tmp_path / "said"
    said.write_text("{}")
    prep = write_exe(tmp_path / "prep.sh", f'#!/bin/bash\ncat "{said}"\n')
    ctx = make_ctx(tmp_path, prepare=prep, cache_dir=str(tmp_path / "cache"),
                   runner=fake_runner(tmp_path, f"echo '{PASS}'"))
    assert run_judge(ctx).cache_hit is False
    said.write_text('{"fingerprint": ""}')
    assert run_judge(ctx).cache_hit is False
    assert run_judge(ctx).cache_hit is True
    assert calls(tmp_path) == 2


def test_mocks_and_dry_runs_never_touch_the_cache(tmp_path: Path) -> None:
    mock = write_exe(tmp_path / "mock.sh", f"#!/bin/bash\necho '{PASS}'\n")
    ctx = make_ctx(tmp_path, cache_dir=str(tmp_path / "cache"), judge_mocks={"demo/quality": mock})
    assert run_judge(ctx).outcome == "pass"
    ctx.options.judge_mocks = None
    ctx.options.dry_run = True
    assert run_judge(ctx).outcome == "not_judged"
    assert not (tmp_path / "cache").exists() or not any((tmp_path / "cache").rglob("*.json"))

