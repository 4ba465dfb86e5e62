"""Run files (seed 004): the per-agent `.history` and `.log` files a ladder run writes, and reading them back.

- RunFilesWriter — a trace listener writing `<agent>.history` and `<agent>.log` in AgentRecordFormat
- RecordParser, Record, parse_file — a file's text back into records (history, log, preamble)
- format_record — one record as it is written (multi-line messages indented by two spaces)
- agent_name, safe_agent_name, conversation_id — the names the writer gives agents and conversations
"""
from ladr_lab.runfiles.records import (
    CONTINUATION_INDENT,
    NO_CONVERSATION,
    TIMESTAMP_FORMAT,
    Record,
    RecordParser,
    format_record,
    format_timestamp,
    parse_file,
    parse_record_line,
)
from ladr_lab.runfiles.writer import (
    FINISHED,
    HISTORY_SUFFIX,
    LOG_SUFFIX,
    RUNNING,
    RunFilesWriter,
    agent_name,
    conversation_id,
    safe_agent_name,
)

__all__ = [
    "CONTINUATION_INDENT",
    "FINISHED",
    "HISTORY_SUFFIX",
    "LOG_SUFFIX",
    "NO_CONVERSATION",
    "RUNNING",
    "Record",
    "RecordParser",
    "RunFilesWriter",
    "TIMESTAMP_FORMAT",
    "agent_name",
    "conversation_id",
    "format_record",
    "format_timestamp",
    "parse_file",
    "parse_record_line",
    "safe_agent_name",
]
