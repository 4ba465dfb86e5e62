"""Writes never lose anything: concurrent mergeByKey writers, a SIGKILLed writer process, and the engine's
own nodes writing through a loop."""
from __future__ import annotations

import importlib.util
import json
from pathlib import Path

from ladr_lab.engine import Run
from ladr_lab.models import ScriptedModel

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "write_stress.py"


def _stress_module():
    spec = importlib.util.spec_from_file_location("write_stress", BENCH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_16_writers_x_200_merge_by_key_and_a_killed_process_lose_nothing(tmp_path):
    fig = _stress_module().stress(tmp_path, nodes=16, writes=200, kill_after=60)
    assert fig["thread_writes_acknowledged"] == 3200 and fig["lost_thread_items"] == 0
    assert fig["process_writes_acknowledged"] == 60 and fig["lost_process_items"] == 0
    assert fig["child_returncode"] == -9
    assert fig["items_in_file"] >= 3260


def test_engine_nodes_merge_through_a_loop_keep_every_item(ladder, slates):
    lad = ladder("""
        - id: upsert
          nodes: 16
          fields: [{ name: N, type: nodeInfo }]
          slateWrite:
            to: { slate: Memory, folder: registry, file: entities.md }
            on: mergeByKey
            key: id
            match: { type: array }
          if: { equals: never, then: continue, else: { jump: { stepId: upsert } } }
        """, head="name: t\nexecutionBudget: { maxSteps: 12 }\n")

    def items(messages, **h):
        return json.dumps([{"id": f"n{h['node']}-it{h['iteration']}", "node": h["node"]}])
    run = Run(lad, model=ScriptedModel(items, max_concurrency=8), slates=slates)
    res = run.run()
    assert res.status == "budget_exhausted" and res.llm_calls == 16 * 12
    data = json.loads((slates["Memory"] / "registry/entities.md").read_text())
    assert len(data) == 16 * 12 == len({d["id"] for d in data})
    assert [w.status for w in run.trace.writes()] == ["written"] * (16 * 12)
