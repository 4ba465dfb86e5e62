"""The walker: visits every construct of a ladder document, runs its rules, and locates what they yield."""
from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from ..errors import ConfigError
from . import keywords, knobs, references, schemas, shape, steps, writes  # noqa: F401  (importing them registers their rules)
from .rules import CHILDREN, CODES, RULES, Doc, Rule, Site
from .shape import declared_slates
from .steps import step_scopes

Registry = Mapping[str, Sequence[tuple[str, Rule]]]


def new_doc(data: dict, file: str | None, positions: Any, runtime_knobs: dict, base_dir: Any = None) -> Doc:
    """A Doc for the walker: declarations and step scopes worked out once, before any rule runs."""
    doc = Doc(data=data, file=file, positions=positions, slates=declared_slates(data), runtime_knobs=runtime_knobs,
              base_dir=base_dir)
    step_scopes(doc)
    return doc


def iter_errors(doc: Doc, registry: Registry | None = None) -> Iterator[ConfigError]:
    """Every problem of the document, in walking order (construct by construct, rule by rule).

    `registry` maps construct kinds to (code, rule) pairs; by default every registered rule (`RULES`).
    """
    yield from descend(Site("ladder", doc.data, (), doc), RULES if registry is None else registry)


def descend(site: Site, registry: Registry) -> Iterator[ConfigError]:
    """The problems of one construct and of every construct below it."""
    for code, check in registry.get(site.kind, ()):
        for err in check(site):
            yield locate(err, site, code)
    below = CHILDREN.get(site.kind)
    if below is not None:
        for child in below(site):
            yield from descend(child, registry)


def locate(err: ConfigError, site: Site, code: str | None = None) -> ConfigError:
    """Complete a problem a rule yielded: rule code, absolute path, step, field, file and position."""
    err.rule = err.rule or code
    err.path = site.path + tuple(err.path)
    if err.step_id is None and site.step is not None and site.step.id is not None:
        err.step_id = site.step.id
        err.message = f'Step "{site.step.id}": {err.message}'
    err.field = err.field or site.field
    err.file = site.doc.file
    info = CODES.get(err.rule or "")
    lc = site.doc.positions.of(err.path, key=bool(info and info.at_key))
    if lc is not None:
        err.line, err.column = lc
    return err

__all__ = ["Registry", "descend", "iter_errors", "locate", "new_doc"]
