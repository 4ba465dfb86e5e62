"""Issue 29 item 9: HTTP request paths, placeholders and SSH fingerprints are not masked; a masked value goes whole."""
from __future__ import annotations

import itertools

import pytest

from ladr_lab.runfiles.masking import MASKED_SECRET, Masker

_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE", "HEAD", "OPTIONS")
_ROUTES = ("/api/v1/items?page=7", "/login", "/api/v2/users/42/orders?sort=desc&limit=50", "/health",
           "/static/app.min.js?v=3.2.1", "/search?q=token+count&lang=en")
_NAMES = ("password", "PASSWORD", "db_password", "api_key", "token", "secret", "client_secret", "DB_PASS")
_PLACEHOLDERS = ("${DB_PASSWORD}", "$DB_PASSWORD", "{{ vault_token }}", "<your-key>", "%(SECRET)s", "***")
_FINGERPRINTS = ("SHA256:nThbg6kXUpJWGl7E1IGOCspRomTxdCARLviKw6E5SY8",
                 "SHA256:/Thbg6kXUpJ+/l7E1IGOCspRomTxdCARLviKw6E5SY8",
                 "MD5:16:27:ac:a5:76:28:2d:36:63:1b:56:4d:eb:df:a6:48")


def _ordinary_lines() -> list[str]:
    lines: list[str] = []
    for i, (method, route) in enumerate(itertools.product(_METHODS, _ROUTES)):  # 42 access-log lines, two forms
        lines.append(f'10.0.0.{i} - - [21/Oct/2026:18:00:{i % 60:02d} +0000] "{method} {route} HTTP/1.1" 200 {512 + i}')
        lines.append(f"{method} {route}")
    for name, ph in itertools.product(_NAMES, _PLACEHOLDERS):  # 48 x 4 forms: YAML, env, JSON, INI
        lines += (f"{name}: {ph}", f"{name}={ph}", f'"{name}": "{ph}"', f"{name} = {ph}")
    for fp in _FINGERPRINTS:
        lines += (f"256 {fp} alice@build (ED25519)", f"ssh_key_fingerprint: {fp}",
                  f"Host key fingerprint is {fp}", f"ssh_key: {fp}")
    lines += [
        "See https://example.com/docs/runfiles?section=masking for details.",
        "curl -s https://api.example.com/v1/items?page=2",
        "The password field is required; pick a strong one.",
        "token_count=512 max_tokens=4096",
        "def load(path): return open(path).read()",
        "x = {'page': 7, 'limit': 50}",
        "Retrying GET request after 503 (attempt 2 of 5)",
        "export PATH=$PATH:$HOME/bin",
        "  password: ${DB_PASSWORD}  # from the environment",
        "- token: \"{{ vault_token }}\"",
    ]
    return lines


ORDINARY = _ordinary_lines()


def test_the_corpus_is_large_enough():
    assert len(ORDINARY) >= 200


def test_ordinary_lines_are_left_alone(tmp_path):
    masker = Masker.hiding_outside(tmp_path)
    changed = [(line, masker(line)) for line in ORDINARY if masker(line) != line]
    assert changed == []


@pytest.mark.parametrize("line, expected", [
    ("password: hunter2-Xq9", f"password: {MASKED_SECRET}"),
    ('"password": "hunter2-Xq9"', f'"password": {MASKED_SECRET}'),
    ("password: ${DB_PASSWORD:-hunter2-Xq9}", f"password: {MASKED_SECRET}"),
    ("DB_PASS=abc${X}def", f"DB_PASS={MASKED_SECRET}"),
    ("{password: hunter2-Xq9}", f"{{password: {MASKED_SECRET}}}"),
    ("api_key=Zk3pQ9vW2xY7", f"api_key={MASKED_SECRET}"),
])
def test_a_masked_value_is_replaced_whole(tmp_path, line, expected):
    assert Masker.hiding_outside(tmp_path)(line) == expected


@pytest.mark.parametrize("line", ["cat /home/alice/.ssh/id_rsa", 'open("/etc/passwd")', "GETS /etc/passwd"])
def test_local_paths_stay_masked(tmp_path, line):
    assert "[masked path]" in Masker.hiding_outside(tmp_path)(line)


_FP = _FINGERPRINTS[0]
# code that reads a secret from the environment is a placeholder; a comparison is not an assignment; a fingerprint
# after "key" (ssh -v, deploy keys) is still a public hash, whichever rule reads "key ... SHA256:" as a setting
CODE_AND_PROSE = [
    'password = os.environ["DB_PASSWORD"]', "password = os.getenv('DB_PASSWORD')",
    "db = connect(password=os.getenv('PW'))", 'token = os.environ.get("GH_TOKEN", "")',
    "const apiKey = process.env.API_KEY;", 'password: ENV.fetch("DB_PASSWORD")', "'password' => env('DB_PASSWORD'),",
    'String password = System.getenv("DB_PASSWORD");', 'apiKey := os.Getenv("API_KEY")',
    "if password == confirm_password:", "if (token === undefined) return;",
    f"ssh key fingerprint {_FP}", f"deploy key {_FP} added", f'Authenticated using "publickey" with key {_FP}',
    f"host_key {_FP}",
]


@pytest.mark.parametrize("line", CODE_AND_PROSE)
def test_environment_lookups_comparisons_and_fingerprints_are_left_alone(tmp_path, line):
    assert Masker.hiding_outside(tmp_path)(line) == line


@pytest.mark.parametrize("line, expected", [
    ("'password' => 'hunter2-Xq9',", f"'password' => {MASKED_SECRET},"),          # PHP, Ruby, Perl hashes
    ('"password" => "hunter2-Xq9"', f'"password" => {MASKED_SECRET}'),
    (":password => 'hunter2-Xq9'", f":password => {MASKED_SECRET}"),
    ('password := "hunter2-Xq9"', f"password := {MASKED_SECRET}"),                # Go
])
def test_a_hash_rocket_or_a_go_assignment_hides_the_value_whole(tmp_path, line, expected):
    assert Masker.hiding_outside(tmp_path)(line) == expected
