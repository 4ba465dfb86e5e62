"""With masking on, no file the index writes holds a planted secret or path, and each is created 0600 (issue 29)."""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from ladr_lab.cachedir import CACHE_ENV
from ladr_lab.runfiles import Masker, RunFileRetriever
from ladr_lab.runfiles.cache import cached_index_path
from tests.runfiles.helpers import HostInterpreter, rec

REQ = {"episode": 1, "conversation": "c"}
# invented values, each of a form the masker covers
KEY_ID = "AKIAQWERTYUIOPASDF27"
AWS_SECRET = "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"
GH_TOKEN = "ghp_Zx8Qw3Er5Ty7Ui9Op1As2Df4Gh6Jk8Lz0Xcv"
PASSWORD = "Tr0ub4dor-Plum-93"
PEM_BODY = "MIIEvQIBADANBgkqhkiG9w0BAQEFAASCsecretPEMline"
OUTSIDE = "/home/zelda/private-notes-q7.txt"
CONV_TOKEN = "ghp_Cv7Bn1Mm2Qq3Ww4Ee5Rr6Tt7Yy8Uu9Ii0Oop"
SECRETS = [KEY_ID, AWS_SECRET, GH_TOKEN, PASSWORD, PEM_BODY, OUTSIDE, CONV_TOKEN]
LATER = ["AKIAZXCVBNMLKJHGFD55", "ghp_Later0Token1Abc2Def3Ghi4Jkl5Mno6Pqrs", "Later-Pa55word-xyz"]


def _records() -> str:
    return (rec("18:00:00", "Alice", "has started episode 1.")
            + rec("18:00:01", "Alice", f"kiwi aws_access_key_id={KEY_ID} aws_secret_access_key={AWS_SECRET}", "c")
            + rec("18:00:02", "Alice", f"kiwi token {GH_TOKEN}\nkiwi password={PASSWORD}", "c")
            + rec("18:00:03", "Alice", "kiwi key:\n-----BEGIN PRIVATE KEY-----\n" + PEM_BODY
                  + "\n-----END PRIVATE KEY-----", "c")
            + rec("18:00:04", "Alice", f"kiwi notes at {OUTSIDE}", "c")
            + rec("18:00:05", "Alice", "kiwi in a secret conversation", CONV_TOKEN))


def _index_files(db: Path) -> list[Path]:
    return sorted(p for p in db.parent.iterdir() if p.name.startswith(db.name))


def _assert_clean(db: Path, secrets: list[str]) -> None:
    files = _index_files(db)
    assert db in files
    for p in files:
        raw = p.read_bytes()
        for s in secrets:
            assert s.encode() not in raw, (p.name, s)
            assert s.lower().encode() not in raw.lower(), (p.name, s)
        assert stat.S_IMODE(p.stat().st_mode) == 0o600, (p.name, oct(p.stat().st_mode))


@pytest.mark.parametrize("in_run_dir", [True, False])
def test_nothing_the_masked_index_writes_holds_a_secret(tmp_path: Path, monkeypatch, in_run_dir: bool) -> None:
    masker = Masker.hiding_outside(tmp_path / "run")
    for s in (KEY_ID, GH_TOKEN, OUTSIDE, CONV_TOKEN, *LATER[:2]):  # each planted value is one the masker hides
        assert s not in masker.mask(f"kiwi {s} here"), s
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "cache"))
    old = os.umask(0o022)
    try:
        run = tmp_path / "run"
        run.mkdir()
        h = run / "Alice.history"
        h.write_text(_records())
        db = cached_index_path(run, "Alice", interpreter=HostInterpreter(), masker=masker, in_run_dir=in_run_dir)
        with RunFileRetriever(run, "Alice", interpreter=HostInterpreter(), masker=masker, index_path=db) as r:
            got = r.search("kiwi", **REQ)
            assert got.pieces and all(s not in p.text for p in got.pieces for s in SECRETS)
            _assert_clean(db, SECRETS)
            # appended records with secrets, one still being written (its last line cut): read incrementally
            with open(h, "a") as fh:
                fh.write(rec("18:00:06", "Alice", f"kiwi later key {LATER[0]} password={LATER[2]}", "c"))
                fh.write(f"2026-10-21 18:00:07 [running] [c] Alice kiwi half {LATER[1]} password={LATER[2]}")
            got = r.search("kiwi", **REQ)
            assert got.refresh.bytes_read and got.refresh.reread == []
            _assert_clean(db, SECRETS + LATER)
            with open(h, "a") as fh:
                fh.write(f"\n  kiwi continued password={LATER[2]}\n")
            got = r.search("continued", **REQ)
            assert [p.text for p in got.pieces] == ["kiwi continued password=[masked secret]"]
            for s in (KEY_ID, AWS_SECRET, PEM_BODY, LATER[0], "zelda"):  # nor searched
                assert r.search(s, **REQ).pieces == [], s
            _assert_clean(db, SECRETS + LATER)
        _assert_clean(db, SECRETS + LATER)
    finally:
        os.umask(old)
