"""Issue 29 item 8: the vendored gitleaks rule set. Every rule translates from Go RE2 to Python, compiles, and its
secret, built at run time from the rule's own pattern, is hidden in six record placements; the set is the vendored
TOML, with its licence and upstream commit; keywords, entropy, secret groups and allowlists act as in gitleaks.
"""
from __future__ import annotations

import json
import re
import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ladr_lab.runfiles import Masker
from ladr_lab.runfiles.masking import may_hold_credential
from ladr_lab.runfiles.rules import gitleaks
from ladr_lab.runfiles.rules.gitleaks import load, shannon_entropy, translate
from tests.runfiles.rule_samples import sample

RULES = load()
RUN = "/srv/runs/r-29"


def placements(fragment: str) -> dict[str, str]:
    """The fragment as a note, a said message, in a JSON record, on a command line, in a log line, in a code block."""
    return {
        "note": f"checking the deploy settings: {fragment} and then moving on",
        "said": f"said (round 1): I found {fragment}",
        "json": json.dumps({"tool": "read_file", "output": fragment, "ok": True}),
        "command": f"$ ./deploy.sh --verbose {fragment} --retry 3",
        "log": f"2026-10-21 18:00:00 WARN tool output ({len(fragment)} chars): {fragment}",
        "code block": f"The file holds:\n```\n{fragment}\n```\nend of file",
    }


def _leaked(secret: str, out: str) -> bool:
    """Whether `out` still shows the secret, whole, JSON-escaped or as its longest run of letters and digits."""
    runs = re.findall(r"[A-Za-z0-9]{8,}", secret)
    core = max(runs, key=len) if runs else secret.strip()
    return any(n and n in out for n in (secret, json.dumps(secret)[1:-1], core))


def test_the_vendored_set_is_upstreams_with_its_licence_and_commit() -> None:
    data = json.loads(gitleaks.DATA.read_text())
    src = data["source"]
    assert re.fullmatch(r"[0-9a-f]{40}", src["commit"]) and src["license"] == "MIT"
    assert "Permission is hereby granted" in (gitleaks.DATA.parent / "LICENSE-gitleaks").read_text()
    if sys.version_info >= (3, 11):  # the JSON is the TOML, converted (the TOML is upstream's file as it is)
        import tomllib
        assert data["config"] == tomllib.loads((gitleaks.DATA.parent / "gitleaks.toml").read_text())
    ids = [r["id"] for r in data["config"]["rules"]]
    assert len(ids) >= 200 and sorted(r.id for r in RULES.rules) == sorted(set(ids) - set(RULES.skipped))
    assert RULES.skipped == ("pkcs12-file",)  # a rule on file names only: run files have no such names


def test_the_rule_sets_commit_is_in_the_maskers_name() -> None:
    assert RULES.source["commit"][:12] in Masker.hiding_outside(RUN).name


@pytest.mark.parametrize(("re2", "python"), [
    (r"a(?i)b", r"a(?i:b)"),
    (r"a(?i)b|c", r"a(?i:b)|(?i:c)"),  # RE2: the flag lasts to the end of its group, across "|"
    (r"(x(?i)y|z)w", r"(x(?i:y)|(?i:z))w"),
    (r"(?i)abc", r"(?i)abc"),  # at the start: Python's global flag
    (r"\b(pat[[:alnum:]]{14})\b", r"\b(pat[a-zA-Z0-9]{14})\b"),
    (r"x(?:\n|\z)", r"x(?:\n|\Z)"),
    (r"(?<name>a)", r"(?P<name>a)"),
    (r"[a[b]", r"[a\[b]"),
    (r"[a--b&&c||d~~e]", r"[a\--b\&&c\||d\~~e]"),
    (r"[]a]", r"[\]a]"),
    (r"(?-i:AB)c", r"(?-i:AB)c"),
])
def test_translate_re2_to_python(re2: str, python: str) -> None:
    assert translate(re2) == python
    re.compile(python, re.ASCII)


def test_translated_flags_mean_what_re2_means() -> None:
    rx = re.compile(translate(r"\b(p8e-(?i)[a-z0-9]{4})x|Q"), re.ASCII)
    assert rx.search("p8e-AbCdx") and not rx.search("P8E-abcdx") and rx.search("Q") and not rx.search("q")


def test_every_vendored_rule_compiles_without_a_warning() -> None:
    import warnings

    data = json.loads(gitleaks.DATA.read_text())["config"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for rule in data["rules"]:
            if rule.get("regex"):
                re.compile(translate(rule["regex"]), re.ASCII)
            for allow in rule.get("allowlists", ()):
                for rx in allow.get("regexes", ()):
                    re.compile(translate(rx), re.ASCII)


SAMPLES = {rule.id: sample(RULES, rule) for rule in RULES.rules}


def test_every_rule_has_a_sample_holding_one_of_its_keywords() -> None:
    assert len(SAMPLES) == len(RULES.rules)
    for rule in RULES.rules:
        text, secret = SAMPLES[rule.id]
        assert secret and secret in text
        assert not rule.keywords or any(k in text.lower() for k in rule.keywords), rule.id
        assert may_hold_credential(text), rule.id


def test_every_rule_of_the_set_is_masked_in_every_placement() -> None:
    masker = Masker.hiding_outside(RUN)
    planted, leaked = 0, []
    for rule_id, (text, secret) in SAMPLES.items():
        for where, record in placements(text).items():
            planted += 1
            out = masker(record)
            if _leaked(secret, out):
                leaked.append((rule_id, where, record[:120], out[:160]))
    assert planted == 6 * len(RULES.rules) >= 1300
    assert leaked == [], f"{len(leaked)} of {planted} leaked: {leaked[:5]}"


def test_a_second_sample_of_every_rule_is_masked_too() -> None:
    masker = Masker.credentials()
    leaked = []
    for rule in RULES.rules:
        text, secret = sample(RULES, rule, seed=1)
        if _leaked(secret, masker(f"said (round 2): {text}")):
            leaked.append(rule.id)
    assert leaked == []


def _generic() -> gitleaks.Rule:
    return next(r for r in RULES.rules if r.id == "generic-api-key")


@pytest.mark.parametrize(("text", "found"), [
    ("api_token = Zk3pQ9vW2xY7mN4b", True),
    ("api_token = aaaaaaaaaaaaaaa1", False),  # entropy 3.5 or less
    ("api_token = abcdefghijklmnopqr", False),  # letters only: the rule's allowlist
    ("api_token = Zk3pQ9vW2example7", False),  # a stopword
    ("primary_key = Zk3pQ9vW2xY7mN4b", False),  # the rule's allowlist of names (on the match)
    ("api_token = Zk3pQ9vW2false4b", False),  # the global allowlist ("false")
])
def test_entropy_stopwords_and_allowlists_act_as_in_gitleaks(text: str, found: bool) -> None:
    assert bool(RULES.spans(text, [(_generic(), None)])) is found


def test_only_the_secret_group_is_hidden() -> None:
    sonar = next(r for r in RULES.rules if r.id == "sonar-api-token")
    assert sonar.secret_group == 2
    value = "squ_" + "Zk3pQ9vW2x" * 4
    text = f"SONAR_TOKEN={value}"
    (span,) = RULES.spans(text, [(sonar, None)])
    assert text[slice(*span)] == value


@given(st.text(alphabet="abcdef0123456789-_ .:=", max_size=40))
def test_entropy_is_shannons(s: str) -> None:
    import math
    from collections import Counter

    expected = -sum(c / len(s) * math.log2(c / len(s)) for c in Counter(s).values()) if s else 0.0
    assert shannon_entropy(s) == pytest.approx(expected)
    assert 0 <= shannon_entropy(s) <= math.log2(max(1, len(set(s)))) + 1e-9


def test_an_anchored_rule_finds_what_a_scan_of_every_position_finds() -> None:
    anchored = [rule for rule in RULES.rules if rule.anchors is not None]
    assert len(anchored) >= 200
    for rule in anchored:
        text, _ = SAMPLES[rule.id]
        record = f"said: {text} and {text.upper() if rule.regex.flags & re.IGNORECASE else text}"
        low = record.lower()
        at = [i for a in rule.anchors for i in range(len(low)) if low.startswith(a, i)]
        everywhere = set(RULES.spans(record, [(rule, None)]))
        assert everywhere and everywhere <= set(RULES.spans(record, [(rule, at)])), rule.id


@pytest.mark.parametrize(("pattern", "starts"), [
    (r"\bghp_[0-9a-z]{36}", ("ghp_",)),
    (r"(?i)(?:key|passw(?:or)?d)\s*=", ("key", "passwd", "password")),
    (r"(?-i:[Aa]pi|API)_x", ("api_x",)),
    (r"[a-z]+_token", None),  # a match may begin with any letter
    (r"x|yz", None),  # too short to be worth a scan
])
def test_beginnings_of_a_pattern(pattern: str, starts: tuple[str, ...] | None) -> None:
    assert gitleaks.beginnings(pattern) == starts


def test_a_json_records_escaped_quotes_are_read_as_quotes() -> None:
    value = "Zk3pQ9vW2xY7mN4b"
    nuget = '<add key="ClearTextPassword" value="' + value + '" />'
    record = json.dumps({"output": f"{nuget} and api_token = \"{value}x\""})
    out = Masker.credentials()(record)
    assert value not in out and json.loads(out)["output"].startswith('<add key="ClearTextPassword" value="')


def test_no_rule_shows_in_the_json_of_ladr_lab_search_mask(tmp_path) -> None:
    from tests.runfiles.helpers import rec
    from tests.runfiles.test_search_cli import cli

    samples = {rule_id: (text.replace("\r", " "), secret.replace("\r", " ")) for rule_id, (text, secret)
               in SAMPLES.items()}
    (tmp_path / "Alice.history").write_text("".join(
        rec(f"18:{i // 60:02d}:{i % 60:02d}", "Alice", f"said (round 1): kiwi {i} {text}", "c")  # distinct masked
        for i, (text, _) in enumerate(samples.values())))
    p = cli("search", str(tmp_path), "kiwi", "--owner", "Alice", "--episode", "1", "--conversation", "c",
            "--top-k", "1000", "--mask", "--json")
    assert p.returncode == 0, p.stderr
    shown = "\n".join(piece["text"] for piece in json.loads(p.stdout))
    assert shown.count("kiwi") == len(samples)
    assert [rule_id for rule_id, (_, secret) in samples.items() if _leaked(secret, shown)] == []
