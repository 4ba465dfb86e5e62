"""rejudge: a ladder that has none of the trace's steps is an error, not an empty table."""
from __future__ import annotations

import pytest

from ladr_lab.config import load_ladder_text

LADDER = """\
name: cols
model: offline
steps:
  - id: s
    fields:
      - { name: Question, type: text, from: input.context }
      - { name: Tone, type: text, from: input.tone }
"""


def test_rejudge_rows_raises_when_the_ladder_has_none_of_the_traces_steps(tmp_path):
    from ladr_lab.analysis.rejudge import NoStepsInCommon, rejudge_rows
    from ladr_lab.engine import Run
    lad = load_ladder_text(LADDER)
    run = Run(lad, inputs={"context": "q", "tone": "t"}, trace_out=tmp_path / "t.jsonl")
    run.run()
    run.trace.close()
    with pytest.raises(NoStepsInCommon, match="the trace has s; the ladder has other"):
        rejudge_rows(tmp_path / "t.jsonl", load_ladder_text(LADDER.replace("id: s", "id: other")))
    assert rejudge_rows(tmp_path / "t.jsonl", lad) is not None  # the same ladder re-judges fine
