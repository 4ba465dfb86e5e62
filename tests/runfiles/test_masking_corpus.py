"""The masker against a corpus: invented credentials and local paths planted in several record positions must all be
hidden (0 leaked), and ordinary run-file lines must come out (nearly) unchanged.

Every value here is invented and built at run time from parts, so that no secret scanner mistakes the file for one
holding a real key.
"""
from __future__ import annotations

import json
import random
import re
import uuid
from collections.abc import Callable
from pathlib import Path

import pytest

from ladr_lab.runfiles import MASKED_PATH, MASKED_SECRET, Masker
from tests.runfiles.helpers import rec, search

RUN = "/srv/runs/r-17"
_RNG = random.Random(18)
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = UPPER.lower()
DIGITS = "0123456789"
ALNUM = UPPER + LOWER + DIGITS
B64 = ALNUM + "+/"


def rnd(n: int, alphabet: str = ALNUM) -> str:
    """An invented value of `n` characters (always with a digit, an upper and a lower letter when it can)."""
    s = "".join(_RNG.choice(alphabet) for _ in range(n))
    extra = [c for c in ("7", "Q", "k") if c in alphabet]
    return s[:-len(extra)] + "".join(extra) if n > 8 else s


def j(*parts: str) -> str:
    """Join parts: the prefixes of known key formats are never written whole in this file."""
    return "".join(parts)


def _secrets() -> list[tuple[str, str, list[str]]]:
    """(kind, fragment as it would sit in a record, the invented values that must not survive masking)."""
    out = []

    def add(kind: str, fragment: str, *needles: str) -> None:
        out.append((kind, fragment, list(needles)))

    v = j("AK", "IA", rnd(16, UPPER + DIGITS))
    add("aws key id", f"key id {v} in use", v)
    v = rnd(40, B64)
    add("aws secret env", f"{j('AWS_SECRET', '_ACCESS_KEY')}={v}", v)
    v = rnd(40, B64)
    add("aws secret ini", f"{j('aws_secret', '_access_key')} = {v}", v)
    v = rnd(40, B64)
    add("json SecretAccessKey", f'{{"{j("Secret", "AccessKey")}": "{v}"}}', v)
    v = rnd(120, B64) + "=="
    add("json SessionToken", f'{{"{j("Session", "Token")}": "{v}", "Expiration": "2026-10-21T18:00:00Z"}}', v[:40])
    v = rnd(48)
    add("json accessToken", f'{{"{j("access", "Token")}":"{v}","expires_in":3600}}', v)
    v = rnd(14)
    add("json dbPassword", f'{{"host": "db", "{j("db", "Password")}": "{v}"}}', v)
    v = rnd(40, ALNUM + "-._")
    add("lowercase bearer", f"{j('author', 'ization')}: {j('bea', 'rer')} {v}", v)
    v = rnd(40, LOWER + DIGITS)
    add("Authorization Token", f"Authorization: {j('To', 'ken')} {v}", v)
    v = rnd(48, ALNUM + "-._")
    add("Authorization Bearer", f"curl -H 'Authorization: Bearer {v}' https://api.example.com/v1", v)
    v = rnd(24, B64) + "="
    add("Authorization Basic", f"Authorization: Basic {v}", v)
    v = rnd(18)
    add("redis empty user", f"redis://:{v}@cache.internal:6379/0", v)
    v = rnd(16)
    add("postgres url", f"postgres://app:{v}@db.internal:5432/app", v)
    v = rnd(12)
    add("https url password", f"https://deploy:{v}@git.example.com/repo.git", v)
    v = j("xa", "pp-1-A0", rnd(9, UPPER + DIGITS), "-", rnd(13, DIGITS), "-", rnd(64, LOWER + DIGITS))
    add("slack xapp", f"app token {v}", v[10:])
    v = j("xo", "xb-", rnd(12, DIGITS), "-", rnd(13, DIGITS), "-", rnd(24))
    add("slack xoxb", f"SLACK_BOT={v}", v[5:])
    t, b, k = j("T", rnd(8, UPPER + DIGITS)), j("B", rnd(10, UPPER + DIGITS)), rnd(24)
    add("slack webhook", f"posting to https://{j('hooks.sl', 'ack.com')}/services/{t}/{b}/{k} now", t, b, k)
    v = rnd(16)
    add("DB_PASS", f"{j('DB_', 'PASS')}={v}", v)
    v = rnd(44, B64)
    add("ENCRYPTION_KEY", f"{j('ENCRYPTION', '_KEY')}={v}", v)
    v = rnd(64, LOWER + DIGITS)
    add("JWT_SIGNING_KEY", f"export {j('JWT_SIGNING', '_KEY')}={v}", v)
    v = j("np", "m_", rnd(36))
    add("npm token", f"//registry.npmjs.org/:_authToken={v}", v[4:])
    v = j("py", "pi-", "AgEIcHlwaS5vcmc", rnd(70, ALNUM + "-_"))
    add("pypi token", f"uploading with {v}", v[20:])
    v = j("h", "f_", rnd(34))
    add("hf token", f"HF token {v} loaded", v[3:])
    v = j("gh", "p_", rnd(36))
    add("github ghp", f"git clone https://{v}@github.com/acme/app.git", v[4:])
    v = j("github", "_pat_", rnd(22), "_", rnd(59))
    add("github pat", f"using {v}", v[11:])
    v = j("gl", "pat-", rnd(20, ALNUM + "-_"))
    add("gitlab", f"token {v}", v[6:])
    v = j("s", "k-", rnd(48))
    add("openai sk", f"OPENAI={v}", v[3:])
    v = j("s", "k-proj-", rnd(64, ALNUM + "-_"))
    add("openai sk-proj", f"key is {v}.", v[8:])
    v = j("s", "k-ant-api03-", rnd(80, ALNUM + "-_"))
    add("anthropic", f"client = Anthropic(api_key={v!r})", v[12:])
    v = j("AI", "za", "Sy", rnd(33, ALNUM + "-_"))
    add("google api key", f"maps?key={v}&q=x", v[4:])
    h = rnd(20, ALNUM + "-_")
    v = j("ey", "J", rnd(20, ALNUM + "-_"), ".ey", "J", rnd(40, ALNUM + "-_"), ".", h + rnd(23, ALNUM + "-_"))
    add("jwt", f"session cookie {v}", v[4:24], h)
    body = [rnd(64, B64) for _ in range(4)]
    v = "\n".join([j("-----BEGIN ", "RSA PRIVATE", " KEY-----"), *body, j("-----END ", "RSA PRIVATE", " KEY-----")])
    add("rsa private key block", f"key file:\n{v}\nend of file", *body)
    body = [rnd(70, B64) for _ in range(3)]
    v = "\n".join([j("-----BEGIN ", "OPENSSH PRIVATE", " KEY-----"), *body, j("-----END ", "OPENSSH PRIVATE", " KEY-----")])
    add("openssh private key block", v, *body)
    body = [rnd(64, B64) for _ in range(3)]
    pem = "\\n".join([j("-----BEGIN ", "PRIVATE", " KEY-----"), *body, j("-----END ", "PRIVATE", " KEY-----")])
    add("private key in service-account json", f'{{"type": "service_account", "{j("private", "_key")}": "{pem}\\n"}}',
        *body)
    v = rnd(14, ALNUM + "!@#%^&*")
    add("password= env", f"password={v}", v)
    v = rnd(20)
    add("yaml secret", f"  {j('sec', 'ret')}: {v}", v)
    v = rnd(32)
    add("json token", f'{{"{j("to", "ken")}": "{v}"}}', v)
    v = rnd(12)
    add("cli --password", f"mysql --user app --{j('pass', 'word')} {v} appdb", v)
    v = rnd(32)
    add("cli --api-key=", f"tool --{j('api', '-key')}={v} --verbose", v)
    v = rnd(32)
    add("cli --token", f"gh auth login --{j('to', 'ken')} {v}", v)
    v = j("sk", "_live_", rnd(24))
    add("stripe live", f"stripe {v}", v[8:])
    v = j("rk", "_test_", rnd(24))
    add("stripe restricted", f"STRIPE_RESTRICTED={v}", v[8:])
    v = rnd(86, B64) + "=="
    add("azure storage", f"DefaultEndpointsProtocol=https;AccountName=acme;{j('Account', 'Key')}={v};", v[:40])
    v = rnd(43, ALNUM + "%") + "%3D"
    add("azure sas", f"https://acme.blob.core.windows.net/c/x?sv=2022-11-02&{j('si', 'g')}={v}", v)
    v = rnd(32)
    add("json client_secret", f'{{"client_id": "abc", "{j("client", "_secret")}": "{v}"}}', v)
    v = rnd(32, LOWER + DIGITS)
    add("x-api-key header", f"X-Api-Key: {v}", v)
    v = rnd(24)
    add("passphrase yaml", f"passphrase: '{v}'", v)
    v = rnd(16)
    add("uppercase PASSWORD", f"export {j('PASS', 'WORD')}={v}", v)
    v = rnd(22)
    add("smtp pass", f"SMTP_PASS: {v}", v)
    v = j("SG", ".", rnd(22, ALNUM + "-_"), ".", rnd(43, ALNUM + "-_"))
    add("sendgrid", f"mail key {v}", v[3:])
    v = j("ya", "29.", rnd(60, ALNUM + "-_"))
    add("google oauth", f"access {v}", v[5:])
    # a key split over two lines of one record (a long value wrapped; the record's next line continued)
    v = rnd(64, B64)
    add("wrapped assignment", f"{j('api', '_key')} = {v[:40]}\n{v[40:]}", v[:40], v[40:])
    v = rnd(44, ALNUM + "-_")
    add("wrapped token", f"the key: {j('s', 'k-proj-')}{v[:12]}\n{v[12:]} was rotated", v[:12], v[12:])
    v = j("AK", "IA", rnd(16, UPPER + DIGITS))
    add("wrapped aws id", f"id {v[:10]}\n{v[10:]}", v[4:10], v[10:])
    v = rnd(60)
    add("wrapped json value", f'{{"{j("access", "Token")}": "{v[:30]}\n{v[30:]}"}}', v[:30], v[30:])
    return out


SECRETS = _secrets()
HOME = "al" + "ice"
PATHS = [  # (kind, fragment, what must not survive)
    ("home", f"read /home/{HOME}/.ssh/id_rsa", HOME),
    ("tilde", "cat ~/.aws/credentials", ".aws"),
    ("etc", "opened /etc/shadow", "shadow"),
    ("file url", f"file:///home/{HOME}/notes.txt", HOME),
    ("windows", f"C:\\Users\\{HOME}\\secret.txt", HOME),
    ("relative outside", f"copied ../../home/{HOME}/x to the run", HOME),
    ("relative via inside", f"wrote out/../../../home/{HOME}/y", HOME),
    ("space in path", f"/home/{HOME}/My Documents/secret.txt", "Documents/secret"),
    ("space in mac path", f"/Users/{HOME}/Library/Application Support/app/db.sqlite", "Support/app"),
    ("sibling run", f"{RUN}/../r-16/Alice.history", "r-16"),
    ("other tmp", "/tmp/other-run/notes.md", "other-run"),
]


def positions(fragment: str) -> dict[str, str]:
    """The fragment as a note, in a said message, inside a JSON record and on a command line."""
    return {
        "note": f"checking the deploy settings: {fragment} and then moving on",
        "said": f"said (round 1): I found {fragment}",
        "json": json.dumps({"tool": "read_file", "output": fragment, "ok": True}),
        "command": f"$ ./deploy.sh --verbose {fragment} --retry 3",
    }


def test_no_planted_secret_or_path_leaks() -> None:
    masker = Masker.hiding_outside(RUN)
    planted, leaked = 0, []
    for kind, fragment, needles in SECRETS + [(k, f, [n]) for k, f, n in PATHS]:
        for where, text in positions(fragment).items():
            planted += 1
            out = masker.mask(text)
            # a needle as the JSON position writes it (escaped) must be gone as well
            bad = [n for n in needles if n in out or json.dumps(n)[1:-1] in out]
            if bad or (MASKED_SECRET not in out and MASKED_PATH not in out):
                leaked.append((kind, where, out))
    assert len(SECRETS) >= 61 - 17 and len(PATHS) >= 11  # the kinds the issue names, and the common ones
    assert planted == 4 * (len(SECRETS) + len(PATHS))
    assert leaked == [], f"{len(leaked)} of {planted} leaked: {leaked[:5]}"


def _ordinary(n: int) -> list[str]:
    """`n` ordinary run-file lines: prose, code, paths inside the run, numbers, hashes, ids, URLs, JSON, commands."""
    rng = random.Random(4)
    words = ("the agent read the file and found that the key point was the second round while tokens used stayed "
             "low so it passed the tests bypass keyboard monkey compass secretary passenger authority credit "
             "credible basics bearing tokenizer keynote password policy requires twelve characters and a secret "
             "santa round answer question score ladder rung step plan retry budget").split()
    sha = lambda: f"{rng.getrandbits(160):040x}"  # noqa: E731
    makers: list[Callable[[], str]] = [
        lambda: " ".join(rng.choices(words, k=rng.randint(6, 20))).capitalize() + ".",
        lambda: f"def step_{rng.randint(1, 99)}(x, y): return x / y + {rng.randint(1, 9)}",
        lambda: f"for i in range({rng.randint(2, 50)}): total += scores[i] / 2",
        lambda: f"wrote {RUN}/out/step-{rng.randint(1, 99)}.json ({rng.randint(1, 9999)} bytes)",
        lambda: f"reading ./logs/round-{rng.randint(1, 9)}.txt and out/result-{rng.randint(1, 9)}.csv",
        lambda: f"took {rng.random() * 100:.2f} s, {rng.randint(1, 100)}/{rng.randint(100, 200)} passed",
        lambda: f"at commit {sha()} (HEAD -> main)",
        lambda: f"request id {uuid.UUID(int=rng.getrandbits(128))} finished",
        lambda: f"sha256:{sha()}{sha()[:24]} verified",
        lambda: f"image digest {''.join(rng.choices(ALNUM, k=22))} cached",
        lambda: f"see https://example.org/docs/{rng.randint(1, 999)}/index.html?page={rng.randint(1, 9)}",
        lambda: json.dumps({"round": rng.randint(1, 9), "score": round(rng.random(), 3), "max_tokens": 512,
                            "tokens_in": rng.randint(1, 9999), "model": "gpt-x", "primary_key": "id"}),
        lambda: f"$ python -m pytest -q tests/test_{rng.randint(1, 50)}.py --maxfail=1",
        lambda: f"git commit -m 'fix step {rng.randint(1, 9)}' && git push origin main",
        lambda: f"token_count={rng.randint(1, 4096)} temperature=0.{rng.randint(0, 9)} top_p=0.95",
        lambda: f"sort key: name, key point {rng.randint(1, 9)}, keys: {rng.randint(1, 30)}",
        lambda: f"date 2026-10-{rng.randint(10, 28)} 18:{rng.randint(10, 59)}:00, ratio 1/{rng.randint(2, 9)}",
        lambda: f"the password policy says {rng.randint(8, 16)} characters; the secret santa is on Friday",
        lambda: f"Bearer of news: round {rng.randint(1, 9)} passed, auth step skipped",
        lambda: f"answer: {rng.choice(words)} ({rng.randint(1, 99)}%), next: {rng.choice(words)}",
        lambda: f"base64 of the prompt is {''.join(rng.choices(B64, k=rng.randint(8, 40)))}= in the cache",
        lambda: f"if (a && b) {{ return c[{rng.randint(0, 9)}]; }} // keep the key order",
        lambda: f"ls -la {RUN}/out && wc -l {RUN}/Alice.history",
        lambda: f"export PYTHONPATH=$PWD && export STEP={rng.randint(1, 9)}",
        lambda: f"passed: {rng.randint(1, 300)}, failed: {rng.randint(0, 3)}, pass=ok",
    ]
    return [rng.choice(makers)() for _ in range(n)]


ORDINARY = _ordinary(1200)


def test_ordinary_lines_stay_as_they_are() -> None:
    masker = Masker.hiding_outside(RUN)
    changed = [(line, out) for line in ORDINARY if (out := masker.mask(line)) != line]
    assert len(ORDINARY) >= 1000
    assert len(changed) <= len(ORDINARY) // 100, f"{len(changed)} of {len(ORDINARY)} changed: {changed[:5]}"


@pytest.mark.parametrize("kind", ["lowercase bearer", "wrapped assignment", "json SecretAccessKey", "slack webhook",
                                  "rsa private key block"])
def test_the_index_neither_returns_nor_finds_a_planted_secret(tmp_path: Path, kind: str) -> None:
    _, fragment, needles = next(s for s in SECRETS if s[0] == kind)
    body = "".join(rec(f"18:00:0{i}", "Alice", f"kiwi {text}", "c") for i, text in enumerate(positions(fragment)
                                                                                              .values()))
    (tmp_path / "Alice.history").write_text(body)
    req = {"episode": 1, "conversation": "c", "top_k": 50}
    masker = Masker.hiding_outside(tmp_path)
    got = search(tmp_path, "kiwi", masker=masker, **req).pieces
    assert got and all(n not in p.text for p in got for n in needles)
    for n in needles:
        word = max(re.findall(r"[A-Za-z0-9]+", n), key=len)  # one whole word of the value, as a search is typed
        assert search(tmp_path, word, masker=masker, **req).pieces == [], n
        assert search(tmp_path, word, **req).pieces, n  # found without the masker
