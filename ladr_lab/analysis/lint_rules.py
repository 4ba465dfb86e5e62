"""The static lint rules: seed 001's pitfalls that the ladder text alone shows, written as config rules in a
registry of their own (docs/config.md), so they are located, coded and reported like every other problem.

- `loose-request-match`: a requestMatch that accepts `{}` or a final-looking object, so a final answer
  written as JSON would be taken as a retrieval request ("Use required: [request] and a structured
  request object to keep the schemas distinct").
- `no-index-field`: a retrieve step without a field listing the folder it retrieves from: its `index` or `tree`
  ("Always include at least metatag: index as a field on a retrieve step"), or a listing of a file metatag
  (`metatag: summary`), which names each file that has it and so shows the model paths it can ask for.
- `max-rounds-high`: maxRounds above 10 ("For most use cases, 3-5 rounds is plenty").
- `prompt-example-unmatched`: a request the systemPrompt shows (every outermost JSON object in it that names
  `request` or a retrieval mode) that requestMatch refuses: the model copies the example, and its request
  would be taken as the final answer.
- `fan-out-cost`: a multi-node retrieve step whose worst case (nodes × (maxRounds + 1)) exceeds
  executionBudget.maxLlmCalls, or that no maxLlmCalls bounds.
"""
from __future__ import annotations

from collections.abc import Iterator

from ..config.rules import RULES, Rule, Site, problem, rule, whole
from ..config.schemas import metaschema_errors, parse_schema
from ..config.walker import Registry
from ..errors import ConfigError
from ..round.vocabulary import MODES
from ..slate.metatags import FOLDER_LEVEL

MAX_ROUNDS_HIGH = 10
# what a final answer written as JSON tends to look like; a requestMatch that accepts one of them is loose
FINAL_LOOKING = ({"answer": "Dedup is per step."}, {"final": "Done."},
                 {"result": "Done.", "sources": ["core.md"]}, {"summary": "The findings."})

_OWN: dict[str, list[tuple[str, Rule]]] = {}

FIXES = {
    "loose-request-match": 'add `required: [request]` and a structured `request` object (seed 001), so an answer '
                           'in JSON cannot match',
    "no-index-field": "add a field `{ name: FileIndex, type: slateRead, from: { slate: S, folder: F, metatag: "
                      "index } }` for the retrieve folder, so the model can see what exists",
    "max-rounds-high": "lower retrieve.maxRounds to 3-5; each round is one model call per node",
    "prompt-example-unmatched": "make the systemPrompt's example match requestMatch (or loosen requestMatch "
                                "where it refuses it): the model writes what the prompt shows",
    "request-copies-example": "make the systemPrompt's example name a real file of the slate (one the listing "
                              "shows) instead of `{path}`, or write it as a placeholder the model must fill "
                              '(`{{"files": ["<a path from the listing>"]}}`) and say to choose from the listing',
    "fan-out-cost": "control nodes with a knob, lower maxRounds, or set executionBudget.maxLlmCalls to the "
                    "cost you accept",
}


def registry() -> Registry:
    """Every rule `ladr-lab validate` runs (those that look at the disk included) plus the lint's own (built
    on each call, so rules registered later are included)."""
    from ..config.disk import with_disk_rules
    merged = {kind: list(rules) for kind, rules in with_disk_rules(RULES).items()}
    for kind, rules in _OWN.items():
        merged.setdefault(kind, []).extend(rules)
    return merged


def _valid_schema(raw) -> dict | None:
    schema = parse_schema(raw)
    if schema is None or metaschema_errors(schema):
        return None
    return schema


def looseness(schema: dict) -> str | None:
    """Why a requestMatch would take a final answer for a request (None when it would not)."""
    from ..round.verdict import validator
    v = validator(schema)
    if v.is_valid({}):
        why = "has no `required`" if not schema.get("required") else "accepts {}"
        return f"{why}, so any JSON object matches, a final answer in JSON included"
    for probe in FINAL_LOOKING:
        if v.is_valid(probe):
            import json
            return f"accepts a final-looking object such as {json.dumps(probe)}"
    return None


@rule("retrieve", "loose-request-match", registry=_OWN)
def _loose(site: Site) -> Iterator[ConfigError]:
    schema = _valid_schema(site.raw.get("requestMatch"))
    if schema is None:
        return
    why = looseness(schema)
    if why is not None:
        yield problem(f"retrieve.requestMatch {why}: the step would retrieve again instead of ending",
                      at=("requestMatch",), severity="warning")


def _reads_index(fld, slate: str, folder: str) -> bool:
    """True for a field that lists the folder's files by path: its `index` or `tree`, or a listing of a file
    metatag (`metatag: summary` shows `{file, value}` for each file that has it: a learner's Files field)."""
    src = fld.get("from") if isinstance(fld, dict) else None
    if not (isinstance(src, dict) and src.get("slate") == slate and src.get("folder") == folder):
        return False
    name = src.get("metatag")
    return name in FOLDER_LEVEL or (isinstance(name, str) and bool(name) and "file" not in src)


@rule("step", "no-index-field", registry=_OWN)
def _no_index(site: Site) -> Iterator[ConfigError]:
    r = site.raw.get("retrieve") if isinstance(site.raw, dict) else None
    to = r.get("to") if isinstance(r, dict) else None
    if not isinstance(to, dict):
        return
    fields = site.raw.get("fields") if isinstance(site.raw.get("fields"), list) else []
    if not any(_reads_index(f, str(to.get("slate")), str(to.get("folder"))) for f in fields):
        yield problem(f'a retrieve step without a field listing {to.get("slate")}/{to.get("folder")} (its index or '
                      'tree, or a metatag listing): the model cannot see what exists, so its requests are blind '
                      'guesses',
                      at=("retrieve",), severity="warning")


def prompt_examples(text: str) -> list:
    """Every outermost JSON object in a prompt that looks like a retrieval request (a `request` key or a
    mode name), found with the project's JSON extraction engine (all candidates, not just the first)."""
    from ..jsonx import iter_candidates
    found = [(c.span, c.value) for c in iter_candidates(text) if c.span is not None]
    out: list = []
    end = -1
    for (start, stop), v in sorted(found, key=lambda t: (t[0][0], -t[0][1])):
        if start < end:
            continue                  # nested in an example already taken
        end = stop
        if not isinstance(v, dict):
            continue
        inner = v["request"] if isinstance(v.get("request"), dict) else v
        if ("request" in v or any(m in inner for m in MODES)) and v not in out:
            out.append(v)
    return out


@rule("step", "prompt-example-unmatched", registry=_OWN)
def _prompt_example(site: Site) -> Iterator[ConfigError]:
    raw = site.raw if isinstance(site.raw, dict) else {}
    r = raw.get("retrieve")
    prompt = raw.get("systemPrompt")
    if not isinstance(r, dict) or not isinstance(prompt, str):
        return
    schema = _valid_schema(r.get("requestMatch"))
    if schema is None:
        return
    import json

    from ..round.verdict import schema_failure
    for example in prompt_examples(prompt):
        err = schema_failure(example, schema)
        if err is not None:
            where = "/".join(str(p) for p in err.schema_path) or "/"
            yield problem(f"the systemPrompt's example {json.dumps(example, ensure_ascii=False)} does not match "
                          f"retrieve.requestMatch (`{err.validator}` at {where}: {err.message}): a model that "
                          "copies it would have its request taken as the final answer",
                          at=("systemPrompt",), severity="warning")


@rule("retrieve", "max-rounds-high", registry=_OWN)
def _max_rounds_high(site: Site) -> Iterator[ConfigError]:
    n = site.raw.get("maxRounds")
    if whole(n) and n > MAX_ROUNDS_HIGH:
        yield problem(f"retrieve.maxRounds is {n}: up to {n + 1} model calls per node (seed 001: 3-5 rounds is "
                      "plenty for most uses)", at=("maxRounds",), severity="warning")


@rule("step", "fan-out-cost", registry=_OWN)
def _fan_out(site: Site) -> Iterator[ConfigError]:
    raw = site.raw
    r = raw.get("retrieve") if isinstance(raw, dict) else None
    nodes = raw.get("nodes", 1) if isinstance(raw, dict) else 1
    if not isinstance(r, dict) or not whole(nodes, 2) or not whole(r.get("maxRounds")):
        return
    worst = nodes * (r["maxRounds"] + 1)
    budget = site.doc.data.get("executionBudget") if isinstance(site.doc.data, dict) else None
    cap = budget.get("maxLlmCalls") if isinstance(budget, dict) else None
    if not whole(cap):
        yield problem(f"{nodes} nodes × (maxRounds {r['maxRounds']} + 1) = up to {worst} model calls for this step, "
                      "and no executionBudget.maxLlmCalls bounds them", at=("nodes",), severity="warning")
    elif worst > cap:
        yield problem(f"{nodes} nodes × (maxRounds {r['maxRounds']} + 1) = up to {worst} model calls for this step, "
                      f"more than executionBudget.maxLlmCalls ({cap}): the run may end budget_exhausted",
                      at=("nodes",), severity="warning")


__all__ = ["FINAL_LOOKING", "FIXES", "MAX_ROUNDS_HIGH", "looseness", "prompt_examples", "registry"]
