"""Lint rule `listing-hides-files`: a retrieve step whose listing fields (`index`, `tree` with a depth) show the
model no file name while every file sits in a subfolder, and whose requestMatch lets it browse no other way.

It reads the slate on disk as the run would bind it (`ladder.base_dir / slate.path`, or a `slates=` override),
so it is a pass over the loaded ladder rather than a config rule (those cannot see the disk).
"""
from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from ..config.model import FieldSpec, Ladder, Step
from ..round.verdict import judge
from ..slate.embed import Embedder
from ..slate.folder import Folder
from ..slate.metatags import FOLDER_LEVEL
from ..slate.spec import FolderSpec

# the requests a model could use to browse past a listing that shows only subfolders
BROWSE_SAMPLES = ('{"request": {"subfolders": ["x"]}}', '{"subfolders": ["x"]}',
                  '{"request": {"glob": "**/*"}}', '{"glob": "**/*"}',
                  '{"request": {"metatag": "tree"}}', '{"metatag": "tree"}')


def _no_embedder() -> Embedder:
    # listings never embed; reaching here would be a bug, not a learner's mistake
    raise RuntimeError("lint reads listings only")


def _root(ladder: Ladder, title: str, slates: Mapping[str, str | os.PathLike]) -> Path | None:
    if title in slates:
        return Path(slates[title])
    decl = next((d for d in ladder.slates if d.title == title), None)
    if decl is None or decl.path is None or ladder.base_dir is None:
        return None
    return Path(ladder.base_dir) / decl.path


def _shown_files(entries: list, prefix: str = "") -> list[str]:
    out: list[str] = []
    for e in entries:
        name = str(e.get("name", ""))
        if name.endswith("/"):
            out += _shown_files(list(e.get("children", ())), prefix + name)
        else:
            out.append(prefix + name)
    return out


def _listing_fields(step: Step, slate: str, folder: str) -> list[FieldSpec]:
    return [f for f in step.fields if f.source is not None and f.source.kind == "slate"
            and f.source.slate == slate and f.source.folder == folder and f.source.metatag in FOLDER_LEVEL]


def hidden_listings(ladder: Ladder, slates: Mapping[str, str | os.PathLike] | None = None) -> list[dict]:
    """One dict per retrieve step whose listings show no file of a folder that has some: step, fields, message
    and fix (`lint` turns them into `listing-hides-files` findings)."""
    out: list[dict] = []
    for step in ladder.all_steps():
        r = step.retrieve
        if r is None:
            continue
        fields = _listing_fields(step, r.slate, r.folder)
        root = _root(ladder, r.slate, slates or {})
        if not fields or root is None or not (root / r.folder).is_dir():
            continue     # no listing field: another rule says so; no slate on disk: nothing to judge
        decl = next((d for d in ladder.slates if d.title == r.slate), None)
        spec = (decl.folder(r.folder) if decl else None) or FolderSpec(r.folder)
        folder = Folder(spec, root / r.folder, _no_embedder, watch=False)
        if not folder.files():
            continue
        shown: list[str] = []
        subs: set[str] = set()
        for f in fields:
            src = f.source
            assert src is not None
            entries = list(folder.index() or []) if src.metatag == "index" else folder.tree(src.depth)
            shown += _shown_files(entries)
            subs |= {str(e["name"]) for e in entries if str(e.get("name", "")).endswith("/")}
        if shown or any(judge(s, r.request_match).is_request for s in BROWSE_SAMPLES):
            continue
        names = ", ".join(f.name for f in fields)
        kinds = " and ".join(sorted({str(f.source.metatag) for f in fields if f.source}))
        listed = ", ".join(sorted(subs))
        out.append({"step": step, "fields": fields,
                    "message": f"the listing field(s) {names} show the model no file it could ask for: {kinds} "
                               f"shows only subfolders {listed} and no file, and requestMatch accepts no "
                               "subfolders, glob or metatag request to browse them",
                    "fix": f"add a FolderTree field: {{ type: slateRead, from: {{slate: {r.slate}, folder: "
                           f"{r.folder}, metatag: tree, depth: 2}} }}, or accept subfolders in requestMatch"})
    return out


__all__ = ["hidden_listings"]
