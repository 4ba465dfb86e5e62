"""Shared makers for the display and widget tests: a scripted run that retrieves, gates and writes, and large
synthetic traces (many rounds, huge prompts) built from typed events."""
from __future__ import annotations

import dataclasses

from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel
from ladr_lab.trace import (
    Fetched,
    Gate,
    Judgement,
    LlmCall,
    RunEnd,
    RunStart,
    StepEnd,
    StepStart,
    Trace,
    Write,
)

RETRIEVE_GATE_WRITE = """
- id: research
  fields:
    - { name: Question, type: text, from: input.context }
  retrieve:
    to: { slate: Knowledge, folder: docs }
    as: Docs
    maxRounds: 2
    requestMatch: { type: object, required: [request], properties: { request: { type: object, properties: { files: { type: array, maxItems: 3 } } } } }
  if:
    equals: "DONE <ok>"
    then: continue
    else: continue
  slateWrite:
    to: { slate: Memory, folder: facts, file: notes.md }
    match: { type: object, required: [fact] }
    on: append
"""

SCRIPT = {"research": ['{"request": {"files": ["core.md", "missing.md"]}}',
                       '{"request": {"files": ["core.md", "faq.md"]}}',
                       '{"fact": "dedup is per step", "note": "<script>alert(1)</script>"}']}


def scripted_run(ladder, slates, **kw) -> Run:
    """A run of RETRIEVE_GATE_WRITE: two retrieval rounds (one path missing, one already in context), a forced
    final whose JSON the slateWrite takes, a gate; not started."""
    return Run(ladder(RETRIEVE_GATE_WRITE), model=ScriptedModel(SCRIPT), slates=slates, input="How <b>dedup</b>?", **kw)


def big_trace(rounds: int = 1000, nodes: int = 5, per_node: int = 10, prompt_chars: int = 4000,
              huge_every: int = 100, huge_chars: int = 400_000) -> Trace:
    """A recorded-looking trace of `rounds` model calls: steps of `nodes` nodes × `per_node` rounds, looping
    (iterations) until `rounds` calls; every `huge_every`-th round's prompt holds a `huge_chars` retrieved block."""
    t = Trace()
    seq = 0

    def add(e):
        nonlocal seq
        t.events.append(dataclasses.replace(e, seq=seq, t=seq * 0.01))
        seq += 1

    add(RunStart(ladder="big", model="script", inputs={"context": "q"}, budget={}))
    made, iteration = 0, 0
    system = "You are a careful researcher. " * 20
    field = "FileIndex:\n" + ("- notes/file-0000.md (1,234 bytes)\n" * (prompt_chars // 36))
    while made < rounds:
        iteration += 1
        add(StepStart(step="research", step_type="normal", nodes=nodes, iteration=iteration))
        for node in range(1, nodes + 1):
            for r in range(1, per_node + 1):
                if made >= rounds:
                    break
                made += 1
                block = ("Docs 1:\n--- notes/big.md [files] ---\n" + "lorem ipsum " * (huge_chars // 12)
                         if made % huge_every == 0 else "Docs 1:\n--- notes/a.md [files] ---\nshort")
                user = field + "\n\n" + block
                final = r == per_node
                add(LlmCall(step="research", node=node, round=r, iteration=iteration,
                            messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
                            output="The answer." if final else '{"request": {"files": ["notes/a.md"]}}',
                            forced_final=False, request_match="final" if final else "retrieval", model="script",
                            tokens_in=len(user) // 4, tokens_out=8, cost=0.0001, latency=0.01,
                            reason="JSON found (strict) and it matches requestMatch (wrapped form)",
                            request=None if final else {"files": ["notes/a.md"]},
                            top_k=None, fetched=None if final else (Fetched(path="notes/a.md", mode="files",
                                                                            status="fetched", chars=5),),
                            verdict=Judgement(test="requestMatch", matched=not final), provenance="scripted",
                            sections=[["field", "FileIndex", len(field)], ["retrieved", "Docs 1", len(block)]]))
            add(Gate(step="research", node=node, condition="equals", matched=True, branch="then", action="continue",
                     jump=None, reason="output equals 'The answer.'"))
            add(Write(step="research", node=node, mechanism="slateWrite", target="Memory/facts/notes.md",
                      policy="append", status="skipped", reason="no JSON found in the output"))
        add(StepEnd(step="research", survivors=nodes, nodes=nodes, jump=None, iteration=iteration))
    add(RunEnd(status="completed", output="The answer.", error=None, llm_calls=made, steps=iteration))
    return t


def walk(widget):
    """Every widget below (and including) `widget`, depth first, through `children`."""
    yield widget
    for child in getattr(widget, "children", ()) or ():
        yield from walk(child)


def with_class(widget, cls: str) -> list:
    """The widgets below `widget` that carry the CSS class `cls`."""
    return [w for w in walk(widget) if cls in getattr(w, "_dom_classes", ())]


def buttons(widget) -> dict:
    """The buttons below `widget` by description."""
    import ipywidgets
    return {w.description: w for w in walk(widget) if isinstance(w, ipywidgets.Button)}
