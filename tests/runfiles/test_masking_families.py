"""Issue 29 item 8: the secret kinds that leaked from search output and `--json` (chat and SaaS tokens, payment
secrets, cloud secrets in prose, passwords handed to commands, cookies and URL keys, prose, nested YAML, XML,
here-strings) are hidden in six placements, searched through the index too; ordinary lines that look like them
(access logs, placeholders, ports, user ids, e-mail addresses) stay as they are.

Every value is invented and built at run time from parts, so that no secret scanner mistakes this file for one
holding a real key.
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path

import pytest

from ladr_lab.runfiles import MASKED_SECRET, Masker
from tests.runfiles.helpers import rec, search
from tests.runfiles.test_masking_rules import _leaked, placements

RUN = "/srv/runs/r-29"
_RNG = random.Random(29)
UPPER = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
LOWER = UPPER.lower()
DIGITS = "0123456789"
HEX = DIGITS + "abcdef"
ALNUM = UPPER + LOWER + DIGITS


def rnd(n: int, alphabet: str = ALNUM) -> str:
    """An invented value of `n` characters (with a digit, an upper and a lower letter when the alphabet has them)."""
    s = "".join(_RNG.choice(alphabet) for _ in range(n))
    extra = [c for c in ("7", "Q", "k") if c in alphabet]
    return s[:-len(extra)] + "".join(extra) if n > 8 else s


def j(*parts: str) -> str:
    """Join parts: the prefixes of known key formats are never written whole in this file."""
    return "".join(parts)


def _families() -> list[tuple[str, str, str]]:
    """(kind, fragment as a record would hold it, the invented secret that must not show)."""
    out: list[tuple[str, str, str]] = []

    def add(kind: str, fragment: str, secret: str) -> None:
        out.append((kind, fragment, secret))

    # chat and SaaS bot tokens and webhooks
    v = j(rnd(10, DIGITS), ":A", "A", rnd(33, ALNUM + "_-"))
    add("telegram bot token", f"bot token {v}", v)
    v = j(_RNG.choice("MNO"), rnd(25), ".", rnd(6), ".", rnd(38, ALNUM + "_-"))
    add("discord bot token", f"Authorization: Bot {v}", v)
    v = j("S", "K", rnd(32, HEX))
    add("twilio api key", f"twilio {v}", v)
    v = rnd(32, HEX)
    add("twilio auth token", f"TWILIO_AUTH_{j('TO', 'KEN')}={v}", v)
    v = j("ke", "y-", rnd(32, HEX))
    add("mailgun key", f"mail sent with {v}", v)
    v = rnd(32, HEX)
    add("sentry dsn", f"SENTRY_DSN https://{v}@o{rnd(6, DIGITS)}.ingest.sentry.io/{rnd(7, DIGITS)}", v)
    v = j("sntr", "yu_", rnd(64, HEX))
    add("sentry user token", f"using {v}", v)
    v = j("ATA", "TT3", rnd(186, ALNUM + "_-"))
    add("atlassian api token", f"jira {v}", v)
    v = j("PM", "AK-", rnd(24, HEX), "-", rnd(34, HEX))
    add("postman api key", f"postman {v}", v)
    v = j("nt", "n_", rnd(11, DIGITS), rnd(35))
    add("notion token", f"notion {v}", v)
    v = j("sec", "ret_", rnd(43))
    add("notion legacy token", f"integration {v}", v)
    v = j("NR", "AK-", rnd(27, UPPER + DIGITS))
    add("new relic user key", f"newrelic {v}", v)
    v = j("tsk", "ey-auth-", rnd(12), "-", rnd(30))
    add("tailscale auth key", f"tailscale up --authkey {v}", v)
    v = j("p", "k.ey", "J", rnd(60), ".", rnd(22))
    add("mapbox token", f"tiles?access={v}", v)
    v = j("A", "3-", rnd(6, UPPER + DIGITS), "-", rnd(11, UPPER + DIGITS), "-", rnd(5, UPPER + DIGITS), "-",
          rnd(5, UPPER + DIGITS), "-", rnd(5, UPPER + DIGITS))
    add("1password secret key", f"emergency kit {v}", v)
    v = j("AGE-SECRET", "-KEY-1", "".join(_RNG.choice("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L") for _ in range(58)))
    add("age secret key", f"# created: 2026-10-21\n{v}", v)
    # payment secrets
    v = j("whs", "ec_", rnd(32))
    add("stripe webhook secret", f"endpoint secret {v}", v)
    v = j("access_to", "ken$production$", rnd(16, LOWER + DIGITS), "$", rnd(32, HEX))
    add("braintree access token", f"gateway {v}", v)
    v = j("sq0", "csp-", rnd(43, ALNUM + "_-"))
    add("square oauth secret", f"square app {v}", v)
    v = j("EA", "AA", rnd(60, ALNUM + "_-"))
    add("square access token", f"square {v}", v)
    # cloud secrets in prose
    v = j(rnd(3), "8Q", "~", rnd(34, ALNUM + "_~.-"))
    add("aad client secret", f"the app's client secret is {v}", v)
    v = rnd(40, ALNUM + "/+")
    add("lone aws secret", f"the AWS secret {v} was rotated", v)
    v = j("1/", "/0", rnd(60, ALNUM + "_-"))
    add("google refresh token", f"refresh with {v}", v)
    # passwords handed to commands
    v = rnd(14)
    add("curl -u", f"curl -u admin:{v} https://api.example.com/v1", v)
    v = rnd(14)
    add("mysql -p", f"mysql -u root -p{v} -h db.internal appdb", v)
    v = rnd(14)
    add("PGPASSWORD", f"{j('PGPASS', 'WORD')}={v} psql -h db -U app", v)
    v = rnd(14)
    add("sshpass -p", f"sshpass -p {v} ssh deploy@10.0.0.7", v)
    v = rnd(14)
    add("openssl -passout", f"openssl pkcs12 -export -in c.pem -passout pass:{v} -out c.p12", v)
    v = rnd(14)
    add("keytool -storepass", f"keytool -list -keystore app.jks -storepass {v}", v)
    v = rnd(14)
    add("docker login -p", f"docker login -u ci -p {v} registry.example.com", v)
    v = rnd(14)
    add("sql identified by", f"CREATE USER 'app'@'%' IDENTIFIED BY '{v}';", v)
    v = rnd(14)
    add("sql with password", f"ALTER ROLE app WITH PASSWORD '{v}';", v)
    v = rnd(14)
    add(".netrc", f"machine api.example.com login alice password {v}", v)
    v = rnd(14)
    add(".netrc lines", f"machine api.example.com\n  login alice\n  password {v}", v)
    v = rnd(24, ALNUM + "+/") + "="
    add("docker config.json auth", json.dumps({"auths": {"registry.example.com": {"auth": v}}}), v)
    v = rnd(14)
    add("python auth tuple", f"requests.get(url, auth=('alice', '{v}'))", v)
    v = rnd(20)
    add("echo | --password-stdin", f"echo {v} | docker login -u ci --password-stdin", v)
    v = rnd(14)
    add("user:pass@host", f"ftp alice:{v}@files.example.com", v)
    v = rnd(14)
    add("redis-cli -a", f"redis-cli -h cache -a {v} ping", v)
    # cookies and URL keys
    v = rnd(32)
    add("cookie header", f"Cookie: theme=dark; sessionid={v}", v)
    v = rnd(32)
    add("set-cookie header", f"Set-Cookie: sid={v}; Path=/; HttpOnly; Secure", v)
    v = rnd(32)
    add("curl --cookie", f"curl --cookie 'session={v}' https://app.example.com", v)
    v = rnd(32)
    add("?key= in a URL", f"GET https://maps.example.com/api?key={v}&q=kiwi", v)
    v = rnd(40, HEX)
    add("&sig= in a URL", f"https://cdn.example.com/f.bin?exp=1700000000&sig={v}", v)
    # prose, nested YAML, XML, here-strings
    v = rnd(12)
    add("prose password", f"the admin password is {v}.", v)
    v = rnd(12)
    add("prose quoted", f"Use password '{v}' for the staging box", v)
    v = rnd(16)
    add("nested yaml pass", f"database:\n  user: app\n  pass: {v}\n  host: db", v)
    v = rnd(16)
    add("xml password", f"<server><id>nexus</id><password>{v}</password></server>", v)
    v = rnd(16)
    add("xml add key value", f'<add key="ApiSecret" value="{v}" />', v)
    v = j("gh", "p_", rnd(36))
    add("here-string token", f"gh auth login --with-token <<< {v}", v)
    v = rnd(24)
    add("here-string quoted", f'vault login - <<< "{v}"', v)
    return out


FAMILIES = _families()


def test_the_issues_families_are_all_planted() -> None:
    assert len(FAMILIES) >= 50 and len({k for k, _, _ in FAMILIES}) == len(FAMILIES)


def test_no_family_shows_in_any_placement() -> None:
    masker = Masker.hiding_outside(RUN)
    planted, leaked = 0, []
    for kind, fragment, secret in FAMILIES:
        for where, record in placements(fragment).items():
            planted += 1
            out = masker(record)
            if _leaked(secret, out) or MASKED_SECRET not in out:
                leaked.append((kind, where, out[:160]))
    assert planted == 6 * len(FAMILIES)
    assert leaked == [], f"{len(leaked)} of {planted} leaked: {leaked[:5]}"


@pytest.mark.parametrize("kind", ["telegram bot token", "curl -u", "cookie header", "prose password",
                                  "nested yaml pass", "docker config.json auth"])
def test_the_index_neither_returns_nor_finds_a_family(tmp_path: Path, kind: str) -> None:
    _, fragment, secret = next(f for f in FAMILIES if f[0] == kind)
    body = "".join(rec(f"18:00:0{i}", "Alice", f"kiwi {text}", "c")
                   for i, text in enumerate(placements(fragment).values()))
    (tmp_path / "Alice.history").write_text(body)
    req = {"episode": 1, "conversation": "c", "top_k": 50}
    masker = Masker.hiding_outside(tmp_path)
    got = search(tmp_path, "kiwi", masker=masker, **req).pieces
    assert got and not any(_leaked(secret, p.text) for p in got)
    word = max(re.findall(r"[A-Za-z0-9]+", secret), key=len)  # one whole word of the value, as a search is typed
    assert search(tmp_path, word, masker=masker, **req).pieces == []
    assert search(tmp_path, word, **req).pieces  # found without the masker


def _look_alikes() -> list[str]:
    """Ordinary lines that hold what the structural rules look for, and are no secret."""
    lines = []
    agents = ("Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36", "curl/8.5.0", "python-requests/2.32.3")
    routes = ("/api/v1/keys?page=2", "/login?next=home", "/static/app.js?v=3", "/auth/callback?state=ok",
              "/search?q=password+reset&lang=en", "/token/refresh", "/cookies", "/docs/api-key-rotation")
    for i, route in enumerate(routes):
        for agent in agents:
            lines.append(f'203.0.113.{i} - alice [21/Oct/2026:18:00:0{i} +0000] "GET {route} HTTP/1.1" 200 512 '
                         f'"https://example.com/" "{agent}"')
        lines.append(f"2026/10/21 18:00:0{i} [error] 7#7: *1 open() failed, request: \"GET {route} HTTP/1.1\"")
    for name in ("password", "pass", "token", "secret", "api_key", "auth", "cookie"):
        for ph in ("${SECRET}", "$SECRET", "{{ secret }}", "<secret>", "***", "%(secret)s"):
            lines += (f"{name}: {ph}", f"{name}={ph}", f'"{name}": "{ph}"')
    lines += [
        "docker run -u 1000:1000 -p 8080:80 app:latest",
        "ssh -p 2222 deploy@10.0.0.7",
        "mysql -u root -p appdb",
        "mysql -p -h db.internal",
        "sshpass -f pw.txt ssh host",
        "docker login -u ci --password-stdin registry.example.com",
        'echo "$TOKEN" | docker login -u ci --password-stdin',
        'bc <<< "1+2"',
        'grep kiwi <<< "$line"',
        "mail alice@example.com about the 10:30@office meeting",
        "mailto:alice@example.com",
        "git clone git@github.com:acme/app.git",
        "pass: ok",
        '{"pass": true, "reason": "the answer names the bay", "score": 0.9}',
        'colors = {"pass": "#1a7f37", "fail": "#cf222e"}',
        "pass=ok fail=0",
        "auth: required",
        '"auth": true',
        "auth=None",
        "The password is required.",
        "The password was reset yesterday.",
        "the token is valid for 3600 seconds",
        "the secret is out",
        "Set-Cookie flags: HttpOnly and Secure",
        "cookies: 3 set",
        "Cookie consent: accepted",
        "requests.get(url, auth=None, timeout=5)",
        "<password></password>",
        "<description>the password field</description>",
        "key=value pairs are split on '='",
        "https://example.com/search?q=kiwi&page=2",
        "https://example.com/callback?code=200",
        "CREATE TABLE users (id int, password_hash text);",
        "machine learning model login page",
        "at 12:30@home",
    ]
    return lines


LOOK_ALIKES = _look_alikes()


def test_look_alikes_stay_as_they_are() -> None:
    masker = Masker.hiding_outside(RUN)
    assert len(LOOK_ALIKES) >= 100
    changed = [(line, out) for line in LOOK_ALIKES if (out := masker(line)) != line]
    assert changed == []
