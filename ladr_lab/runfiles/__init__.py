"""Run files (seed 004): the per-agent `.history` and `.log` files a ladder run writes, and searching them.

- RunFilesWriter — a trace listener writing `<agent>.history` and `<agent>.log` in AgentRecordFormat
- RecordParser, AgentRecord (also named Record), parse_file — a file's text back into records (history, log, preamble)
- agent_name, encode_name — the one-to-one, readable file names of agents
- RecordInterpreter, LadrInterpreter, Reading — what a record means: note, told, said or left out
- Masker, PathRedactor, CredentialRedactor — hiding local paths outside the run folder and credentials (with
  gitleaks' rule set, vendored in `rules/`)
- RunFileIndex — the incremental SQLite FTS5 index of one agent's files
- cache_dir, cached_index_path, prune_cache — where `ladr-lab search` keeps an index between calls, kept bounded
- RunFileRetriever, Scope, Piece, SearchResult — seed 004's search; RunFileSource — the same as a step's source
- search_run_files — one search as a pandas DataFrame
"""
from .cache import CACHE_ENV, Pruned, cache_dir, cached_index_path, prune_cache
from .index import MAX_PIECE_CHARS, RefreshStats, RunFileIndex
from .masking import MASKED_PATH, MASKED_SECRET, CredentialRedactor, Masker, PathRedactor
from .names import agent_name, decode_name, encode_name, split_agent_name
from .readings import LadrInterpreter, Reading, RecordInterpreter
from .records import (
    CONTINUATION_INDENT,
    NO_CONVERSATION,
    TIMESTAMP_FORMAT,
    AgentRecord,
    Record,
    RecordParser,
    format_record,
    format_timestamp,
    parse_file,
    parse_record_line,
)
from .retriever import (
    Piece,
    RunFileRetriever,
    RunFileSource,
    Scope,
    SearchResult,
    parse_episode,
    resolve_owner,
    search_run_files,
)
from .writer import (
    FINISHED,
    HISTORY_SUFFIX,
    LOG_SUFFIX,
    RUNNING,
    RunFilesWriter,
    conversation_id,
    last_episode,
    new_run_id,
)

__all__ = [
    "AgentRecord",
    "CACHE_ENV",
    "CONTINUATION_INDENT",
    "CredentialRedactor",
    "FINISHED",
    "HISTORY_SUFFIX",
    "LOG_SUFFIX",
    "LadrInterpreter",
    "MASKED_PATH",
    "MASKED_SECRET",
    "MAX_PIECE_CHARS",
    "Masker",
    "NO_CONVERSATION",
    "PathRedactor",
    "Piece",
    "Pruned",
    "RUNNING",
    "Reading",
    "Record",
    "RecordInterpreter",
    "RecordParser",
    "RefreshStats",
    "RunFileIndex",
    "RunFileRetriever",
    "RunFileSource",
    "RunFilesWriter",
    "Scope",
    "SearchResult",
    "TIMESTAMP_FORMAT",
    "agent_name",
    "cache_dir",
    "cached_index_path",
    "conversation_id",
    "decode_name",
    "encode_name",
    "format_record",
    "format_timestamp",
    "last_episode",
    "new_run_id",
    "parse_episode",
    "parse_file",
    "parse_record_line",
    "prune_cache",
    "resolve_owner",
    "search_run_files",
    "split_agent_name",
]
