"""Query transforms through a configured model: rewrite, HyDE, multi-query and decompose.

Each asks the model one question (system + user message, `complete(messages, step="transform:NAME")`)
and reads its answer: `rewrite` -> one better search query; `hyde` -> a hypothetical passage that
would answer the query (used as the query text); `multi-query` and `decompose` -> several queries,
one per line, each recalled and then fused by reciprocal rank. Without a model, the engine answers
a transform with OptionUnsupported (strict) or a note.
"""
from __future__ import annotations

from typing import Any

from ..models.base import CallInfo

__all__ = ["MAX_QUERIES", "PROMPTS", "apply_transform"]

PROMPTS = {
    "rewrite": "Rewrite the user's search query into one clear, specific search query for a document "
               "search engine. Answer with the query only, on one line.",
    "hyde": "Write a short passage (3-5 sentences) that would answer the user's question, as it might "
            "appear in a relevant document. Answer with the passage only.",
    "multi-query": "Write 3 different search queries that together cover the user's question. "
                   "Answer with one query per line and nothing else.",
    "decompose": "Break the user's question into at most 4 simpler sub-questions that can each be searched "
                 "for on their own. Answer with one sub-question per line and nothing else.",
}
MAX_QUERIES = 5


def _lines(text: str) -> list[str]:
    out = []
    for line in text.splitlines():
        s = line.strip().lstrip("-*0123456789.) ").strip()
        if s and s not in out:
            out.append(s)
    return out[:MAX_QUERIES]


def apply_transform(model: Any, name: str, query: str) -> tuple[list[str], str]:
    """The queries to recall with after transform `name`, and the text to report as `rewrittenQuery`."""
    messages = [{"role": "system", "content": PROMPTS[name]}, {"role": "user", "content": query}]
    done = model.complete(messages, call=CallInfo(step=f"transform:{name}"))
    text = (getattr(done, "text", done) or "").strip()
    if name in ("rewrite", "hyde"):
        one = " ".join(text.split()) if name == "rewrite" else text
        return ([one] if one else [query]), (one or query)
    queries = _lines(text) or [query]
    return queries, "\n".join(queries)
