"""Fixtures for the slate store: a writable copy of the conformance sample slate."""
from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

import pytest

from ladr_lab.slate import FolderSpec, SlateStore

SAMPLE = Path("/work/shared/conformance/cases/glob_name_and_path/slates/Knowledge")

DOCS_SPEC = FolderSpec(
    name="docs",
    metatags={"tags": "string[]", "priority": "number", "summary": "string"},
    files={"core.md": {"verified": "boolean"}},
)


def copy_writable(src: Path, dst: Path) -> Path:
    """Copy a read-only tree and make every copy writable by its owner (chmod -R u+w)."""
    shutil.copytree(src, dst)
    for root, dirs, files in os.walk(dst):
        for name in dirs + files:
            p = os.path.join(root, name)
            os.chmod(p, os.stat(p).st_mode | stat.S_IWUSR)
    os.chmod(dst, os.stat(dst).st_mode | stat.S_IWUSR)
    return dst


@pytest.fixture
def kroot(tmp_path: Path) -> Path:
    """A writable copy of the sample `Knowledge` slate (folders docs/ and private/)."""
    if not SAMPLE.is_dir():
        pytest.skip("conformance sample slate not available")
    return copy_writable(SAMPLE, tmp_path / "Knowledge")


@pytest.fixture
def kstore(kroot: Path) -> SlateStore:
    """A store with the sample slate bound as "Knowledge", declaring docs and private."""
    store = SlateStore()
    store.bind("Knowledge", kroot, [DOCS_SPEC, FolderSpec(name="private")])
    return store


@pytest.fixture
def kdocs(kstore: SlateStore):
    """The sample slate's docs folder."""
    return kstore.slate("Knowledge").folder("docs")


@pytest.fixture(scope="module")
def ref_docs(tmp_path_factory):
    """A module-wide docs folder (the sample plus two deeper files) for read-only property tests."""
    if not SAMPLE.is_dir():
        pytest.skip("conformance sample slate not available")
    root = copy_writable(SAMPLE, tmp_path_factory.mktemp("ref") / "K")
    folder = SlateStore().bind("K", root, [FolderSpec("docs")]).folder("docs")
    folder.write_text("notes/deep/nested.md", "n")
    folder.write_text("research/notes/r.txt", "r")
    return folder
