"""Masking local paths outside the run folder and credentials: off by default, applied before indexing."""
from __future__ import annotations

from pathlib import Path

import pytest

from ladr_lab.runfiles import MASKED_PATH, MASKED_SECRET, CredentialRedactor, Masker, PathRedactor
from tests.runfiles.helpers import rec, search

REQ = {"episode": 1, "conversation": "c", "top_k": 20}


@pytest.mark.parametrize(("text", "expected"), [
    ("read /etc/passwd.", f"read {MASKED_PATH}."),
    ("wrote /run/x/Alice.history", "wrote /run/x/Alice.history"),
    ("escape /run/x/../../etc/shadow", f"escape {MASKED_PATH}"),
    ("home ~/secrets/id_rsa", f"home {MASKED_PATH}"),
    ("url file:///home/me/k.pem", f"url file://{MASKED_PATH}"),
    ("win C:\\Users\\bob\\key.txt", f"win {MASKED_PATH}"),
    ("PATH=/usr/bin:/run/x/bin", f"PATH={MASKED_PATH}:/run/x/bin"),
    ("see https://example.com/a/b and/or 1/2", "see https://example.com/a/b and/or 1/2"),
    ("a lone / slash", "a lone / slash"),
])
def test_path_redactor_hides_paths_outside_the_folder(text: str, expected: str) -> None:
    assert PathRedactor("/run/x").redact(text) == expected


@pytest.mark.parametrize(("text", "hidden"), [
    ("id AKIAIOSFODNN7EXAMPLE", "AKIAIOSFODNN7EXAMPLE"),
    ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY", "wJalrXUtnFEMI"),
    ("google AIzaSyA1234567890abcdefghijklmnopqrstuv", "AIzaSyA1234567890"),
    ("Authorization: Bearer eyJhbGciOi.abc.def-ghi", "eyJhbGciOi"),
    ("curl -H 'Authorization: Basic dXNlcjpwYXNzd29yZA=='", "dXNlcjpwYXNzd29yZA"),
    ("db postgres://app:hunter2@db.internal/app", "hunter2"),
    ("DB_PASSWORD=s3cr3t!", "s3cr3t"),
    ('{"client_secret": "abc123xyz"}', "abc123xyz"),
    ("STRIPE_SECRET=sk_live_abcdefghijklmnop1234", "sk_live_"),
    ("token ghp_abcdefghijklmnopqrstuvwxyz0123456789", "ghp_abcdef"),
    ("openai sk-proj-abcdefghijklmnopqrstuvwx", "sk-proj-abcdef"),
    ("slack xoxb-1234567890-abcdefghij", "xoxb-1234567890"),
    ("DefaultEndpointsProtocol=https;AccountKey=abcdefghijklmnopqrstuvwxyz0123456789==;", "abcdefghijklmnop"),
    ("jwt eyJhbGciOiJIUzI1.eyJzdWIiOiIxMjM0.SflKxwRJSMeKKF2QT4f", "SflKxwRJSMeKKF2QT4f"),
])
def test_credential_redactor_hides_credentials(text: str, hidden: str) -> None:
    out = CredentialRedactor().redact(text)
    assert hidden not in out and MASKED_SECRET in out


@pytest.mark.parametrize("text", ["tokens_in: 42", "the password policy is long", "a key: value", "Bearer of news"])
def test_credential_redactor_leaves_ordinary_text(text: str) -> None:
    assert CredentialRedactor().redact(text) == text


def test_a_key_block_is_hidden_whole_and_what_follows_stays() -> None:
    text = ("before\n-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJBAK\nline2\n-----END RSA PRIVATE KEY-----\nafter")
    assert CredentialRedactor().redact(text) == f"before\n{MASKED_SECRET}\nafter"


def test_masking_is_off_by_default(tmp_path: Path) -> None:
    (tmp_path / "Alice.history").write_text(rec("18:00:00", "Alice", "kiwi AKIAIOSFODNN7EXAMPLE at /etc/kiwi", "c"))
    (p,) = search(tmp_path, "kiwi", **REQ).pieces
    assert p.text == "kiwi AKIAIOSFODNN7EXAMPLE at /etc/kiwi"


def test_what_the_masker_hides_is_neither_returned_nor_searched(tmp_path: Path) -> None:
    key = "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXktdjEAAAAA\nQUFBQUFBQUFBQUFB\n-----END OPENSSH PRIVATE KEY-----"
    (tmp_path / "Alice.history").write_text(
        rec("18:00:00", "Alice", f"kiwi AKIAIOSFODNN7EXAMPLE at /etc/kiwi.conf and {tmp_path}/Alice.log", "c")
        + rec("18:00:01", "Alice", "kiwi key follows\n" + key, "c"))
    masker = Masker.hiding_outside(tmp_path)
    got = search(tmp_path, "kiwi", masker=masker, **REQ)
    assert sorted(p.text for p in got.pieces) == [
        f"kiwi [masked secret] at [masked path] and {tmp_path}/Alice.log", "kiwi key follows"]
    for hidden in ("AKIAIOSFODNN7EXAMPLE", "etc", "b3BlbnNzaC1rZXktdjEAAAAA", "QUFBQUFBQUFBQUFB"):
        assert search(tmp_path, hidden, masker=masker, **REQ).pieces == [], hidden
    assert search(tmp_path, "QUFBQUFBQUFBQUFB", **REQ).pieces  # found without the masker


def test_a_callable_can_be_a_redactor() -> None:
    m = Masker(str.upper, CredentialRedactor())
    assert m("x DB_PASSWORD=abc") == f"X DB_PASSWORD={MASKED_SECRET}" and "upper" in m.name


@pytest.mark.parametrize(("text", "expected"), [
    ("copied ../../home/al/x here", f"copied {MASKED_PATH} here"),
    ("wrote out/../../../etc/x", f"wrote {MASKED_PATH}"),
    ("wrote out/a/../b.txt", "wrote out/a/../b.txt"),  # still inside the run folder
    ("open /home/al/My Documents/s.txt now", f"open {MASKED_PATH} now"),
    ("open /run/x/My Documents/s.txt now", "open /run/x/My Documents/s.txt now"),
])
def test_relative_paths_and_paths_with_spaces(text: str, expected: str) -> None:
    assert PathRedactor("/run/x").redact(text) == expected


def test_a_key_wrapped_onto_the_next_line_is_hidden_and_the_lines_stay() -> None:
    key = "Zk3" + "q9XbT2" * 8
    out = CredentialRedactor().redact(f"api_key = {key[:30]}\n{key[30:]}\nnext line")
    assert out == f"api_key = {MASKED_SECRET}\n{MASKED_SECRET}\nnext line"


@pytest.mark.parametrize("text", ["token_count=512", "max_tokens: 256", "primary_key: id", "pass=3 fail=0",
                                  "the bearer instrument", '"password": null', "--no-password x",
                                  "authorization: required"])
def test_names_about_secrets_are_not_secrets(text: str) -> None:
    assert CredentialRedactor().redact(text) == text
