"""The event stream of a reference run, pinned whole: any change to what the engine emits (a field, its
order, an event) shows up here as a reviewed diff (as sqlite-utils' tracer tests pin their queries)."""
from __future__ import annotations

import hashlib
import json

from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel
from ladr_lab.trace import Event, load_trace

REFERENCE = """
- id: research
  nodes: 2
  fields:
    - { name: Question, type: text, from: input.context }
  retrieve:
    to: { slate: Knowledge, folder: docs }
    as: Docs
    maxRounds: 1
    requestMatch: { type: object, required: [request] }
  if:
    jsonMatches: { type: object, required: [answer] }
    then: continue
    else: prune
  slateWrite: { to: { slate: Memory, folder: facts, file: core.md }, on: append, match: { type: object },
                field: answer }
- id: wrap
  fields: [{ name: All, type: multi_ingest, from: previous }]
"""

SCRIPT = {
    "research/1": ['{"request": {"files": ["core.md", "./core.md", "nope.md"]}}', '{"answer": "A1"}'],
    "research/2": ["no json here"],
    "wrap": ["final"],
}


def digest(messages: list) -> list:
    return [[m["role"], len(m["content"]), hashlib.sha1(m["content"].encode()).hexdigest()[:10]] for m in messages]


def normalized(events) -> list[dict]:
    out = []
    for e in events:
        d = e.to_dict()
        for volatile in ("t", "latency", "run_id", "started_at"):
            d.pop(volatile, None)
        if "messages" in d:
            d["messages"] = digest(d["messages"])
        out.append(d)
    return out


def reference_run(ladder, slates, tmp_path):
    run = Run(ladder(REFERENCE), model=ScriptedModel(SCRIPT), slates=slates, input="What is core?",
              trace_out=tmp_path / "ref.jsonl")
    run.run()
    return run


PINNED = [{'type': 'run_start',
  'seq': 0,
  'ladder': 't',
  'model': 'script',
  'inputs': {'context': 'What is core?'},
  'budget': {'maxLlmCalls': None, 'maxSteps': None}},
 {'type': 'step_start', 'seq': 1, 'step': 'research', 'step_type': 'normal', 'nodes': 2, 'iteration': 1},
 {'type': 'llm_call',
  'seq': 2,
  'step': 'research',
  'node': 1,
  'round': 1,
  'iteration': 1,
  'messages': [['system', 0, 'da39a3ee5e'], ['user', 23, '264adc00c6']],
  'output': '{"request": {"files": ["core.md", "./core.md", "nope.md"]}}',
  'forced_final': False,
  'request_match': 'retrieval',
  'model': 'script',
  'tokens_in': 6,
  'tokens_out': 15,
  'cost': 0.0,
  'reason': 'JSON found (strict) and it matches requestMatch (wrapped form)',
  'request': {'files': ['core.md', './core.md', 'nope.md']},
  'top_k': None,
  'fetched': [{'path': 'core.md', 'mode': 'files', 'status': 'fetched', 'chars': 45},
              {'path': 'core.md',
               'mode': 'files',
               'status': 'already_in_context',
               'chars': 0,
               'asked': './core.md'},
              {'path': 'nope.md', 'mode': 'files', 'status': 'not_found', 'chars': 0}],
  'verdict': {'test': 'requestMatch', 'matched': True, 'extraction': 'strict', 'form': 'wrapped'},
  'provenance': 'scripted',
  'sections': [['field', 'Question', 23]]},
 {'type': 'llm_call',
  'seq': 3,
  'step': 'research',
  'node': 2,
  'round': 1,
  'iteration': 1,
  'messages': [['system', 0, 'da39a3ee5e'], ['user', 23, '264adc00c6']],
  'output': 'no json here',
  'forced_final': False,
  'request_match': 'final',
  'model': 'script',
  'tokens_in': 6,
  'tokens_out': 3,
  'cost': 0.0,
  'reason': 'no JSON found in the output, so it is the final answer',
  'verdict': {'test': 'requestMatch', 'matched': False},
  'provenance': 'scripted',
  'sections': [['field', 'Question', 23]]},
 {'type': 'gate',
  'seq': 4,
  'step': 'research',
  'node': 2,
  'condition': 'jsonMatches',
  'matched': False,
  'branch': 'else',
  'action': 'prune',
  'jump': None,
  'reason': 'no JSON found in the output',
  'verdict': {'test': 'jsonMatches', 'matched': False}},
 {'type': 'llm_call',
  'seq': 5,
  'step': 'research',
  'node': 1,
  'round': 2,
  'iteration': 1,
  'messages': [['system', 0, 'da39a3ee5e'], ['user', 247, 'e4125e8957']],
  'output': '{"answer": "A1"}',
  'forced_final': True,
  'request_match': 'final',
  'model': 'script',
  'tokens_in': 62,
  'tokens_out': 4,
  'cost': 0.0,
  'reason': 'forced final call: its output is final whatever it looks like',
  'provenance': 'scripted',
  'sections': [['field', 'Question', 23], ['retrieved', 'Docs 1', 162], ['forced', 'forced final', 58]]},
 {'type': 'gate',
  'seq': 6,
  'step': 'research',
  'node': 1,
  'condition': 'jsonMatches',
  'matched': True,
  'branch': 'then',
  'action': 'continue',
  'jump': None,
  'reason': 'JSON found (strict) and it matches jsonMatches',
  'verdict': {'test': 'jsonMatches', 'matched': True, 'extraction': 'strict'}},
 {'type': 'write',
  'seq': 7,
  'step': 'research',
  'node': 1,
  'mechanism': 'slateWrite',
  'target': 'Memory/facts/core.md',
  'policy': 'append',
  'status': 'written',
  'reason': '',
  'chars': 2,
  'skipped_items': [],
  'verdict': {'test': 'match', 'matched': True, 'extraction': 'strict'}},
 {'type': 'step_end', 'seq': 8, 'step': 'research', 'survivors': 1, 'nodes': 2, 'jump': None, 'iteration': 1},
 {'type': 'step_start', 'seq': 9, 'step': 'wrap', 'step_type': 'normal', 'nodes': 1, 'iteration': 1},
 {'type': 'llm_call',
  'seq': 10,
  'step': 'wrap',
  'node': 1,
  'round': 1,
  'iteration': 1,
  'messages': [['system', 0, 'da39a3ee5e'], ['user', 21, '42a1d4673e']],
  'output': 'final',
  'forced_final': False,
  'request_match': None,
  'model': 'script',
  'tokens_in': 6,
  'tokens_out': 2,
  'cost': 0.0,
  'provenance': 'scripted',
  'sections': [['field', 'All', 21]]},
 {'type': 'step_end', 'seq': 11, 'step': 'wrap', 'survivors': 1, 'nodes': 1, 'jump': None, 'iteration': 1},
 {'type': 'run_end',
  'seq': 12,
  'status': 'completed',
  'output': 'final',
  'error': None,
  'llm_calls': 4,
  'steps': 2}]


def test_the_reference_run_emits_exactly_this_event_stream(ladder, slates, tmp_path):
    run = reference_run(ladder, slates, tmp_path)
    assert normalized(run.trace.events) == PINNED


def test_every_event_survives_jsonl_and_back_unchanged(ladder, slates, tmp_path):
    run = reference_run(ladder, slates, tmp_path)
    back = load_trace(tmp_path / "ref.jsonl")
    assert back.events == run.trace.events
    assert [type(e) for e in back] == [type(e) for e in run.trace]
    lines = (tmp_path / "ref.jsonl").read_text().splitlines()
    assert [json.loads(line) for line in lines] == [e.to_dict() for e in run.trace]
    assert [Event.from_dict(json.loads(line)).to_dict() for line in lines] == [json.loads(line) for line in lines]
