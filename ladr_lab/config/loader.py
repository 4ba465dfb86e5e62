"""Ladder document → frozen models, collecting every problem at once (see `iter_problems`)."""
from __future__ import annotations

import difflib
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..errors import ConfigError, ConfigErrors
from ..slate import METATAG_TYPES, SYSTEM_METATAGS, FolderSpec
from .model import (
    FIELD_TYPES,
    NODE_REFS,
    STEP_TYPES,
    WRITE_POLICIES,
    Action,
    Budget,
    CallSpec,
    FieldSpec,
    Gate,
    Ladder,
    Retrieve,
    SlateDecl,
    SlateWrite,
    Source,
    Step,
    Target,
    WriteSpec,
)
from .yamlpos import Positions, load_yaml

TOP_KEYS = ("name", "description", "model", "knobs", "executionBudget", "slates", "steps", "embedder")
STEP_KEYS = ("id", "type", "nodes", "fields", "systemPrompt", "retrieve", "if", "slateWrite", "steps", "call",
             "model", "description")
FIELD_KEYS = ("name", "type", "from", "value", "knob", "description")
RETRIEVE_KEYS = ("to", "as", "maxRounds", "requestMatch")
SLATEWRITE_KEYS = ("to", "field", "on", "key", "match")
GATE_KEYS = ("equals", "jsonMatches", "then", "else")
WRITE_KEYS = ("to", "from", "on", "key")
SLATE_KEYS = ("title", "path", "folders", "description")
FOLDER_KEYS = ("name", "metatags", "files", "description")
FILE_KEYS = ("name", "metatags", "description")
BUDGET_KEYS = ("maxLlmCalls", "maxSteps")
CALL_KEYS = ("ladder", "input", "maxDepth")
KNOB_RE = re.compile(r"\{\{\s*knobs\.([A-Za-z_][A-Za-z0-9_\-]*)\s*\}\}")


def suggest(name: str, choices) -> str | None:
    """The closest of `choices` to `name`, if one is close enough to be a likely typo."""
    got = difflib.get_close_matches(str(name), [str(c) for c in choices], n=1, cutoff=0.6)
    return got[0] if got else None


class _Ctx:
    """Collects problems while the loader walks the document."""

    def __init__(self, file: str | None, pos: Positions) -> None:
        self.file = file
        self.pos = pos
        self.errors: list[ConfigError] = []
        self.warnings: list[ConfigError] = []

    def add(self, msg: str, path: tuple, step: str | None = None, field: str | None = None,
            suggestion: str | None = None, key: bool = False, severity: str = "error") -> None:
        line_col = self.pos.of(path, key=key)
        if suggestion and "did you mean" not in msg:
            msg = f'{msg} (did you mean "{suggestion}"?)'
        err = ConfigError(msg, step_id=step, field=field, path=tuple(path), file=self.file,
                          line=line_col[0] if line_col else None, column=line_col[1] if line_col else None,
                          suggestion=suggestion, severity=severity)
        (self.warnings if severity == "warning" else self.errors).append(err)

    def keys(self, obj: dict, allowed, path: tuple, what: str, step: str | None = None) -> None:
        for k in obj:
            if k not in allowed:
                self.add(f"{_pfx(step)}unknown key \"{k}\" in {what}", path + (k,), step,
                         suggestion=suggest(k, allowed), key=True)


def unsafe_name(name: str) -> bool:
    """True when a declared file name could leave its folder or is hidden (such names are never written)."""
    if not isinstance(name, str) or not name or "\x00" in name or "\\" in name or name.startswith("/"):
        return True
    return any(part in ("", ".", "..") or part.startswith(".") for part in name.split("/"))


def _pfx(step: str | None) -> str:
    return f'Step "{step}": ' if step is not None else ""


def _typename(v: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "empty"}.get(type(v), type(v).__name__)


def substitute_knobs(data: Any, knobs: dict, ctx: _Ctx, path: tuple = ()) -> Any:
    """Replace `{{knobs.NAME}}` in every string; a string that is only a template keeps the knob's type."""
    if isinstance(data, dict):
        return {k: (v if k == "knobs" and not path else substitute_knobs(v, knobs, ctx, path + (k,)))
                for k, v in data.items()}
    if isinstance(data, list):
        return [substitute_knobs(v, knobs, ctx, path + (i,)) for i, v in enumerate(data)]
    if isinstance(data, str) and "{{" in data:
        whole = KNOB_RE.fullmatch(data.strip())
        if whole:
            name = whole.group(1)
            if name in knobs:
                return knobs[name]
            ctx.add(f'unknown knob "{name}"', path, suggestion=suggest(name, knobs))
            return data

        def rep(m: re.Match) -> str:
            if m.group(1) in knobs:
                return str(knobs[m.group(1)])
            ctx.add(f'unknown knob "{m.group(1)}"', path, suggestion=suggest(m.group(1), knobs))
            return m.group(0)
        return KNOB_RE.sub(rep, data)
    return data


class _Loader:
    """One pass over the raw document: builds models and records every problem in the context."""

    def __init__(self, ctx: _Ctx) -> None:
        self.ctx = ctx
        self.slates: dict[str, SlateDecl] = {}

    # ---- slates ---------------------------------------------------------------------------------------
    def slates_(self, raw: Any) -> tuple[SlateDecl, ...]:
        if raw is None:
            return ()
        if not isinstance(raw, list):
            self.ctx.add(f"slates must be a list (got {_typename(raw)})", ("slates",))
            return ()
        out = []
        for i, s in enumerate(raw):
            p = ("slates", i)
            if not isinstance(s, dict):
                self.ctx.add(f"slates[{i}] must be a mapping (got {_typename(s)})", p)
                continue
            self.ctx.keys(s, SLATE_KEYS, p, "slate")
            title = s.get("title")
            if not isinstance(title, str) or not title.strip():
                self.ctx.add(f"slates[{i}].title is required (a non-empty string)", p)
                continue
            if title in self.slates:
                self.ctx.add(f'slate "{title}" is declared twice', p + ("title",))
            folders = []
            seen: set[str] = set()
            for j, f in enumerate(s.get("folders") or []):
                fp = p + ("folders", j)
                if not isinstance(f, dict) or not isinstance(f.get("name"), str) or not f["name"].strip():
                    self.ctx.add(f'slate "{title}": folders[{j}] needs a name', fp)
                    continue
                self.ctx.keys(f, FOLDER_KEYS, fp, f'folder "{f["name"]}"')
                name = f["name"].strip("/")
                if name.startswith(".") or ".." in name.split("/") or name.startswith("/"):
                    self.ctx.add(f'slate "{title}": folder name "{name}" is not allowed', fp + ("name",))
                if name in seen:
                    self.ctx.add(f'slate "{title}": folder "{name}" is declared twice', fp + ("name",))
                seen.add(name)
                tags = self.metatag_types(f.get("metatags"), fp + ("metatags",), f'folder "{name}"')
                files: dict[str, dict[str, str]] = {}
                for k, fl in enumerate(f.get("files") or []):
                    flp = fp + ("files", k)
                    if isinstance(fl, str):
                        fl = {"name": fl}
                    if not isinstance(fl, dict) or not isinstance(fl.get("name"), str):
                        self.ctx.add(f'slate "{title}": folder "{name}" files[{k}] needs a name', flp)
                        continue
                    if unsafe_name(fl["name"]):
                        self.ctx.add(f'slate "{title}": folder "{name}" declares file "{fl["name"]}", which is not '
                                     'allowed (no "..", no absolute path, no hidden names)', flp + ("name",))
                        continue
                    self.ctx.keys(fl, FILE_KEYS, flp, f'file "{fl["name"]}"')
                    files[fl["name"]] = self.metatag_types(fl.get("metatags"), flp + ("metatags",),
                                                           f'file "{fl["name"]}"')
                folders.append(FolderSpec(name=name, metatags=tags, files=files))
            path = s.get("path")
            if path is not None and not isinstance(path, str):
                self.ctx.add(f'slate "{title}": path must be a string', p + ("path",))
                path = None
            decl = SlateDecl(title=title, path=path, folders=tuple(folders))
            self.slates[title] = decl
            out.append(decl)
        return tuple(out)

    def metatag_types(self, raw: Any, path: tuple, owner: str) -> dict[str, str]:
        if raw is None:
            return {}
        if not isinstance(raw, dict):
            self.ctx.add(f"{owner}: metatags must be a mapping of name to type", path)
            return {}
        out = {}
        for k, v in raw.items():
            if k in SYSTEM_METATAGS:
                self.ctx.add(f'{owner}: "{k}" is a system metatag and cannot be declared', path + (k,), key=True)
                continue
            if v not in METATAG_TYPES:
                self.ctx.add(f'{owner}: metatag "{k}" has unknown type "{v}"; use one of '
                             + ", ".join(METATAG_TYPES), path + (k,), suggestion=suggest(v, METATAG_TYPES))
                continue
            out[k] = v
        return out

    # ---- references -------------------------------------------------------------------------------------
    def check_ref(self, step: str, what: str, slate: Any, folder: Any, path: tuple,
                  file: Any = None, metatag: Any = None, kind: str = "read") -> bool:
        """Check a (slate, folder, file, metatag) reference; `what` is e.g. 'slateRead field "X"'."""
        if not isinstance(slate, str) or not slate:
            self.ctx.add(f'Step "{step}": {what} needs a slate', path, step)
            return False
        decl = self.slates.get(slate)
        if decl is None:
            self.ctx.add(f'Step "{step}": {what} references non-existent slate "{slate}"', path + ("slate",),
                         step, suggestion=suggest(slate, self.slates))
            return False
        if not isinstance(folder, str) or not folder:
            self.ctx.add(f'Step "{step}": {what} needs a folder in slate "{slate}"', path, step)
            return False
        fspec = decl.folder(folder.strip("/"))
        if fspec is None:
            self.ctx.add(f'Step "{step}": {what} references non-existent folder "{folder}" in slate "{slate}"',
                         path + ("folder",), step, suggestion=suggest(folder, [f.name for f in decl.folders]))
            return False
        if kind == "write":
            return True
        if file is not None and file not in fspec.files:
            self.ctx.add(f'Step "{step}": {what} references undeclared file "{file}" in folder "{folder}" '
                         f'of slate "{slate}"', path + ("file",), step, suggestion=suggest(file, fspec.files))
            return False
        if metatag is not None and metatag not in SYSTEM_METATAGS:
            if file is not None:
                schema = fspec.effective_schema(file)
                if metatag not in schema:
                    self.ctx.add(f'Step "{step}": {what} references undeclared metatag "{metatag}" on file "{file}"',
                                 path + ("metatag",), step, suggestion=suggest(metatag, schema))
                    return False
            else:
                names = set(fspec.metatags)
                for extra in fspec.files.values():
                    names |= set(extra)
                if metatag not in names:
                    self.ctx.add(f'Step "{step}": {what} references undeclared metatag "{metatag}" in folder '
                                 f'"{folder}"', path + ("metatag",), step, suggestion=suggest(metatag, names))
                    return False
        return True

    def source(self, raw: Any, path: tuple, step: str, what: str, *, allow_input: bool = True,
               prev_is_group: str | None = None) -> Source | None:
        """Parse a `from:` source spec (seed 003's vocabulary, plus `input.NAME` for text fields)."""
        if isinstance(raw, str):
            if raw == "previous":
                if prev_is_group:
                    self.ctx.add(f'Step "{step}": {what} uses from: previous right after group step '
                                 f'"{prev_is_group}", which is ambiguous; name a stepId instead', path, step)
                return Source("previous", path=path)
            if raw == "output":
                return Source("output", path=path)
            if allow_input and (raw == "input" or raw.startswith("input.")):
                name = raw.split(".", 1)[1] if "." in raw else "context"
                return Source("input", text=name or "context", path=path)
            return Source("literal", text=raw, path=path)
        if isinstance(raw, (int, float)) and not isinstance(raw, bool):
            return Source("literal", text=str(raw), path=path)
        if not isinstance(raw, dict):
            self.ctx.add(f'Step "{step}": {what} has an invalid from: (got {_typename(raw)}); use previous, '
                         'output, a literal string, {stepId: ...} or {slate: ..., folder: ..., file: ...}', path, step)
            return None
        if "stepId" in raw:
            allowed = ("stepId", "nodeRef", "node")
            self.ctx.keys(raw, allowed, path, f"{what} from:", step)
            ref = raw.get("nodeRef")
            if ref is not None and ref not in NODE_REFS:
                self.ctx.add(f'Step "{step}": {what} has nodeRef "{ref}"; use one of ' + ", ".join(NODE_REFS),
                             path + ("nodeRef",), step, suggestion=suggest(ref, NODE_REFS))
                ref = None
            node = raw.get("node")
            if node is not None and (not isinstance(node, int) or isinstance(node, bool) or node < 1):
                self.ctx.add(f'Step "{step}": {what} node must be a whole number >= 1 (got {node!r})',
                             path + ("node",), step)
                node = None
            if ref is not None and node is not None:
                self.ctx.add(f'Step "{step}": {what} takes nodeRef or node, not both', path, step)
            return Source("step", step_id=str(raw["stepId"]), node_ref=ref, node=node, path=path)
        if "slate" in raw:
            self.ctx.keys(raw, ("slate", "folder", "file", "metatag", "depth"), path, f"{what} from:", step)
            ok = self.check_ref(step, what, raw.get("slate"), raw.get("folder"), path, raw.get("file"),
                                raw.get("metatag"))
            if not ok:
                return None
            if raw.get("file") is None and raw.get("metatag") is None:
                self.ctx.add(f'Step "{step}": {what} reads a whole folder; name a file or a metatag '
                             '(e.g. metatag: index)', path, step)
                return None
            depth = raw.get("depth")
            if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 1):
                self.ctx.add(f'Step "{step}": {what} depth must be a whole number >= 1 (got {depth!r})',
                             path + ("depth",), step)
                depth = None
            return Source("slate", slate=raw["slate"], folder=str(raw["folder"]).strip("/"), file=raw.get("file"),
                          metatag=raw.get("metatag"), depth=depth, path=path)
        self.ctx.add(f'Step "{step}": {what} has an invalid from: mapping; it needs stepId or slate', path, step,
                     suggestion=suggest(next(iter(raw), ""), ("stepId", "slate")))
        return None

    # ---- schemas ----------------------------------------------------------------------------------------
    def schema(self, raw: Any, path: tuple, step: str, what: str) -> dict | None:
        if raw is None or raw == {} or raw == "":
            self.ctx.add(f'Step "{step}": {what} must be a non-empty JSON Schema.', path, step)
            return None
        if isinstance(raw, str):
            import json
            try:
                raw = json.loads(raw)
            except ValueError as exc:
                self.ctx.add(f'Step "{step}": {what} is not valid JSON: {exc}', path, step)
                return None
        if not isinstance(raw, (dict, bool)) or raw is True or raw is False:
            self.ctx.add(f'Step "{step}": {what} must be a non-empty JSON Schema (a mapping).', path, step)
            return None
        from jsonschema.validators import validator_for
        cls = validator_for(raw)
        for err in cls(cls.META_SCHEMA).iter_errors(raw):
            sub = tuple(err.path)
            self.ctx.add(f'Step "{step}": {what} is not a valid JSON Schema: {err.message}'
                         + (f" (at {'/'.join(map(str, sub))})" if sub else ""), path + sub, step)
            return None
        return raw

    # ---- steps ------------------------------------------------------------------------------------------
    def steps(self, raw: Any, path: tuple, ids: dict[str, tuple]) -> tuple[Step, ...]:
        if not isinstance(raw, list) or not raw:
            self.ctx.add("steps must be a non-empty list", path)
            return ()
        out: list[Step] = []
        prev_group: str | None = None
        for i, s in enumerate(raw):
            st = self.step(s, path + (i,), ids, prev_group)
            if st is not None:
                out.append(st)
                prev_group = st.id if st.type == "group" else None
        return tuple(out)

    def step(self, raw: Any, p: tuple, ids: dict[str, tuple], prev_group: str | None) -> Step | None:
        ctx = self.ctx
        if not isinstance(raw, dict):
            ctx.add(f"a step must be a mapping (got {_typename(raw)})", p)
            return None
        sid = raw.get("id")
        if not isinstance(sid, str) or not sid.strip():
            ctx.add("a step needs an id (a non-empty string)", p)
            sid = f"#{p[-1]}"
        elif sid in ids:
            ctx.add(f'Step "{sid}": id is used by another step too', p + ("id",), sid)
        ids[sid] = p
        ctx.keys(raw, STEP_KEYS, p, "step", sid)
        stype = raw.get("type", "normal")
        if stype not in STEP_TYPES:
            ctx.add(f'Step "{sid}": unknown step type "{stype}"; use one of ' + ", ".join(STEP_TYPES),
                    p + ("type",), sid, suggestion=suggest(stype, STEP_TYPES))
            stype = "normal"
        nodes = raw.get("nodes", 1)
        if isinstance(nodes, str) and nodes.strip().isdigit():
            nodes = int(nodes)
        if not isinstance(nodes, int) or isinstance(nodes, bool) or nodes < 1:
            ctx.add(f'Step "{sid}": nodes must be a whole number >= 1 (got {nodes!r})', p + ("nodes",), sid)
            nodes = 1
        fields = self.fields(raw.get("fields"), p + ("fields",), sid, prev_group)
        sp = raw.get("systemPrompt", "")
        if sp is None:
            sp = ""
        if not isinstance(sp, str):
            ctx.add(f'Step "{sid}": systemPrompt must be a string', p + ("systemPrompt",), sid)
            sp = str(sp)
        retrieve = self.retrieve(raw["retrieve"], p + ("retrieve",), sid) if "retrieve" in raw else None
        if retrieve is not None and stype not in ("normal", "sequential"):
            ctx.add(f'Step "{sid}": retrieve is only valid on normal or sequential steps (this is a {stype} step)',
                    p + ("retrieve",), sid, key=True)
        gate = self.gate(raw["if"], p + ("if",), sid, prev_group) if "if" in raw else None
        sw = self.slate_write(raw["slateWrite"], p + ("slateWrite",), sid) if "slateWrite" in raw else None
        children: tuple[Step, ...] = ()
        call = None
        if stype == "group":
            children = self.steps(raw.get("steps"), p + ("steps",), ids)  # nested groups are branches too
        elif "steps" in raw:
            ctx.add(f'Step "{sid}": steps: is only valid on a group step', p + ("steps",), sid, key=True)
        if stype == "call":
            call = self.call(raw.get("call"), p + ("call",), sid, prev_group)
        elif "call" in raw:
            ctx.add(f'Step "{sid}": call: is only valid on a call step', p + ("call",), sid, key=True)
        model = raw.get("model")
        if model is not None and not isinstance(model, str):
            ctx.add(f'Step "{sid}": model must be a string', p + ("model",), sid)
            model = None
        if stype in ("group", "call") and (fields or sp):
            ctx.add(f'Step "{sid}": a {stype} step makes no model call of its own; its fields and systemPrompt '
                    'are ignored', p, sid, severity="warning")
        return Step(id=sid, type=stype, nodes=nodes, fields=fields, system_prompt=sp, retrieve=retrieve,
                    gate=gate, slate_write=sw, steps=children, call=call, model=model, path=p)

    def fields(self, raw: Any, p: tuple, sid: str, prev_group: str | None) -> tuple[FieldSpec, ...]:
        ctx = self.ctx
        if raw is None:
            return ()
        if not isinstance(raw, list):
            ctx.add(f'Step "{sid}": fields must be a list', p, sid)
            return ()
        out = []
        names: set[str] = set()
        for i, f in enumerate(raw):
            fp = p + (i,)
            if not isinstance(f, dict):
                ctx.add(f'Step "{sid}": fields[{i}] must be a mapping', fp, sid)
                continue
            name = f.get("name")
            if not isinstance(name, str) or not name.strip():
                ctx.add(f'Step "{sid}": fields[{i}] needs a name', fp, sid)
                continue
            ctx.keys(f, FIELD_KEYS, fp, f'field "{name}"', sid)
            if name in names:
                ctx.add(f'Step "{sid}": field "{name}" is declared twice', fp + ("name",), sid, field=name)
            names.add(name)
            ftype = f.get("type")
            if ftype not in FIELD_TYPES:
                ctx.add(f'Step "{sid}": field "{name}" has unknown type "{ftype}"; use one of '
                        + ", ".join(FIELD_TYPES), fp + ("type",), sid, field=name, suggestion=suggest(ftype, FIELD_TYPES))
                continue
            what = f'{ftype} field "{name}"'
            src = None
            value = f.get("value")
            knob = None
            if ftype == "text":
                if "from" in f:
                    src = self.source(f["from"], fp + ("from",), sid, what, prev_is_group=prev_group)
                elif "value" not in f:
                    ctx.add(f'Step "{sid}": text field "{name}" needs from: (input.context, input.NAME) or value:',
                            fp, sid, field=name)
            elif ftype == "slateRead":
                fr = f.get("from")
                if not isinstance(fr, dict):
                    ctx.add(f'Step "{sid}": slateRead field "{name}" needs from: {{slate, folder, file?, metatag?}}',
                            fp, sid, field=name)
                    continue
                ctx.keys(fr, ("slate", "folder", "file", "metatag", "depth"), fp + ("from",), f'slateRead field "{name}"', sid)
                if self.check_ref(sid, f'slateRead field "{name}"', fr.get("slate"), fr.get("folder"), fp + ("from",),
                                  fr.get("file"), fr.get("metatag")):
                    depth = fr.get("depth")
                    if depth is not None and (not isinstance(depth, int) or isinstance(depth, bool) or depth < 1):
                        ctx.add(f'Step "{sid}": slateRead field "{name}" depth must be a whole number >= 1',
                                fp + ("from", "depth"), sid, field=name)
                        depth = None
                    src = Source("slate", slate=fr["slate"], folder=str(fr["folder"]).strip("/"), file=fr.get("file"),
                                 metatag=fr.get("metatag"), depth=depth, path=fp + ("from",))
                else:
                    continue
            elif ftype in ("ingest", "multi_ingest"):
                if "from" not in f:
                    ctx.add(f'Step "{sid}": {what} needs from:', fp, sid, field=name)
                    continue
                src = self.source(f["from"], fp + ("from",), sid, what, allow_input=False, prev_is_group=prev_group)
                if src is not None and src.kind == "output":
                    ctx.add(f'Step "{sid}": {what} cannot read from: output (the step has not run yet)',
                            fp + ("from",), sid, field=name)
            elif ftype == "knob":
                knob = f.get("knob") or f.get("from")
                if isinstance(knob, str) and knob.startswith("knobs."):
                    knob = knob[6:]
                if not isinstance(knob, str) or not knob:
                    ctx.add(f'Step "{sid}": knob field "{name}" needs knob: NAME', fp, sid, field=name)
                    continue
            elif ftype == "json":
                if "value" not in f:
                    ctx.add(f'Step "{sid}": json field "{name}" needs value:', fp, sid, field=name)
            out.append(FieldSpec(name=name, type=ftype, source=src, value=value, knob=knob, path=fp))
        return tuple(out)

    def retrieve(self, raw: Any, p: tuple, sid: str) -> Retrieve | None:
        ctx = self.ctx
        if not isinstance(raw, dict):
            ctx.add(f'Step "{sid}": retrieve must be a mapping', p, sid)
            return None
        ctx.keys(raw, RETRIEVE_KEYS, p, "retrieve", sid)
        ok = True
        mr = raw.get("maxRounds")
        if mr is None:
            ctx.add(f'Step "{sid}": retrieve.maxRounds is required (a whole number > 0).', p, sid)
            ok = False
        elif not isinstance(mr, int) or isinstance(mr, bool):
            ctx.add(f'Step "{sid}": retrieve.maxRounds must be a whole number (got {mr!r}).', p + ("maxRounds",), sid)
            ok = False
        elif mr <= 0:
            ctx.add(f'Step "{sid}": retrieve.maxRounds must be > 0 (got {mr}).', p + ("maxRounds",), sid)
            ok = False
        as_ = raw.get("as")
        if not isinstance(as_, str) or not as_.strip():
            ctx.add(f'Step "{sid}": retrieve.as must be a non-empty field name.', p + ("as",) if "as" in raw else p, sid)
            ok = False
        to = raw.get("to")
        if not isinstance(to, dict):
            ctx.add(f'Step "{sid}": retrieve.to must be {{slate: ..., folder: ...}}', p + ("to",) if "to" in raw else p, sid)
            ok = False
        else:
            ctx.keys(to, ("slate", "folder"), p + ("to",), "retrieve.to", sid)
            ok = self.check_ref(sid, "retrieve.to", to.get("slate"), to.get("folder"), p + ("to",), kind="write") and ok
        schema = self.schema(raw.get("requestMatch"), p + ("requestMatch",), sid, "retrieve.requestMatch")
        if not ok or schema is None:
            return None
        return Retrieve(slate=to["slate"], folder=str(to["folder"]).strip("/"), as_=as_.strip(), max_rounds=mr,
                        request_match=schema, path=p)

    def target(self, raw: Any, p: tuple, sid: str, what: str) -> Target | None:
        if not isinstance(raw, dict):
            self.ctx.add(f'Step "{sid}": {what}.to must be {{slate, folder, file | metatag}}', p, sid)
            return None
        self.ctx.keys(raw, ("slate", "folder", "file", "metatag"), p, f"{what}.to", sid)
        if not self.check_ref(sid, f"{what}.to", raw.get("slate"), raw.get("folder"), p, kind="write"):
            return None
        file, metatag = raw.get("file"), raw.get("metatag")
        if file is not None and unsafe_name(file):
            self.ctx.add(f'Step "{sid}": {what}.to.file "{file}" is not allowed: a file must stay inside its folder '
                         '(no "..", no absolute path, no hidden names)', p + ("file",), sid)
            return None
        if file is None and metatag is None:
            self.ctx.add(f'Step "{sid}": {what}.to needs a file (or a file and a metatag)', p, sid)
            return None
        if metatag is not None and file is None:
            self.ctx.add(f'Step "{sid}": {what}.to.metatag needs a file too', p, sid)
            return None
        if metatag is not None:
            fspec = self.slates[raw["slate"]].folder(str(raw["folder"]).strip("/"))
            if metatag in SYSTEM_METATAGS:
                self.ctx.add(f'Step "{sid}": {what}.to.metatag "{metatag}" is a system metatag and cannot be written',
                             p + ("metatag",), sid)
                return None
            schema = fspec.effective_schema(file) if fspec else {}
            if metatag not in schema:
                self.ctx.add(f'Step "{sid}": {what}.to references undeclared metatag "{metatag}" on file "{file}"',
                             p + ("metatag",), sid, suggestion=suggest(metatag, schema))
                return None
        return Target(slate=raw["slate"], folder=str(raw["folder"]).strip("/"), file=file, metatag=metatag)

    def policy(self, raw: dict, p: tuple, sid: str, what: str) -> tuple[str, str | None]:
        on = raw.get("on", "append")
        if on not in WRITE_POLICIES:
            self.ctx.add(f'Step "{sid}": {what}.on must be one of ' + ", ".join(WRITE_POLICIES) + f' (got "{on}")',
                         p + ("on",), sid, suggestion=suggest(on, WRITE_POLICIES))
            on = "append"
        key = raw.get("key")
        if on == "mergeByKey" and not key:
            self.ctx.add(f'Step "{sid}": {what} on: mergeByKey requires key.', p + ("on",), sid)
        if key is not None and on != "mergeByKey":
            self.ctx.add(f'Step "{sid}": {what}.key is only valid when on: mergeByKey (got on: {on}).',
                         p + ("key",), sid)
        return on, key

    def slate_write(self, raw: Any, p: tuple, sid: str) -> SlateWrite | None:
        if not isinstance(raw, dict):
            self.ctx.add(f'Step "{sid}": slateWrite must be a mapping', p, sid)
            return None
        self.ctx.keys(raw, SLATEWRITE_KEYS, p, "slateWrite", sid)
        target = self.target(raw.get("to"), p + ("to",), sid, "slateWrite")
        on, key = self.policy(raw, p, sid, "slateWrite")
        match = self.schema(raw.get("match"), p + ("match",), sid, "slateWrite.match")
        fld = raw.get("field")
        if fld is not None and not isinstance(fld, str):
            self.ctx.add(f'Step "{sid}": slateWrite.field must be a string', p + ("field",), sid)
            fld = None
        if target is None or match is None:
            return None
        return SlateWrite(target=target, match=match, on=on, field=fld, key=key, path=p)

    def gate(self, raw: Any, p: tuple, sid: str, prev_group: str | None) -> Gate | None:
        ctx = self.ctx
        if not isinstance(raw, dict):
            ctx.add(f'Step "{sid}": if must be a mapping with equals or jsonMatches, then and else', p, sid)
            return None
        ctx.keys(raw, GATE_KEYS, p, "if", sid)
        equals = raw.get("equals")
        jm = None
        if "equals" in raw and "jsonMatches" in raw:
            ctx.add(f'Step "{sid}": if takes equals or jsonMatches, not both', p, sid)
        elif "equals" in raw:
            if not isinstance(equals, (str, int, float)) or isinstance(equals, bool):
                ctx.add(f'Step "{sid}": if.equals must be a string', p + ("equals",), sid)
            equals = str(equals)
        elif "jsonMatches" in raw:
            jm = self.schema(raw.get("jsonMatches"), p + ("jsonMatches",), sid, "if.jsonMatches")
            if jm is None:
                return None
        else:
            ctx.add(f'Step "{sid}": if needs a condition: equals or jsonMatches', p, sid)
            return None
        then = self.action(raw.get("then", "continue"), p + ("then",), sid, "then", prev_group)
        else_ = self.action(raw.get("else", "continue"), p + ("else",), sid, "else", prev_group)
        if then is None or else_ is None:
            return None
        return Gate(equals=equals if jm is None else None, json_matches=jm, then=then, else_=else_, path=p)

    def action(self, raw: Any, p: tuple, sid: str, branch: str, prev_group: str | None) -> Action | None:
        ctx = self.ctx
        if isinstance(raw, str):
            if raw in ("continue", "abort", "prune"):
                return Action(kind=raw, path=p)
            ctx.add(f'Step "{sid}": if.{branch} has unknown action "{raw}"; use continue, abort, prune, '
                    '{jump: {stepId: ...}} or {write: ...}', p, sid, suggestion=suggest(raw, ("continue", "abort", "prune")))
            return None
        if not isinstance(raw, dict):
            ctx.add(f'Step "{sid}": if.{branch} must be an action', p, sid)
            return None
        ctx.keys(raw, ("jump", "write"), p, f"if.{branch}", sid)
        jump = None
        if "jump" in raw:
            j = raw["jump"]
            if isinstance(j, dict) and isinstance(j.get("stepId"), str):
                jump = j["stepId"]
            elif isinstance(j, str):
                jump = j
            else:
                ctx.add(f'Step "{sid}": if.{branch}.jump must be {{stepId: ...}}', p + ("jump",), sid)
        writes: list[WriteSpec] = []
        if "write" in raw:
            items = raw["write"] if isinstance(raw["write"], list) else [raw["write"]]
            for i, w in enumerate(items):
                wp = p + ("write",) + ((i,) if isinstance(raw["write"], list) else ())
                what = f"if.{branch} write"
                if not isinstance(w, dict):
                    ctx.add(f'Step "{sid}": {what} must be a mapping with to, from and on', wp, sid)
                    continue
                ctx.keys(w, WRITE_KEYS, wp, what, sid)
                target = self.target(w.get("to"), wp + ("to",), sid, what)
                if "from" not in w:
                    ctx.add(f'Step "{sid}": {what} needs from: (previous, output, a literal, a step or a slate ref)',
                            wp, sid)
                    continue
                src = self.source(w["from"], wp + ("from",), sid, what, allow_input=False, prev_is_group=prev_group)
                on, key = self.policy(w, wp, sid, what)
                if target is not None and src is not None:
                    writes.append(WriteSpec(target=target, source=src, on=on, key=key, path=wp))
        if not writes and jump is None and "write" not in raw:
            ctx.add(f'Step "{sid}": if.{branch} needs jump or write', p, sid)
            return None
        return Action(kind="jump" if jump else "write", jump=jump, writes=tuple(writes), path=p)

    def call(self, raw: Any, p: tuple, sid: str, prev_group: str | None) -> CallSpec | None:
        ctx = self.ctx
        if not isinstance(raw, dict):
            ctx.add(f'Step "{sid}": a call step needs call: {{ladder: self|PATH, input: SOURCE, maxDepth: N}}', p, sid)
            return None
        ctx.keys(raw, CALL_KEYS, p, "call", sid)
        lad = raw.get("ladder", "self")
        if not isinstance(lad, str) or not lad:
            ctx.add(f'Step "{sid}": call.ladder must be "self" or a path', p + ("ladder",), sid)
            return None
        md = raw.get("maxDepth", 3)
        if not isinstance(md, int) or isinstance(md, bool) or md < 1:
            ctx.add(f'Step "{sid}": call.maxDepth must be a whole number >= 1 (got {md!r})', p + ("maxDepth",), sid)
            md = 3
        src = None
        if "input" in raw:
            src = self.source(raw["input"], p + ("input",), sid, "call.input", prev_is_group=prev_group)
        return CallSpec(ladder=lad, source=src, max_depth=md, path=p)


def _cross_checks(ctx: _Ctx, steps: tuple[Step, ...], ids: dict[str, tuple]) -> None:
    """Rules that need every step: jump targets and step references exist."""
    known = list(ids)

    def check_src(src: Source | None, sid: str, what: str) -> None:
        if src is not None and src.kind == "step" and src.step_id not in ids:
            ctx.add(f'Step "{sid}": {what} references unknown step "{src.step_id}"', src.path + ("stepId",), sid,
                    suggestion=suggest(src.step_id, known))

    def walk(sts):
        for s in sts:
            for f in s.fields:
                check_src(f.source, s.id, f'{f.type} field "{f.name}"')
            if s.gate:
                for branch, act in (("then", s.gate.then), ("else", s.gate.else_)):
                    if act.jump and act.jump not in ids:
                        ctx.add(f'Step "{s.id}": if.{branch} jumps to unknown step "{act.jump}"', act.path + ("jump",),
                                s.id, suggestion=suggest(act.jump, known))
                    for w in act.writes:
                        check_src(w.source, s.id, f"if.{branch} write")
            if s.call:
                check_src(s.call.source, s.id, "call.input")
            walk(s.steps)
    walk(steps)


def check_text(text: str, *, file: str | None = None, knobs: dict | None = None,
               base_dir: Path | None = None) -> tuple[Ladder | None, list[ConfigError]]:
    """Parse once: the Ladder (None when it has errors) and every problem, errors and warnings."""
    try:
        ladder, problems = _build(text, file=file, knobs=knobs, base_dir=base_dir)
    except ConfigErrors as many:
        return None, list(many.errors)
    except ConfigError as one:
        return None, [one]
    if ladder is None or any(p.severity == "error" for p in problems):
        return None, problems
    return ladder, problems


def iter_problems(text: str, *, file: str | None = None, knobs: dict | None = None,
                  base_dir: Path | None = None) -> Iterator[ConfigError]:
    """Yield every problem (errors and warnings) in a ladder document's text."""
    yield from check_text(text, file=file, knobs=knobs, base_dir=base_dir)[1]


def _build(text: str, *, file: str | None, knobs: dict | None, base_dir: Path | None):
    raw, pos = load_yaml(text, file)
    ctx = _Ctx(file, pos)
    if not isinstance(raw, dict):
        ctx.add(f"a ladder must be a YAML mapping with name, slates and steps (got {_typename(raw)})", ())
        return None, ctx.errors
    ctx.keys(raw, TOP_KEYS, (), "ladder")
    base_knobs = raw.get("knobs") or {}
    if not isinstance(base_knobs, dict):
        ctx.add("knobs must be a mapping", ("knobs",))
        base_knobs = {}
    merged = dict(base_knobs)
    for k, v in (knobs or {}).items():
        if k not in base_knobs:
            ctx.add(f'knob "{k}" given at run time is not declared in knobs:', ("knobs",),
                    suggestion=suggest(k, base_knobs), severity="warning")
        merged[k] = v
    data = substitute_knobs(raw, merged, ctx)
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        ctx.add("the ladder needs a name (a non-empty string)", ("name",) if "name" in data else ())
        name = name if isinstance(name, str) else "ladder"
    model = data.get("model")
    if model is not None and not isinstance(model, str):
        ctx.add("model must be a string", ("model",))
        model = None
    budget = Budget()
    eb = data.get("executionBudget")
    if eb is not None:
        if not isinstance(eb, dict):
            ctx.add("executionBudget must be a mapping", ("executionBudget",))
        else:
            ctx.keys(eb, BUDGET_KEYS, ("executionBudget",), "executionBudget")
            vals = {}
            for k in BUDGET_KEYS:
                v = eb.get(k)
                if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < 1):
                    ctx.add(f"executionBudget.{k} must be a whole number >= 1 (got {v!r})", ("executionBudget", k))
                    v = None
                vals[k] = v
            budget = Budget(max_llm_calls=vals["maxLlmCalls"], max_steps=vals["maxSteps"])
    loader = _Loader(ctx)
    slates = loader.slates_(data.get("slates"))
    ids: dict[str, tuple] = {}
    steps = loader.steps(data.get("steps"), ("steps",), ids)
    _cross_checks(ctx, steps, ids)
    ctx.errors.sort(key=lambda e: (e.line or 0, e.column or 0))
    ladder = Ladder(name=name, steps=steps, slates=slates, model=model, knobs=merged, budget=budget, file=file,
                    base_dir=base_dir or Path("."), text=text, raw=raw, warnings=tuple(ctx.warnings), positions=pos)
    return ladder, ctx.errors + ctx.warnings


def load_ladder_text(text: str, *, file: str | None = None, knobs: dict | None = None,
                     base_dir: Path | None = None) -> Ladder:
    """Parse and validate ladder text; raise ConfigErrors listing every problem, or return the Ladder."""
    ladder, problems = _build(text, file=file, knobs=knobs, base_dir=base_dir)
    errors = [p for p in problems if p.severity == "error"]
    if errors or ladder is None:
        raise ConfigErrors(errors or problems)
    return ladder


def load_ladder(path: str | Path, *, knobs: dict | None = None) -> Ladder:
    """Load and validate a ladder file; raise ConfigErrors listing every problem."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(f"cannot read ladder file: {exc.strerror or exc}", file=str(path)) from None
    return load_ladder_text(text, file=str(path), knobs=knobs, base_dir=p.resolve().parent)
