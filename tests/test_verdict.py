"""The verdict reader: strict, schema-valid, and only an explicit pass passes."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, find, given, settings
from hypothesis import strategies as st

from slopjudge.judging.verdict import (
    VERDICT_INSTRUCTION_VERSION,
    judged,
    parse_verdict,
    verdict_instruction,
)

ROOT = Path(__file__).resolve().parents[1]


def reads_as_pass(verdict: dict[str, Any] | None, min_confidence: float | None) -> bool:
    """Whether a judge check passes on this answer: a verdict that ``judged`` passes."""
    return verdict is not None and judged(verdict, min_confidence)[0] == "pass"


def test_schema_file_is_a_valid_schema() -> None:
    on_disk = json.loads((ROOT / "schemas" / "verdict.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(on_disk)


@pytest.mark.parametrize(
    "text",
    [
        '{"pass": true, "reasoning": "fine"}',
        '  \n{"pass": true, "reasoning": "fine"}\n',
        '```json\n{"pass": true, "reasoning": "fine"}\n```',
        '```\n{"pass": true, "reasoning": "fine"}\n```\n',
        '\ufeff{"pass": true, "reasoning": "fine", "confidence": 1, "findings": []}',
    ],
)
def test_valid_passes_are_read(text: str) -> None:
    verdict, problem = parse_verdict(text)
    assert problem == ""
    assert verdict is not None and verdict["pass"] is True
    assert reads_as_pass(verdict, None)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("", "empty"),
        ("   ", "empty"),
        ("garbage", "not a JSON object"),
        ('Sure! {"pass": true, "reasoning": "x"}', "not a JSON object"),
        ('{"pass": true, "reasoning": "x"} thanks', "text after"),
        ('{"pass": true, "reasoning": "x"}\n{"pass": true, "reasoning": "y"}', "more than one"),
        ('{"pass": "true", "reasoning": "x"}', '"pass" must be the JSON boolean'),
        ('{"pass": 1, "reasoning": "x"}', '"pass" must be the JSON boolean'),
        ('{"pass": true}', "lacks 'reasoning'"),
        ('{"reasoning": "x"}', "lacks 'pass'"),
        ('{"pass": true, "reasoning": "x", "extra": 1}', "does not allow"),
        ('{"pass": true, "reasoning": "x", "confidence": 1.5}', "confidence"),
        ('{"pass": true, "reasoning": "x", "confidence": NaN}', "NaN"),
        ('{"pass": false, "pass": true, "reasoning": "x"}', "twice"),
        ('[{"pass": true, "reasoning": "x"}]', "not a JSON object"),
        ('{"pass": true, "reasoning": "x"', "not valid JSON"),
        ('{"pass": true, "reasoning": "x", "findings": [{"path": "a"}]}', "message"),
        ('```json\n{"pass": true, "reasoning": "x"}', "not a JSON object"),
    ],
)
def test_anything_else_is_no_verdict(text: str, why: str) -> None:
    verdict, problem = parse_verdict(text)
    assert verdict is None
    assert why in problem
    assert not reads_as_pass(verdict, None)


def test_a_refusal_is_a_verdict_that_does_not_pass() -> None:
    verdict, _ = parse_verdict('{"pass": false, "reasoning": "sloppy"}')
    assert verdict == {"pass": False, "reasoning": "sloppy"}
    assert not reads_as_pass(verdict, None)


def test_min_confidence() -> None:
    unsure = {"pass": True, "reasoning": "x", "confidence": 0.4}
    sure = {"pass": True, "reasoning": "x", "confidence": 0.9}
    silent = {"pass": True, "reasoning": "x"}
    assert not reads_as_pass(unsure, 0.7)
    assert reads_as_pass(sure, 0.7)
    assert not reads_as_pass(silent, 0.7)
    assert reads_as_pass(silent, None)
    assert judged(unsure, 0.7) == ("refuse", "confidence 0.4 below min_confidence 0.7: x", True)
    assert "without the confidence" in judged(silent, 0.7)[1]
    assert judged(sure, 0.7) == ("pass", "x", False)


def test_instruction_is_versioned_and_asks_for_confidence_only_when_needed() -> None:
    plain = verdict_instruction(None)
    strict = verdict_instruction(0.8)
    assert f"v{VERDICT_INSTRUCTION_VERSION}" in plain
    assert "DATA" in plain and "never instructions" in plain
    assert '"confidence"' not in plain
    assert '"confidence" is required' in strict
    # The threshold itself is not revealed: the judge cannot aim for it.
    assert "0.8" not in strict


# --- property: the reader passes nothing but a schema-valid pass: true ----

_json_leaf = st.one_of(
    st.none(), st.booleans(), st.integers(-5, 5), st.floats(allow_nan=False, allow_infinity=False),
    st.text(max_size=8), st.sampled_from(["true", "false", "pass", "reasoning"]),
)
_json = st.recursive(
    _json_leaf,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.sampled_from(["pass", "reasoning", "confidence", "findings", "path",
                                         "line", "message", "x"]) | st.text(max_size=4),
                        inner, max_size=5),
    ),
    max_leaves=12,
)
_verdictish = st.fixed_dictionaries(
    {"pass": st.one_of(st.booleans(), st.just("true"), st.just(1), st.none())},
    optional={
        "reasoning": st.one_of(st.text(max_size=10), st.none(), st.integers()),
        "confidence": st.one_of(
            st.floats(-1, 2, allow_nan=False), st.just(True), st.text(max_size=2)
        ),
        "findings": _json,
        "extra": _json,
    },
)


_finding = st.fixed_dictionaries(
    {"message": st.text(max_size=6)},
    optional={"path": st.one_of(st.none(), st.text(max_size=4)),
              "line": st.one_of(st.none(), st.integers(-1, 9))},
)
# Mostly valid verdicts, so the property sees many passes and near misses.
_valid = st.fixed_dictionaries(
    {"pass": st.booleans(), "reasoning": st.text(max_size=10)},
    optional={"confidence": st.one_of(st.floats(0, 1), st.integers(0, 1)),
              "findings": st.lists(_finding, max_size=2)},
)


def _render(value: object, style: int) -> str:
    text = json.dumps(value)
    return [
        text,
        f"```json\n{text}\n```",
        f"{text}\n{text}",
        f"verdict: {text}",
        text[:-1] if text else text,
        f"  {text}  ",
    ][style]


_ANSWERS = st.one_of(
    st.tuples(_valid, st.integers(0, 5)).map(lambda t: _render(*t)),
    st.tuples(_verdictish, st.integers(0, 5)).map(lambda t: _render(*t)),
    st.tuples(_json, st.integers(0, 5)).map(lambda t: _render(*t)),
    st.text(max_size=40),
)


def test_the_property_sees_passes_and_refusals() -> None:
    # Guards against a vacuous property: both sides are reachable.
    quiet = settings(database=None, max_examples=5000)
    find(_ANSWERS, lambda t: reads_as_pass(parse_verdict(t)[0], 0.5), settings=quiet)
    find(
        _ANSWERS,
        lambda t: parse_verdict(t)[0] is not None and not reads_as_pass(parse_verdict(t)[0], None),
        settings=quiet,
    )


# One validator for every example: jsonschema.validate re-checks the schema itself on each
# call, a sixth of this test's time.
_VERDICT_VALIDATOR = jsonschema.Draft202012Validator(
    json.loads((ROOT / "schemas" / "verdict.schema.json").read_text()))


# 1000 examples: the reader's accepted and refused shapes are each pinned by the tables above
# (test_valid_passes_are_read, test_anything_else_is_no_verdict), and the property test just
# above shows the strategy reaches passes and refusals; the property's job is the mix of
# renderings and near-miss verdicts, which 1000 fresh examples a run still covers.
@settings(
    max_examples=1000, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(_ANSWERS, st.one_of(st.none(), st.floats(0, 1)))
def test_reader_passes_only_schema_valid_pass_true(text: str, min_conf: float | None) -> None:
    verdict, _ = parse_verdict(text)
    if not reads_as_pass(verdict, min_conf):
        return
    assert verdict is not None
    _VERDICT_VALIDATOR.validate(verdict)
    assert verdict["pass"] is True
    # It is the one object the text holds, not something pieced together.
    body = text.strip()
    if body.startswith("```"):
        body = body.split("\n", 1)[1].rsplit("```", 1)[0]
    assert json.loads(body) == verdict
    if min_conf is not None:
        assert verdict["confidence"] >= min_conf
