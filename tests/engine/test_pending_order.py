"""`run.pending` is in one order, the order `run.step()` makes its calls: oldest first (round k of every node
before round k+1 of any), so `pending[0]` is always the call the next `step()` makes; `step(call=...)` and
`step(node=...)` make a chosen pending call instead, and `output=` answers the chosen one."""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ladr_lab.config import load_ladder
from ladr_lab.engine import Run
from ladr_lab.errors import RunError
from ladr_lab.models import ScriptedModel
from ladr_lab.trace import LlmCall, LlmCallFailed

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted((ROOT / "examples").glob("*.yaml"))
SCRIPTS = ROOT / "examples" / "scripts"

REQUESTS = [{"files": ["retrieve/dedup.md"]}, {"files": ["./glossary.md", "missing.md"]},
            {"glob": "retrieve/mode-*.md"}, {"subfolders": ["gates"]},
            {"metatag": {"name": "tags", "contains": "dedup"}}, {"metatag": {"name": "embedding", "similarTo": "dedup"}},
            {"files": ["writes/policy-append.md"], "glob": "pitfalls/*.md"}]
JSONS = [{"score": 5, "verdict": "accept", "claim": "c", "reason": "r"}, {"score": 2, "verdict": "reject"},
         {"fact": "dedup is per step", "confidence": 0.9, "tags": ["dedup"]},
         {"facts": [{"fact": "f", "confidence": 0.8}]}, {"name": "dedup", "kind": "concept", "summary": "s"},
         {"verified": True, "answer": "yes"}, {"answer": "a", "sources": ["retrieve/dedup.md"]}]


def _request_text(req: dict, fenced: bool) -> str:
    text = json.dumps({"request": req})
    return f"```json\n{text}\n```" if fenced else text


OUTPUTS = st.one_of(
    st.builds(_request_text, st.sampled_from(REQUESTS), st.booleans()),            # requests that match
    st.sampled_from(JSONS).map(json.dumps),                                        # JSON answers
    st.sampled_from(["DONE", "I could not find it.", "accept", ""]),                 # prose
    st.text(max_size=30),
)


def _who(x) -> tuple:
    """What tells one model call from another: step, node, round, iteration, callers and depth."""
    info = getattr(x, "info", x)
    return (info.step, info.node, info.round, info.iteration or 1, tuple(info.caller), info.depth)


def _made(events) -> tuple:
    """The one model call a `step()` made (its LlmCall, or its LlmCallFailed when the model failed)."""
    calls = [e for e in events if isinstance(e, (LlmCall, LlmCallFailed))]
    assert len(calls) == 1, f"one step made {len(calls)} model calls"
    return _who(calls[0])


@pytest.fixture(scope="module")
def slate_copies(tmp_path_factory) -> Path:
    """A copy of the sample slates (ladders that write append to it; the repository's stay clean)."""
    root = tmp_path_factory.mktemp("slates")
    shutil.copytree(ROOT / "sample_slates", root / "sample_slates")
    return root / "sample_slates"


def _run(path: Path, slates: Path, model, memory: Path) -> Run:
    ladder = load_ladder(path)
    binds = {d.title: (memory if d.title == "Memory" else slates / Path(str(d.path)).name) for d in ladder.slates}
    return Run(ladder, model=model, input="Dedup is per step execution.", slates=binds)


@pytest.mark.parametrize("path", EXAMPLES, ids=[p.stem for p in EXAMPLES])
@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture,
                                                               HealthCheck.too_slow])
@given(data=st.data())
def test_the_call_step_makes_is_pending_0_read_just_before(path, slate_copies, data):
    with tempfile.TemporaryDirectory() as tmp:
        memory = Path(tmp) / "memory"
        shutil.copytree(slate_copies / "memory", memory)
        run = _run(path, slate_copies, ScriptedModel(lambda messages, **h: data.draw(OUTPUTS, label="output")), memory)
        for _ in range(60):
            if run.done:
                break
            pending = run.pending
            assert pending == sorted(pending, key=lambda r: r.id)         # one order: oldest first
            how = data.draw(st.sampled_from(["step", "fork", "choose", "node"]), label="how")
            if how == "step":
                assert _made(run.step()) == _who(pending[0])
            elif how == "fork":
                assert _made(run.step(output=data.draw(OUTPUTS, label="typed"))) == _who(pending[0])
            elif how == "choose":
                chosen = data.draw(st.sampled_from(pending), label="chosen")
                assert _made(run.step(call=chosen)) == _who(chosen)
            else:
                node = data.draw(st.sampled_from(sorted({r.node for r in pending})), label="node")
                first = next(r for r in pending if r.node == node)
                assert _made(run.step(node=node, output="typed for this node")) == _who(first)
        assert run.done
        assert run.pending == []


def test_after_one_step_of_three_verifiers_pending_0_is_the_call_step_makes(slate_copies, tmp_path):
    # the issue's case: after node 1's round 1, node 2's round 1 is older than node 1's round 2
    shutil.copytree(slate_copies / "memory", tmp_path / "memory")
    model = ScriptedModel.from_file(SCRIPTS / "gated_verifiers.yaml")
    run = _run(ROOT / "examples" / "gated_verifiers.yaml", slate_copies, model, tmp_path / "memory")
    run.step()
    assert [(r.node, r.round) for r in run.pending] == [(2, 1), (3, 1), (1, 2)]
    assert _made(run.step()) == ("verify", 2, 1, 1, (), 0)
    assert "node 3 round 1" in repr(run)


def test_an_answer_by_hand_goes_to_the_call_chosen(slate_copies, tmp_path):
    shutil.copytree(slate_copies / "memory", tmp_path / "memory")
    model = ScriptedModel.from_file(SCRIPTS / "gated_verifiers.yaml")
    run = _run(ROOT / "examples" / "gated_verifiers.yaml", slate_copies, model, tmp_path / "memory")
    run.step()
    node1 = next(r for r in run.pending if r.node == 1)
    typed = '{"score": 5, "verdict": "accept", "claim": "c", "reason": "typed under node 1"}'
    run.step(call=node1, output=typed)
    last = run.trace.calls()[-1]
    assert (last.node, last.round, last.output, last.provenance) == (1, 2, typed, "edited")
    with pytest.raises(RunError, match="not pending"):
        run.step(call=node1)                          # answered already
    with pytest.raises(RunError, match=r"no pending call of node 7 \(pending: verify node 2 round 1, verify node 3"):
        run.step(node=7)
    with pytest.raises(RunError, match="either call= or node="):
        run.step(call=run.pending[0], node=2)
