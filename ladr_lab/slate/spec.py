"""What a ladder declares for one slate folder: its metatag schema and its declared files.

A slate concept, not a ladder one: the slate package is usable without ladders, so the declaration
lives here, below `config`, which builds FolderSpecs from YAML (see docs/ARCHITECTURE.md).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["FolderSpec"]


@dataclass(frozen=True)
class FolderSpec:
    """What a ladder declares for one folder: its metatags and its declared files' own metatags."""

    name: str
    metatags: dict[str, str] = field(default_factory=dict)
    files: dict[str, dict[str, str]] = field(default_factory=dict)

    def effective_schema(self, rel: str | os.PathLike[str]) -> dict[str, str]:
        """The metatags a file may carry: the folder's, plus (overriding) the file's own."""
        own = self.files.get(os.fspath(rel))
        return {**self.metatags, **own} if own else dict(self.metatags)

    @classmethod
    def from_config(cls, data: Mapping[str, Any]) -> FolderSpec:
        """Build from the ladder's YAML shape: `{name, metatags?, files?: [{name, metatags?}]}`."""
        files: dict[str, dict[str, str]] = {}
        raw_files = data.get("files") or []
        if isinstance(raw_files, Mapping):
            raw_files = [{"name": k, "metatags": v} for k, v in raw_files.items()]
        for item in raw_files:
            if isinstance(item, str):
                files[item] = {}
            else:
                files[str(item["name"])] = dict(item.get("metatags") or {})
        return cls(name=str(data["name"]), metatags=dict(data.get("metatags") or {}), files=files)
