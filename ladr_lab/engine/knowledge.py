"""Knowledge sources bound to a step at run time (seed 004's "undeclared binding"; SPEC §8).

A source is not declared in the ladder: the run binds it to a step by the step's id, e.g. a
`runfiles.RunFileSource` over a run folder, so a ladder can learn from its own past runs. For each node
the source's evidence for the step's question (the node's rendered fields) becomes one more prompt
field, named by the source, after the declared fields.

Which records are evidence follows seed 004: when the run writes its own run files into the source's
folder, the request's episode and conversation are the ones the run is writing now (so what this run
already said in another conversation of this episode is not shown); otherwise the run is, for the
search, a new episode with no records yet (episode 0, conversation `-`), and every record of the
folder's past runs is evidence (`Scope.RUN`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol, runtime_checkable

__all__ = ["KnowledgeSource", "request_context"]


@runtime_checkable
class KnowledgeSource(Protocol):
    """Anything that gives prompt text of evidence for a question (`runfiles.RunFileSource` is one)."""

    name: str

    def evidence(self, question: str, *, episode: int | str | None = None, conversation: str | None = None) -> str:
        """The evidence for `question` as prompt text."""
        ...


def request_context(source: Any, writer: Any, step: str, node: int, caller: tuple[str, ...]) -> tuple[int, str]:
    """The (episode, conversation) a source's search runs in for this node (see the module docstring)."""
    folder = getattr(getattr(source, "retriever", None), "run_dir", None)
    written = getattr(writer, "run_dir", None)
    if writer is not None and folder is not None and written is not None \
            and Path(folder).resolve() == Path(written).resolve():
        episode, conversation = writer.current(step, node, caller=caller)
        return (episode if episode is not None else 0), conversation
    return 0, "-"
