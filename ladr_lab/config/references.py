"""Cross-references: slates, folders, files and metatags a step names; `from:` sources; steps and jumps."""
from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from ..errors import ConfigError, short_repr, short_text
from ..slate import SYSTEM_METATAGS
from ..slate.metatags import FOLDER_LEVEL
from .model import NODE_REFS
from .rules import Doc, Site, problem, rule, suggest, typename, whole
from .shape import unsafe_name


def ref_problems(doc: Doc, what: str, raw: dict, *, reading: bool) -> list[ConfigError]:
    """The problems of a {slate, folder[, file, metatag]} reference, stopping at the first that the rest need."""
    slate, folder = raw.get("slate"), raw.get("folder")
    if not isinstance(slate, str) or not slate:
        return [problem(f"{what} needs a slate", rule="ref-incomplete")]
    decl = doc.slates.get(slate)
    if decl is None:
        return [problem(f'{what} references non-existent slate "{slate}"', at=("slate",), rule="unknown-slate",
                        suggestion=suggest(slate, doc.slates))]
    if not isinstance(folder, str) or not folder:
        return [problem(f'{what} needs a folder in slate "{slate}"', rule="ref-incomplete")]
    fspec = decl.folder(folder.strip("/"))
    if fspec is None:
        return [problem(f'{what} references non-existent folder "{folder}" in slate "{slate}"', at=("folder",),
                        rule="unknown-folder", suggestion=suggest(folder, [f.name for f in decl.folders]))]
    if not reading:
        return []
    file, metatag = raw.get("file"), raw.get("metatag")
    out = []
    if file is not None and not isinstance(file, str):
        out.append(problem(f"{what} file must be a string (got {typename(file)})", at=("file",), rule="wrong-type"))
    elif file is not None and file not in fspec.files:
        out.append(problem(f'{what} references undeclared file "{file}" in folder "{folder}" of slate "{slate}"',
                           at=("file",), rule="unknown-file", suggestion=suggest(file, fspec.files)))
    if metatag is not None and not isinstance(metatag, str):
        out.append(problem(f"{what} metatag must be a string (got {typename(metatag)})", at=("metatag",),
                           rule="wrong-type"))
    if out or metatag is None:
        return out
    if metatag in FOLDER_LEVEL and file is not None:
        return [problem(f'{what} reads metatag "{metatag}" of file "{file}", but {metatag} is folder-level; '
                        "drop file:", at=("file",), rule="folder-level-metatag")]
    if metatag in SYSTEM_METATAGS:
        return []
    if file is not None:
        schema = fspec.effective_schema(file)
        if metatag not in schema:
            return [problem(f'{what} references undeclared metatag "{metatag}" on file "{file}"', at=("metatag",),
                            rule="unknown-metatag", suggestion=suggest(metatag, schema))]
        return []
    names = set(fspec.metatags)
    for extra in fspec.files.values():
        names |= set(extra)
    if metatag not in names:
        return [problem(f'{what} references undeclared metatag "{metatag}" in folder "{folder}"', at=("metatag",),
                        rule="unknown-metatag", suggestion=suggest(metatag, sorted(names)))]
    return []


# ---- slateRead fields ------------------------------------------------------------------------------------
@rule("slate-read", "unknown-slate")
def _slate_read_ref(site: Site) -> Iterator[ConfigError]:
    yield from ref_problems(site.doc, site.what, site.raw, reading=True)


@rule("slate-read", "depth-value")
def _slate_read_depth(site: Site) -> Iterator[ConfigError]:
    depth = site.raw.get("depth")
    if depth is not None and not whole(depth) and not ref_problems(site.doc, site.what, site.raw, reading=True):
        yield problem(f"{site.what} depth must be a whole number >= 1", at=("depth",))


# ---- from: sources ---------------------------------------------------------------------------------------
@rule("source", "source-form")
def _source_form(site: Site) -> Iterator[ConfigError]:
    raw = site.raw
    if isinstance(raw, (str, int, float)) and not isinstance(raw, bool):
        return
    if not isinstance(raw, dict):
        yield problem(f"{site.what} has an invalid from: (got {typename(raw)}); use previous, output, a literal "
                      "string, {stepId: ...} or {slate: ..., folder: ..., file: ...}")
    elif "stepId" not in raw and "slate" not in raw:
        yield problem(f"{site.what} has an invalid from: mapping; it needs stepId or slate",
                      suggestion=suggest(next(iter(raw), ""), ("stepId", "slate")))


_DOTTED = re.compile(r"[A-Za-z_]\w*(\.\w+)+")
_REF_HEADS = ("previous", "output", "input", "knobs", "step", "steps", "node", "nodes")


@rule("source", "source-form")
def _literal_like_a_ref(site: Site) -> Iterator[ConfigError]:
    # seed 003's sources are previous, output, a literal, {stepId} or {slate} (and input.NAME where inputs are
    # read): "previous.output" is a literal, rendered as those words, which is never what its author meant
    raw = site.raw
    if not isinstance(raw, str) or not _DOTTED.fullmatch(raw.strip()):
        return
    head = raw.strip().split(".", 1)[0]
    if head not in _REF_HEADS or (head == "input" and site.inputs):
        return
    hint = {"previous": "previous", "output": "output", "knobs": "{{" + raw.strip() + "}}"}.get(head)
    if head == "input":
        why = "input.NAME is read only by a text field or call.input"
    else:
        why = "no source is spelled with a dot (previous, output, {stepId: ...}, {slate: ...})"
    yield problem(f'{site.what} from: "{raw}" is not a source: it would be written as that literal text ({why})',
                  severity="warning", suggestion=hint)


def _step_ref(site: Site) -> dict | None:
    return site.raw if isinstance(site.raw, dict) and "stepId" in site.raw else None


def _slate_ref(site: Site) -> dict | None:
    raw = site.raw
    return raw if isinstance(raw, dict) and "stepId" not in raw and "slate" in raw else None


@rule("source", "node-ref")
def _node_ref(site: Site) -> Iterator[ConfigError]:
    ref = (_step_ref(site) or {}).get("nodeRef")
    if ref is not None and ref not in NODE_REFS:
        yield problem(f'{site.what} has nodeRef "{short_text(ref)}"; use one of ' + ", ".join(NODE_REFS), at=("nodeRef",),
                      suggestion=suggest(ref, NODE_REFS))


@rule("source", "node-number")
def _node_number(site: Site) -> Iterator[ConfigError]:
    node = (_step_ref(site) or {}).get("node")
    if node is not None and not whole(node):
        yield problem(f"{site.what} node must be a whole number >= 1 (got {short_repr(node)})", at=("node",))


@rule("source", "node-ref-conflict")
def _node_ref_conflict(site: Site) -> Iterator[ConfigError]:
    raw = _step_ref(site) or {}
    if raw.get("nodeRef") in NODE_REFS and whole(raw.get("node")):
        yield problem(f"{site.what} takes nodeRef or node, not both")


@rule("source", "unknown-step")
def _unknown_step(site: Site) -> Iterator[ConfigError]:
    raw = _step_ref(site)
    if raw is not None and str(raw["stepId"]) not in site.doc.steps:
        yield problem(f'{site.what} references unknown step "{raw["stepId"]}"', at=("stepId",),
                      suggestion=suggest(raw["stepId"], list(site.doc.steps)))


@rule("source", "unknown-slate")
def _source_slate_ref(site: Site) -> Iterator[ConfigError]:
    raw = _slate_ref(site)
    if raw is not None:
        yield from ref_problems(site.doc, site.what, raw, reading=True)


@rule("source", "whole-folder-read")
def _whole_folder(site: Site) -> Iterator[ConfigError]:
    raw = _slate_ref(site)
    if raw is not None and raw.get("file") is None and raw.get("metatag") is None \
            and not ref_problems(site.doc, site.what, raw, reading=True):
        yield problem(f"{site.what} reads a whole folder; name a file or a metatag (e.g. metatag: index)")


@rule("source", "depth-value")
def _source_depth(site: Site) -> Iterator[ConfigError]:
    raw = _slate_ref(site)
    depth = (raw or {}).get("depth")
    if depth is not None and not whole(depth) and not ref_problems(site.doc, site.what, raw or {}, reading=True):
        yield problem(f"{site.what} depth must be a whole number >= 1 (got {short_repr(depth)})", at=("depth",))


@rule("source", "previous-after-group")
def _previous_after_group(site: Site) -> Iterator[ConfigError]:
    group = site.step.after_group if site.step else None
    if site.raw == "previous" and group is not None:
        yield problem(f'{site.what} uses from: previous right after group step "{group}", which is ambiguous; '
                      "name a stepId instead")


# ---- write targets ---------------------------------------------------------------------------------------
@rule("target", "write-target")
def _target(site: Site) -> Iterator[ConfigError]:
    raw, what = site.raw, site.what
    if not isinstance(raw, dict):
        yield problem(f"{what}.to must be {{slate, folder, file | metatag}}")
        return
    refs = ref_problems(site.doc, f"{what}.to", raw, reading=False)
    if refs:
        yield from refs
        return
    file, metatag = raw.get("file"), raw.get("metatag")
    if file is not None and unsafe_name(file):
        yield problem(f'{what}.to.file "{file}" is not allowed: a file must stay inside its folder '
                      '(no "..", no absolute path, no hidden names)', at=("file",), rule="unsafe-name")
    elif file is None and metatag is None:
        yield problem(f"{what}.to needs a file (or a file and a metatag)")
    elif metatag is not None and file is None:
        yield problem(f"{what}.to.metatag needs a file too")
    elif metatag is not None and not isinstance(metatag, str):
        yield problem(f"{what}.to.metatag must be a string (got {typename(metatag)})", at=("metatag",),
                      rule="wrong-type")
    elif metatag is not None:
        fspec = site.doc.slates[raw["slate"]].folder(raw["folder"].strip("/"))
        schema = fspec.effective_schema(str(file)) if fspec else {}
        if metatag in SYSTEM_METATAGS:
            yield problem(f'{what}.to.metatag "{metatag}" is a system metatag and cannot be written',
                          at=("metatag",), rule="system-metatag-write")
        elif metatag not in schema:
            yield problem(f'{what}.to references undeclared metatag "{metatag}" on file "{file}"', at=("metatag",),
                          rule="unknown-metatag", suggestion=suggest(metatag, schema))


# ---- jumps -----------------------------------------------------------------------------------------------
def jump_target(raw: Any) -> str | None:
    """The step a gate branch's `jump:` names (`{stepId: X}` or `X`), or None when it is malformed."""
    if isinstance(raw, dict) and isinstance(raw.get("stepId"), str):
        return raw["stepId"]
    if isinstance(raw, str):
        return raw
    return None


def _jump(site: Site) -> str | None:
    return jump_target(site.raw.get("jump")) if isinstance(site.raw, dict) else None


@rule("action", "unknown-jump-target")
def _unknown_jump(site: Site) -> Iterator[ConfigError]:
    target = _jump(site)
    if target is not None and target not in site.doc.steps:
        yield problem(f'if.{site.branch} jumps to unknown step "{target}"', at=("jump",),
                      suggestion=suggest(target, list(site.doc.steps)))


@rule("action", "jump-in-group")
def _jump_in_group(site: Site) -> Iterator[ConfigError]:
    target = _jump(site)
    if target is not None and site.step is not None and site.step.group is not None:
        yield problem(f'if.{site.branch} jumps to "{target}" from inside group "{site.step.group}"; a step inside '
                      "a group cannot jump (put the gate on a step after the group)", at=("jump",))


@rule("action", "jump-into-group")
def _jump_into_group(site: Site) -> Iterator[ConfigError]:
    target = _jump(site)
    scope = site.doc.steps.get(target) if target is not None else None
    if scope is not None and scope.group is not None:
        yield problem(f'if.{site.branch} jumps to step "{target}" inside group "{scope.group}"; jump targets must '
                      "be top-level steps", at=("jump",))

__all__ = ["jump_target", "ref_problems"]
