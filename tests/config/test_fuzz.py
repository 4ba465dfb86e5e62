"""Fuzzing the loader: whatever the text, only a ConfigError escapes, and the command line never tracebacks.

Documents come from six generators: valid ladders, mutated ladders (values replaced, keys dropped or
misspelt), YAML with anchors and aliases (recursive ones, "billion laughs" shapes, shared schemas),
deep nesting, odd scalars (tags, dates that are not dates, NaN, NUL) and binary junk.
"""
from __future__ import annotations

import copy
import os
import pickle
import subprocess
import sys
from datetime import timedelta
from pathlib import Path

import yaml
from hypothesis import HealthCheck, assume, example, given, settings
from hypothesis import strategies as st

from ladr_lab.config import check_text, load_ladder_text
from ladr_lab.config.rules import CODES
from ladr_lab.errors import ConfigError, ConfigErrors

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = int(os.environ.get("LADR_FUZZ_EXAMPLES", "200"))  # raise it to fuzz longer: LADR_FUZZ_EXAMPLES=20000
TITLES = ("Knowledge", "Memory")
REQUEST = {"type": "object", "required": ["request"], "properties": {"request": {"type": "object", "properties": {
    "files": {"type": "array", "items": {"type": "string"}}, "glob": {"type": "string"}}}}}
MATCH = {"type": "object"}


@st.composite
def valid_ladders(draw) -> dict:
    """A ladder document that must load without errors."""
    slates = []
    for title in draw(st.lists(st.sampled_from(TITLES), min_size=1, max_size=2, unique=True)):
        folders = []
        for name in draw(st.lists(st.sampled_from(("docs", "facts", "notes/deep")), min_size=1, max_size=2,
                                  unique=True)):
            tags = draw(st.dictionaries(st.sampled_from(("tags", "summary", "score")),
                                        st.sampled_from(("string[]", "string", "number")), max_size=2))
            files = draw(st.lists(st.sampled_from(("core.md", "a/b.md")), max_size=2, unique=True))
            folders.append({"name": name, "metatags": tags,
                            "files": [{"name": f, "metatags": {"verified": "boolean"}} for f in files]})
        slates.append({"title": title, "folders": folders})
    refs = [(s["title"], f["name"], [x["name"] for x in f["files"]]) for s in slates for f in s["folders"]]
    n = draw(st.integers(1, 4))
    ids = [f"s{i}" for i in range(n)]
    steps = []
    for i, sid in enumerate(ids):
        stype = draw(st.sampled_from(("normal", "normal", "sequential", "group", "call")))
        step: dict = {"id": sid, "type": stype, "nodes": draw(st.sampled_from((1, 2, "{{knobs.n}}")))}
        if stype == "group":
            step["steps"] = [{"id": f"{sid}_b{j}", "systemPrompt": "branch"} for j in range(draw(st.integers(1, 2)))]
        elif stype == "call":
            step["call"] = {"ladder": "self", "maxDepth": 1}
        else:
            step["systemPrompt"] = draw(st.text(max_size=20))
            step["fields"] = draw(st.lists(_field(refs, ids, i, prev_group=i > 0 and steps[i - 1]["type"] == "group"),
                                           max_size=3, unique_by=lambda f: f["name"]))
            slate, folder, files = draw(st.sampled_from(refs))
            if draw(st.booleans()):
                step["retrieve"] = {"to": {"slate": slate, "folder": folder}, "as": "Docs",
                                    "maxRounds": draw(st.integers(1, 3)), "requestMatch": REQUEST}
            if files and draw(st.booleans()):
                on = draw(st.sampled_from(("append", "overwrite", "mergeByKey")))
                step["slateWrite"] = {"to": {"slate": slate, "folder": folder, "file": files[0]}, "on": on,
                                      "match": MATCH, **({"key": "id"} if on == "mergeByKey" else {})}
            if files and draw(st.booleans()):
                then = draw(st.sampled_from(("continue", "abort", "prune", "jump", "write")))
                if then == "jump":
                    then = {"jump": {"stepId": draw(st.sampled_from(ids))}}
                elif then == "write":
                    then = {"write": {"to": {"slate": slate, "folder": folder, "file": files[0]}, "from": "output"}}
                step["if"] = {"equals": "YES", "then": then, "else": "continue"}
        steps.append(step)
    return {"name": "fuzz", "knobs": {"n": 2}, "executionBudget": {"maxLlmCalls": 12, "maxSteps": 12},
            "slates": slates, "steps": steps}


@st.composite
def _field(draw, refs, ids, i, prev_group):
    name = draw(st.sampled_from(("Question", "Index", "Earlier", "Node", "Spec", "Count")))
    kind = draw(st.sampled_from(("text", "slateRead", "ingest", "nodeInfo", "json", "knob")))
    field: dict = {"name": name, "type": kind}
    if kind == "text":
        field["from"] = "input.context"
    elif kind == "slateRead":
        slate, folder, files = draw(st.sampled_from(refs))
        field["from"] = {"slate": slate, "folder": folder, "metatag": "index"}
        if files and draw(st.booleans()):
            field["from"] = {"slate": slate, "folder": folder, "file": files[0]}
    elif kind == "ingest":
        field["from"] = "previous" if i > 0 and not prev_group and draw(st.booleans()) else \
            {"stepId": draw(st.sampled_from(ids)), "nodeRef": "accumulate"}
    elif kind == "json":
        field["value"] = {"a": [1, 2]}
    elif kind == "knob":
        field["knob"] = "n"
    return field


ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-10**20, 10**20), st.floats(allow_nan=True), st.text(max_size=12),
    st.sampled_from(["previous", "output", "{}", "[]", "mergeByKey", "index", "tree", "group", "call", "..",
                     "{{knobs.n}}", "{{knobs.nope}}", "../x.md", ".hidden", "input.context", "self"]),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.sampled_from(["stepId", "slate", "a", "jump"]),
                                                        st.text(max_size=4), max_size=2),
    st.recursive(st.just([]), lambda inner: st.lists(inner, min_size=1, max_size=2), max_leaves=30))


def _paths(d, p=()):
    yield p
    items = d.items() if isinstance(d, dict) else enumerate(d) if isinstance(d, list) else ()
    for k, v in items:
        yield from _paths(v, p + (k,))


@st.composite
def mutated_ladders(draw) -> dict:
    """A valid ladder with a few values replaced, keys dropped or misspelt."""
    doc = copy.deepcopy(draw(valid_ladders()))
    for _ in range(draw(st.integers(1, 4))):
        paths = [p for p in _paths(doc) if p]
        p = draw(st.sampled_from(paths))
        parent = doc
        for k in p[:-1]:
            parent = parent[k]
        how = draw(st.sampled_from(("replace", "drop", "misspell")))
        if how == "replace" or not isinstance(parent, dict):
            parent[p[-1]] = draw(ODD_VALUES)
        elif how == "drop":
            del parent[p[-1]]
        else:
            parent[str(p[-1])[:-1] + draw(st.sampled_from("xe_"))] = parent.pop(p[-1])
    return doc


def _dump(doc: dict, flow: bool) -> str:
    return yaml.dump(doc, Dumper=getattr(yaml, "CSafeDumper", yaml.SafeDumper), sort_keys=False,
                     default_flow_style=flow, allow_unicode=True)


@st.composite
def alias_documents(draw) -> str:
    """Anchors and aliases: fan-outs, chains, self-references, and a shared schema used by several steps."""
    n = draw(st.integers(1, 10))
    lines = ["name: a"]
    for i in range(n):
        refs = draw(st.lists(st.integers(0, i), max_size=10))  # i itself: an alias inside its own anchor
        lines.append(f"k{i}: &a{i} [" + (", ".join(f"*a{j}" for j in refs) or "x") + "]")
    lines.append(f"steps: [{{id: s, fields: *a{draw(st.integers(0, n - 1))}}}]")
    if draw(st.booleans()):
        return "\n".join(lines) + "\n"
    # PyYAML writes an object used twice as &id001 ... *id001: the shared REQUEST and MATCH schemas
    return _dump(draw(st.one_of(valid_ladders(), mutated_ladders())), flow=draw(st.booleans()))


@st.composite
def deep_documents(draw) -> str:
    depth = draw(st.integers(1, 6000))
    kind = draw(st.sampled_from(("seq", "flowmap", "blockmap", "mixed")))
    if kind == "seq":
        body = "[" * depth + "]" * depth
    elif kind == "flowmap":
        body = "{a: " * depth + "1" + "}" * depth
    elif kind == "mixed":
        body = "[{a: " * (depth // 2) + "1" + "}]" * (depth // 2)
    else:
        depth = min(depth, 400)
        return "name: d\nsteps:\n" + "".join("  " * (i + 1) + "a:\n" for i in range(depth))
    return f"name: d\nsteps: {body}\n"


ODD_SCALARS = ("!!int abc", "!!float x", "!!binary ***", "!custom x", "2026-13-45", "2026-02-30 25:61:00",
               ".nan", "-.inf", "0x1F", "0o17", "1e999", "~", "!!str 5", "!!set {a}", "!!omap [a: 1]",
               '"\\x00"', "'\u202e'", "&x 1", "*nope", "!!timestamp 1", "!!bool maybe", "|\n  block", "? a")


@st.composite
def odd_scalar_documents(draw) -> str:
    lines = _dump(draw(valid_ladders()), flow=False).splitlines()
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(lines) - 1))
        if ": " in lines[i]:
            lines[i] = lines[i].split(": ", 1)[0] + ": " + draw(st.sampled_from(ODD_SCALARS))
    return "\n".join(lines) + "\n"


JUNK = st.binary(max_size=400).map(lambda b: b.decode("utf-8", errors="surrogateescape"))
DOCUMENTS = st.one_of(
    valid_ladders().map(lambda d: _dump(d, flow=False)),
    st.tuples(mutated_ladders(), st.booleans()).map(lambda t: _dump(*t)),
    alias_documents(), deep_documents(), odd_scalar_documents(), JUNK,
    st.text(alphabet=st.sampled_from("[]{}:,-&*!|>'\"#? \n\tab1"), max_size=200),
)


# Named examples: documents an audit found hanging, exhausting memory or answering unclearly (issues 6, 7).
HUGE_NODES = "name: h\nsteps:\n  - { id: a, nodes: 100000000, systemPrompt: x }\n"
HUGE_NODES_BUDGETED = "name: h\nexecutionBudget: { maxLlmCalls: 5 }\nsteps:\n  - { id: a, nodes: 100000000, systemPrompt: x }\n"
DIGITS_NODES = "name: h\nsteps:\n  - { id: a, nodes: 1" + "0" * 5000 + ", systemPrompt: x }\n"
BRACKETS_NODES = "name: h\nsteps:\n  - { id: a, nodes: '" + "[" * 5000 + "', systemPrompt: x }\n"
YAML_WORDS = "name: w\nmodel: off\nsteps:\n  - { id: a, systemPrompt: yes, if: { equals: YES, then: continue, else: abort } }\n"
NAMED = (HUGE_NODES, HUGE_NODES_BUDGETED, DIGITS_NODES, BRACKETS_NODES, YAML_WORDS)


def _check(problems: list[ConfigError]) -> None:
    for p in problems:
        assert isinstance(p, ConfigError) and p.rule in CODES, p
        assert p.line is None or (isinstance(p.line, int) and isinstance(p.column, int)), p
        p.to_dict()
        assert pickle.loads(pickle.dumps(p)).to_dict() == p.to_dict()


@settings(max_examples=EXAMPLES, deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow,
                                                                                  HealthCheck.data_too_large])
@given(DOCUMENTS)
@example(HUGE_NODES)
@example(HUGE_NODES_BUDGETED)
@example(DIGITS_NODES)
@example(BRACKETS_NODES)
@example(YAML_WORDS)
def test_only_config_errors_escape(text):
    try:
        load_ladder_text(text, file="fuzz.yaml")
    except ConfigErrors as many:
        assert len(many) >= 1
        _check(list(many))
    except ConfigError as one:
        _check([one])
    ladder, problems = check_text(text, file="fuzz.yaml")
    _check(problems)
    errors = [p for p in problems if p.severity == "error"]
    assert (ladder is None) == bool(errors)
    assert errors == sorted(errors, key=lambda e: (e.line or 0, e.column or 0))


@settings(max_examples=EXAMPLES // 5, deadline=timedelta(seconds=5), suppress_health_check=[HealthCheck.too_slow])
@given(valid_ladders())
def test_generated_valid_ladders_load(doc):
    ladder = load_ladder_text(_dump(doc, flow=False))
    assert [s.id for s in ladder.steps] == [s["id"] for s in doc["steps"]]


def _ladr(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True")
    return subprocess.run([sys.executable, "-m", "ladr_lab", *args], capture_output=True, text=True, timeout=60,
                          env=env, cwd=cwd)


@settings(max_examples=max(5, EXAMPLES // 60), deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                HealthCheck.function_scoped_fixture])
@given(st.one_of(valid_ladders().map(lambda d: _dump(d, flow=False)),
                 st.tuples(mutated_ladders(), st.booleans()).map(lambda t: _dump(*t)),
                 alias_documents(), deep_documents(), JUNK))
@example(HUGE_NODES)
@example(HUGE_NODES_BUDGETED)
@example(DIGITS_NODES)
@example(YAML_WORDS)
def test_the_command_line_never_tracebacks(tmp_path_factory, text):
    assume(text.strip())
    work = tmp_path_factory.mktemp("fuzz")
    ladder = work / "ladder.yaml"
    ladder.write_bytes(text.encode("utf-8", errors="surrogateescape"))
    slates = []
    for title in TITLES:
        (work / title).mkdir()
        slates += ["--slate", f"{title}={work / title}"]
    for args in (["validate", str(ladder)], ["run", str(ladder), "--model", "offline", "--input", "q", *slates]):
        p = _ladr(*args, cwd=work)
        out = p.stdout + p.stderr
        assert p.returncode in (0, 1), (args[0], p.returncode, out[-2000:])
        assert "Traceback" not in out, (args[0], out[-3000:])


def test_the_named_examples_are_each_one_clear_problem_or_a_warning():
    def said(text):
        return [(p.rule, p.severity) for p in check_text(text)[1]]
    assert said(HUGE_NODES) == [("nodes-unbounded", "error")]
    assert said(HUGE_NODES_BUDGETED) == [("nodes-over-budget", "warning")]
    assert said(DIGITS_NODES) == said(BRACKETS_NODES) == [("nodes-value", "error")]
    assert {p.severity for p in check_text(YAML_WORDS)[1]} == {"error"}
    assert all("quote it" in str(p) for p in check_text(YAML_WORDS)[1])
    assert all(len(str(p)) < 300 for text in NAMED for p in check_text(text)[1])


HOSTILE_LADDER = """\
name: hostile
slates:
  - title: Knowledge
    folders: [{ name: docs, metatags: { tags: "string[]" } }]
steps:
  - id: r
    fields: [{ name: Q, type: text, from: input.context }]
    retrieve:
      to: { slate: Knowledge, folder: docs }
      as: Docs
      maxRounds: 6
      requestMatch: { type: object, required: [request] }
    systemPrompt: go
"""
# what a careless or hostile model may write as requests (no lone surrogates: they cannot reach a JSON file)
HOSTILE_REQUESTS = [
    {"glob": "many/*"},                                            # 3,000 tiny files in one round
    {"files": [f"nope{i}.md" for i in range(3000)]},               # 3,000 "(not found)" entries
    {"files": [3, True, None, {"a": 1}, "..", "../x", "a\u0000b", "/etc/passwd", ".hidden"]},
    {"subfolders": ["..", "many/../..", "", ".", ["x"]], "glob": ["*"]},
    {"metatag": [{"name": "tags", "contains": 5}, {"name": "tree", "depth": "x"}, {"name": "index"}, "tags"]},
    {"similarTo": [5, "\u202e" * 100], "topK": -1},
]


def test_a_hostile_request_set_is_answered_within_the_round_bound(tmp_path):
    docs = tmp_path / "Knowledge" / "docs"
    (docs / "many").mkdir(parents=True)
    for i in range(3000):
        (docs / "many" / f"f{i:04d}_with_a_rather_long_name.md").write_text("x")
    (tmp_path / "hostile.yaml").write_text(HOSTILE_LADDER)
    import json
    script = {"r": [json.dumps({"request": r}) for r in HOSTILE_REQUESTS] + ["done"]}
    (tmp_path / "script.yaml").write_text(yaml.safe_dump(script))
    trace = tmp_path / "t.jsonl"
    p = _ladr("run", "hostile.yaml", "--model", "script:script.yaml", "--input", "q", "--slate",
              f"Knowledge={tmp_path / 'Knowledge'}", "--max-round-chars", "20000", "--trace-out", str(trace),
              cwd=tmp_path)
    assert p.returncode == 0 and "Traceback" not in p.stdout + p.stderr, (p.stdout + p.stderr)[-2000:]
    calls = [e for e in map(json.loads, trace.read_text().splitlines()) if e["type"] == "llm_call"]
    assert len(calls) == len(HOSTILE_REQUESTS) + 1
    blocks = [m["content"] for m in (c["messages"][1] for c in calls)]
    for before, after in zip(blocks, blocks[1:], strict=False):
        assert len(after) - len(before) < 20_000 + 300     # each round adds at most its bound and one summary
    statuses = {f["status"] for c in calls for f in c.get("fetched") or ()}
    assert {"fetched", "left_out", "not_found", "no_match", "listed"} <= statuses
