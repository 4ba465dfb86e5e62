"""The words a round's request and its answer are made of, defined once: the retrieval modes a request may
name (in the order they are fetched, SPEC §3) and the status of each retrieved entry, with the words the
model reads for the statuses that have no content."""
from __future__ import annotations

__all__ = ["MODES", "STATUSES", "STATUS_TEXT"]

MODES = ("files", "subfolders", "metatag", "glob", "similarTo")
STATUSES = ("fetched", "not_found", "already_in_context", "listed", "no_match", "left_out")
STATUS_TEXT = {"not_found": "(not found)", "already_in_context": "(already in context)", "no_match": "(no match)",
               "left_out": "(left out)"}
