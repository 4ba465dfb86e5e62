"""One round's exchange with the model: the prompt going out, the verdict coming back.

`prompt.py` assembles the exact messages of a call and records each block's length (`SectionSpan`), so
`split_sections` cuts them back into named parts; `grammar.py` reads a user message back into fields and
retrieved entries (the offline model reads prompts through it); `verdict.py` judges an output as a
retrieval request, against a gate or a slateWrite's match, for the engine and for re-judging alike;
`validators.py` applies a ladder's JSON Schemas (never fetching, never hanging) and, with `verdict.py`,
is the only importer of jsonschema; `vocabulary.py` holds the request modes and entry statuses;
`records.py` the typed records a round makes (`Judgement`, `Fetched`, `PromptSection`, `SectionSpan`), which
the trace writes; `prompt.py`'s `Entry` pairs a `Fetched` with the body the model is shown.

It stands below config, models and trace and may import only errors, jsonx, display and slate, like DSPy's
Adapter (inputs to an LM call and back to structured outputs) or `mcp_types` below the MCP SDK's client
and server: the protocol's nouns below both of their users.
"""
from .grammar import ParsedEntry, ParsedPrompt, Section, norm_path, parse_prompt
from .prompt import (
    FORCED_FINAL_LINE,
    FORCED_SPAN,
    Entry,
    assemble_blocks,
    assemble_messages,
    render_block,
    render_entry,
    render_field,
    render_value,
    split_sections,
)
from .records import Fetched, Judgement, PromptSection, SectionSpan, spans
from .validators import make_validator
from .verdict import Judge, Verdict, judge, judge_equals, judge_json, schema_failure, schema_problem
from .vocabulary import MODES, STATUS_TEXT, STATUSES

__all__ = [
    "Entry",
    "FORCED_FINAL_LINE",
    "FORCED_SPAN",
    "Fetched",
    "Judge",
    "Judgement",
    "MODES",
    "ParsedEntry",
    "ParsedPrompt",
    "PromptSection",
    "STATUSES",
    "STATUS_TEXT",
    "Section",
    "SectionSpan",
    "Verdict",
    "assemble_blocks",
    "assemble_messages",
    "judge",
    "judge_equals",
    "judge_json",
    "make_validator",
    "norm_path",
    "parse_prompt",
    "render_block",
    "render_entry",
    "render_field",
    "render_value",
    "schema_failure",
    "schema_problem",
    "spans",
    "split_sections",
]
