"""OfflineModel: the embedded default model (`model: offline`) — deterministic, no key, no network.

It really reads its prompt (the runtime's assembly, SPEC §1) and behaves like a careful, small
researcher, so every demo and notebook runs end to end without an API:

1. **Parse.** The user message is split into `Name:` sections; the question is the field named
   Question/Query/Input/Task/Claim/Topic (any case; then a field whose name contains one of those;
   then the first plain-prose field). JSON lists of `{name, size}` entries are folder indexes
   (`{"name": "notes/", "files": K}` is a subfolder; `children` makes it a tree), lists of
   `{file, value}` are metatag listings, and `<as> <k>:` blocks hold the retrieved entries
   (`--- path [mode] ---` + content, `(not found)`, `(already in context)`, `(no match)`, or a
   subfolder listing).
2. **Retrieve** (only when `request_match` is given and the call is not forced final). Words are
   lowercased, stopwords dropped and lightly stemmed (up to two of s/es/ies, -ing, -ed, -ion, -al,
   -ly, final e/y, so "retrieval" and "retrieves" meet). Each known file scores
   `2 × |question ∩ path words|` (path split on `/ - _ .`) `+ |question ∩ metatag words|`
   (summary/tags values seen in metatag listings or index entries). Round 1 asks for the top three
   files with a score > 0 and browses, with `subfolders`, any subfolder that scores but whose files
   are unknown (every subfolder, when nothing scores at all); the round after a listing asks for
   the scoring files it revealed. When neither files nor subfolders help and nothing was found yet,
   it falls back, in this order of preference, to a metatag query (`name`: the schema's enum/const
   name, else "tags"; `contains`: the question word that best hits metatag values and paths, as a
   stem so it matches as a substring), a glob `**/*word*`, or `similarTo` over the embedding metatag
   (only when the schema declares `similarTo`). Each candidate is tried in the wrapped
   `{"request": {...}}` and bare `{...}` shapes (wrapped first when the schema declares `request`),
   only with the modes the schema declares, and the first that `jsonschema` accepts is emitted alone
   as compact JSON. It answers instead when no candidate validates, when nothing new is worth
   asking for, when the last round reported `(already in context)`, or when a round brought
   nothing back.
3. **Answer** (final, forced, or no `retrieve`). Extractive: the retrieved file contents (else the
   other prose fields, else the question field itself) are split into sentences (headings, code
   and tables skipped), each scored by the question words it shares (rarer words weigh more); the
   best three (two when the third is much weaker; ties go to the sentence from the better-matching
   file, then document order) are given in document order, each cited with its source in square
   brackets: `Slates are folders of files [glossary.md].` A sentence that already ends in a
   citation keeps it. When no sentence shares a question word but a source does, by the overlap
   files are chosen by (its path, its summary/tags) or in a heading, short line or code, its opening
   sentences answer, best-sharing source first (a file picked as `recipes/pancakes.md` whose text
   never says "pancakes" is still quoted). Only if nothing read overlaps does it say so plainly and
   cite what it read. Sentences
   with braces are skipped, so a prose answer holds no JSON object.
4. **output_schema** given (final call): it emits one JSON value built from the schema — objects
   get their required and simple properties; strings an extractive sentence, or by property name
   the source path, the question, the full cited answer, a key, a title or a tag (minLength,
   maxLength, pattern, enum respected); numbers 0.9 if allowed, else the maximum; integers the
   maximum; booleans true; arrays one item, or as many as minItems asks — checks it with
   jsonschema, retries with the required properties only, and falls back to prose if neither
   validates.
5. **equals**: a step gated by `if: {equals: S}` with no output schema answers exactly `S`.

Same prompt and hints, same Completion (latency 0, cost 0, tokens estimated as chars/4).

The backend's own modules, beside this one: `reading` (how a prompt is read), `words` (the word scoring) and
`schema` (building and checking JSON against a schema; internal to this backend).
"""
from __future__ import annotations

import json
import math
import re

from ...round.vocabulary import MODES as REQUEST_MODES
from ..base import (
    CallInfo,
    Completion,
    system_text,
    user_text,
)
from .reading import Prompt, read_prompt
from .schema import Material, build_instance, enum_values, is_valid, properties, resolve
from .words import path_terms, sentences, stem, terms, words

__all__ = ["OfflineModel"]

MODES = tuple(m for m in REQUEST_MODES if m != "similarTo")    # similarTo is asked through a metatag
MAX_FILES = 3
_CITED = re.compile(r"\[[^\[\]]+\][.!?]?$")


class OfflineModel:
    """The deterministic, network-free default model that retrieves by the index and answers extractively."""

    deterministic = True   # the same messages always get the same answer (the search server relies on it)
    reads_schemas = True   # its requests and JSON answers are shaped by the call's requestMatch and output schema

    def __init__(self, *, name: str = "offline", max_concurrency: int = 4) -> None:
        self.name = name
        self.max_concurrency = max_concurrency

    def complete(self, messages: list[dict], call: CallInfo | None = None) -> Completion:
        """Read the prompt and return a retrieval request, a cited extractive answer, or schema JSON."""
        c = call or CallInfo()
        text = self.respond(messages, request_match=c.request_match, retrieve_as=c.retrieve_as,
                            output_schema=c.output_schema, equals=c.equals, forced_final=c.forced_final,
                            node=c.node, nodes=c.nodes)
        return Completion.of_text(text, messages, model=self.name, provenance="offline")

    def respond(
        self,
        messages: list[dict],
        *,
        request_match: dict | None = None,
        retrieve_as: str | None = None,
        output_schema: dict | None = None,
        equals: str | None = None,
        forced_final: bool = False,
        node: int = 1,
        nodes: int = 1,
        **_ignored,
    ) -> str:
        """The text `complete` would return (handy in notebooks to see the model's decision)."""
        prompt = read_prompt(system_text(messages), user_text(messages), retrieve_as)
        forced = forced_final or prompt.forced
        if isinstance(request_match, dict) and not forced:
            request = _request(prompt, request_match, node, nodes)
            if request is not None:
                return json.dumps(request, ensure_ascii=False, separators=(",", ":"))
        if isinstance(output_schema, dict) or output_schema is True:
            out = _schema_answer(prompt, output_schema)
            if out is not None:
                return out
        elif isinstance(equals, str):
            return equals
        return _Answer(prompt).prose()

    def close(self) -> None:
        """Nothing to release."""

    def __repr__(self) -> str:
        return "OfflineModel()"


# --------------------------------------------------------------------------- retrieval requests


def _query(prompt: Prompt) -> list[str]:
    return terms(prompt.question) or terms(prompt.system)


def _score(path: str, meta: list[str], q: set[str]) -> int:
    return 2 * len(q & path_terms(path)) + len(q & set(terms(" ".join(meta))))


def _request(prompt: Prompt, schema: dict, node: int = 1, nodes: int = 1):
    """The first schema-valid retrieval request worth making, or None to answer instead."""
    if prompt.blocks and any(e.status == "already_in_context" for e in prompt.blocks[-1]):
        return None
    q_list = _query(prompt)
    q = set(q_list)
    useful = bool(prompt.fetched())
    fruitless = any(not any(e.status in ("fetched", "listed") for e in b) for b in prompt.blocks)

    file_scores = {p: _score(p, info.meta, q) for p, info in prompt.files.items()}
    sub_scores = {p: _score(p, info.meta, q) for p, info in prompt.subfolders.items()}
    picks = sorted(
        (p for p, s in file_scores.items()
         if s > 0 and p not in prompt.seen and _pickable(prompt, p, useful)),
        key=lambda p: (-file_scores[p], prompt.files[p].order),
    )
    if nodes > 1 and len(picks) > 1:
        # parallel investigators: node k takes every nodes-th file of the ranking from position k, so the
        # nodes of one step read different evidence (the top file when there are fewer files than nodes)
        share = picks[(node - 1) % len(picks)::nodes]
        picks = share or picks
    picks = picks[:MAX_FILES]
    unknown = [p for p in prompt.subfolders if p not in prompt.browsed and p not in prompt.known_children]
    subs = sorted((p for p in unknown if sub_scores[p] > 0),
                  key=lambda p: (-sub_scores[p], prompt.subfolders[p].order))[:MAX_FILES]
    anything_scores = any(s > 0 for s in file_scores.values()) or any(s > 0 for s in sub_scores.values())
    if not subs and not anything_scores and not useful:
        subs = sorted(unknown, key=lambda p: prompt.subfolders[p].order)[:MAX_FILES]

    candidates: list[dict] = []
    if picks and subs:
        candidates.append({"files": picks, "subfolders": subs})
    if picks:
        candidates.append({"files": picks})
    if subs:
        candidates.append({"subfolders": subs})
    if not useful and not fruitless and q_list:
        word = _contains_word(prompt, q_list)
        for name in _metatag_names(schema):
            candidates.append({"metatag": {"name": name, "contains": word}})
        candidates.append({"glob": f"**/*{word}*"})  # `**` reaches subfolders too
        if _declares_similar(schema):
            candidates.append({"metatag": {"name": "embedding", "similarTo": prompt.question[:500]}})
    return _first_valid(candidates, schema)


def _pickable(prompt: Prompt, path: str, useful: bool) -> bool:
    # Files the fields show are picked until something useful arrives; files a subfolder listing
    # revealed are picked in the round right after that listing, never later.
    info = prompt.files[path]
    return (info.listing_round == 0 and not useful) or info.listing_round == len(prompt.blocks)


def _contains_word(prompt: Prompt, q_list: list[str]) -> str:
    meta_terms = [set(terms(" ".join(info.meta))) for info in prompt.files.values()]
    paths = [path_terms(p) for p in prompt.files]
    best, best_key = q_list[0], (-1, -1)
    for t in q_list:
        key = (sum(2 * (t in m) for m in meta_terms) + sum(t in p for p in paths), len(t))
        if key > best_key:
            best, best_key = t, key
    return best


def _request_schema(schema: dict) -> tuple[dict, bool]:
    """(the schema of the request object, whether the wrapped `{"request": ...}` shape comes first)."""
    props = properties(schema, schema)
    if "request" in props:
        return resolve(props["request"], schema), True
    return schema, False


def _declared_modes(schema: dict) -> set[str]:
    req, _ = _request_schema(schema)
    declared = set(properties(req, schema)) & set(MODES)
    return declared or set(MODES)


def _metatag_schema(schema: dict) -> dict:
    req, _ = _request_schema(schema)
    sub = resolve(properties(req, schema).get("metatag", {}), schema)
    return sub if isinstance(sub, dict) else {}


def _metatag_names(schema: dict) -> list[str]:
    name_schema = properties(_metatag_schema(schema), schema).get("name", {})
    allowed = [v for v in enum_values(name_schema, schema) if isinstance(v, str) and v != "embedding"]
    if allowed:
        return sorted(allowed, key=lambda v: v != "tags")[:2]
    return ["tags"]


def _declares_similar(schema: dict) -> bool:
    mt = properties(_metatag_schema(schema), schema)
    return "similarTo" in mt or "embedding" in enum_values(mt.get("name", {}), schema)


def _trimmed(cand: dict):
    """The candidate, then with its lists cut to fewer items, best first (a requestMatch's `maxItems` below the
    number of files the model wants: it asks for the top ones it may ask for, not for nothing)."""
    yield cand
    longest = max((len(v) for v in cand.values() if isinstance(v, list)), default=0)
    for keep in range(longest - 1, 0, -1):
        yield {mode: (v[:keep] if isinstance(v, list) else v) for mode, v in cand.items()}


def _first_valid(candidates: list[dict], schema: dict):
    declared = _declared_modes(schema)
    _, wrapped_first = _request_schema(schema)
    for cand in (c for whole in candidates for c in _trimmed(whole)):
        if not set(cand) <= declared:
            continue
        shapes = [{"request": cand}, dict(cand)]
        if not wrapped_first:
            shapes.reverse()
        if "metatag" in cand and "similarTo" in cand["metatag"]:
            shapes += [{**s, "topK": 5} for s in shapes]
        for shape in shapes:
            if is_valid(shape, schema):
                return shape
    return None


# --------------------------------------------------------------------------- answers


class _Answer:
    """The extractive answer: scored sentences from the sources, cited."""

    def __init__(self, prompt: Prompt) -> None:
        self.prompt = prompt
        self.query = set(_query(prompt))
        self.own_question = False   # only the question itself to work from
        self.mentions: list[tuple[str, set[str]]] = []
        self.sources = self._sources()
        self.ranked = self._rank()

    def _sources(self) -> list[tuple[str, str]]:
        fetched = [(e.path, e.content) for e in self.prompt.fetched()]
        if fetched:
            return fetched
        q = self.prompt.question_section
        others = [
            (s.name or "input", s.text) for s in self.prompt.sections
            if s is not q and s.kind == "prose" and s.text.strip()
        ]
        if others:
            return others
        if q is not None and q.text.strip():
            # Only the question itself to work from (e.g. a summarising step): let the system
            # prompt's words steer which of its sentences matter too.
            self.query |= set(terms(self.prompt.system))
            self.own_question = True
            return [(q.name or "input", q.text)]
        return []

    def _rank(self) -> list[tuple[str, str]]:
        units = []
        seen: set[str] = set()
        for si, (label, text) in enumerate(self.sources):
            bonus = len(self.query & path_terms(label))
            for pos, sent in enumerate(sentences(text)):
                if sent.lower() not in seen:
                    seen.add(sent.lower())
                    units.append((si, pos, bonus, sent, label, self.query & set(terms(sent))))
        # Rarer question words weigh more (a light idf), so "dedup" beats "retrieval" in a
        # folder where every sentence mentions retrieval.
        df = {t: sum(t in u[5] for u in units) for t in self.query}
        weight = {t: 1.0 + math.log((len(units) + 1) / (df[t] + 1)) for t in self.query}
        scored = sorted(
            (-round(sum(weight[t] for t in hits), 9), -bonus, si, pos, sent, label)
            for si, pos, bonus, sent, label, hits in units if hits
        )
        if not scored and not self.own_question:
            scored = self._by_source(units)
        best = scored[:MAX_FILES]
        if len(best) == 3 and -best[2][0] * 2 < -best[0][0]:
            best = best[:2]  # a third sentence much weaker than the best only dilutes the answer
        self._order = sorted(best, key=lambda r: (r[2], r[3]))
        return [(r[4], r[5]) for r in scored]

    def _shared(self, label: str, text: str) -> set[str]:
        """Question words a source shares by the overlap files are chosen by (its path, its summary/tags
        metatags) or anywhere in its text (headings, short lines, code), stemmed alike."""
        info = self.prompt.files.get(label)
        meta = " ".join(info.meta) if info else ""
        return self.query & (path_terms(label) | set(terms(meta)) | set(terms(text)))

    def _by_source(self, units: list) -> list:
        # No sentence names a question word, but a source that shares one (the file was picked by its
        # name, or says it in a heading) still answers: its opening sentences, best-sharing source first.
        shared = {si: self._shared(label, text) for si, (label, text) in enumerate(self.sources)}
        score = {si: 2 * len(hits & path_terms(self.sources[si][0])) + len(hits) for si, hits in shared.items()}
        self.mentions = [(self.sources[si][0], hits) for si, hits in shared.items() if hits]
        return sorted((-score[si], 0, si, pos, sent, label) for si, pos, _b, sent, label, _h in units if shared[si])

    @property
    def labels(self) -> list[str]:
        """Sources in the order the chosen sentences cite them, then the rest that were read."""
        out = list(dict.fromkeys([label for _, label in self.ranked[:MAX_FILES]]))
        return out + [label for label, _ in self.sources if label not in out]

    def prose(self) -> str:
        """Two or three cited sentences, or a plain statement that nothing relevant was found."""
        if not self._order and self.mentions:
            said = {w: None for w in words(self.prompt.question) if stem(w) in set().union(*(h for _, h in self.mentions))}
            cites = ", ".join(f"[{label}]" for label, _ in self.mentions)
            return f"I found no sentence to quote, but {cites} mention{'s' if len(self.mentions) == 1 else ''} {', '.join(said) or 'it'}."
        if not self._order:
            read = ", ".join(f"[{label}]" for label, _ in self.sources)
            if read:
                return f"I found nothing that answers this in what I read: {read}."
            return "I have no documents to answer this from."
        return " ".join(_cite(r[4], r[5]) for r in self._order)


def _cite(sentence: str, label: str) -> str:
    if _CITED.search(sentence):
        return sentence
    m = re.match(r"^(.*?)([.!?:;,]*)$", sentence, re.S)
    assert m is not None  # the pattern matches every string
    body, punct = m.group(1), m.group(2)
    end = punct[-1] if punct and punct[-1] in ".!?" else "."
    return f"{body} [{label}]{end}"


def _schema_answer(prompt: Prompt, schema) -> str | None:
    answer = _Answer(prompt)
    prose = answer.prose()
    material = Material(
        question=prompt.question,
        words=list(dict.fromkeys(words(prompt.question))) or list(dict.fromkeys(words(prompt.system))),
        sentences=answer.ranked,
        labels=answer.labels,
        answer=prose,
        match_terms=set(re.findall(r"[a-z0-9]+", (prompt.question + " " + prose).lower())),
    )
    for required_only in (False, True):
        try:
            inst = build_instance(schema, material, required_only=required_only)
        except (RecursionError, TypeError, ValueError):
            continue
        if is_valid(inst, schema):
            return json.dumps(inst, ensure_ascii=False)
    return None
