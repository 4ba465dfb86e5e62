"""Masking local paths and credentials (seed 004): evidence text passes through a Masker before it is indexed.

`Masker.hiding_outside(run_folder)` hides every local path outside the run folder (`PathRedactor`: absolute,
``~``, ``file://``, Windows, relative with ``..``, spaces inside) and credentials (`CredentialRedactor`: gitleaks'
rule set, vendored in `rules/`; structural rules for passwords handed to commands, ``user:pw@host``, XML, .netrc,
SQL, cookies, URL keys and prose; private-key blocks, tokens by their form, authorization headers, passwords in
URLs, settings whose name says secret in JSON, YAML, env and CLI flags, keys wrapped over lines). What a masker
hides is neither returned nor searched. Masking is off by default. The retriever masks a record whole before
cutting it into lines and pieces; a record whose lines arrive in separate reads (one still being written when a
search reads it) is masked in parts, so a key block over those lines can be left partly visible (the seed's known
limit).

Cost: one Aho-Corasick scan of each record (`may_hold_credential`) finds the keywords every rule needs and names
the rules to try; most records need none. docs/runfiles.md lists what is covered and what it costs.
"""
from __future__ import annotations

import bisect
import functools
import itertools
import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

from .rules import gitleaks

MASKED_PATH = "[masked path]"
MASKED_SECRET = "[masked secret]"

_PATH_END = r"""[^\s'"`<>|;:,(){}\[\]*?]"""
_SEG = r"""[^\s'"`<>|;:,(){}\[\]*?/\\]"""
# a path goes on after a space when one to three words and then a separator follow ("My Documents/x.txt")
_POSIX_MORE = rf"(?:(?:[ ]{_SEG}+){{1,3}}/{_PATH_END}*)*"
_WIN_MORE = rf"(?:(?:[ ]{_SEG}+){{1,3}}\\{_PATH_END}*)*"
# a POSIX absolute path: a "/" that no word, path or URL character precedes and that is not "//" (a URL)
# (each alternative starts with its "/" or "~" and looks behind it, so the scan skips to those two characters)
_POSIX_RE = re.compile(rf"(?:/(?<![\w/.~%-]/)|~(?<![\w/.~%-]~)[\w.-]*/)(?!/){_PATH_END}*{_POSIX_MORE}")
_FILE_URL_RE = re.compile(rf"\bfile://(?:localhost)?(/{_PATH_END}*{_POSIX_MORE})", re.IGNORECASE)
_WINDOWS_RE = re.compile(rf"(?<![\w/\\])(?:[A-Za-z]:\\|\\\\[\w.$-]+\\){_PATH_END}*{_WIN_MORE}")
# a relative path with a ".." part (taken from the run folder): "../../home/alice/x", "out/../../x"
_RELATIVE_RE = re.compile(rf"(?<![\w/.~%:@\\-])(?:[\w.-]+/)*\.\.(?:/{_PATH_END}*{_POSIX_MORE})?(?![\w.-])")
_TRAILING = ".:!?"
# an HTTP request path ("GET /api/v1/items?page=7 HTTP/1.1"): the path is the server's, not a local one
_HTTP_METHOD_BEFORE_RE = re.compile(r"(?<![\w-])(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS|CONNECT|TRACE) +\Z")
_TAG_RE = re.compile(r"/[A-Za-z_][\w:.-]*")
# an SSH key fingerprint: a public hash, neither a path (its base64 may hold "/") nor a secret
_FINGERPRINT_RE = re.compile(r"\bSHA256:[A-Za-z0-9+/]{43}=?(?![A-Za-z0-9+/=])|\bMD5:(?:[0-9a-fA-F]{2}:){15}[0-9a-fA-F]{2}\b")


class PathRedactor:
    """Hides local paths (POSIX, ``~``, ``file://``, Windows, and relative ones with ``..``) outside a folder."""

    def __init__(self, inside: str | Path, replacement: str = MASKED_PATH) -> None:
        folder = Path(inside).expanduser()
        roots = {os.path.normpath(os.path.abspath(folder))}
        try:
            roots.add(os.path.normpath(os.path.realpath(folder)))
        except OSError:  # pragma: no cover - realpath only fails on exotic file systems
            pass
        self.base = os.path.normpath(os.path.abspath(folder))  # what a relative path is taken from
        self.roots = sorted(roots)
        self.replacement = replacement
        self.name = "paths-outside-v2:" + "|".join(self.roots)  # v2: an index masked by v1 is built again

    def _inside(self, path: str) -> bool:
        path = os.path.expanduser(path)
        norm = os.path.normpath(os.path.join(self.base, path) if path[:1] == "." or "/.." in path else path)
        return any(norm == root or norm.startswith(root.rstrip(os.sep) + os.sep) for root in self.roots)

    def _sub(self, m: re.Match, group: int = 0) -> str:
        path = m.group(group)
        core = path.rstrip(_TRAILING)
        if not core.strip("/~") or self._inside(core):
            return m.group(0)
        prefix = m.group(0)[:m.start(group) - m.start(0)]
        return prefix + self.replacement + path[len(core):]

    def _posix_sub(self, m: re.Match) -> str:
        """`_sub` for a POSIX path, leaving an HTTP request path and a fingerprint's base64 alone."""
        start = m.start()
        text = m.string
        if _HTTP_METHOD_BEFORE_RE.search(text, max(0, start - 16), start):
            return m.group(0)
        if start and text[start - 1] == "<" and text[m.end():m.end() + 1] == ">" and _TAG_RE.fullmatch(m.group(0)):
            return m.group(0)  # an XML or HTML closing tag, "</password>"
        if ("SHA256:" in text or "MD5:" in text) and any(
                f.start() <= start < f.end() for f in _FINGERPRINT_RE.finditer(text, max(0, start - 60), start + 60)):
            return m.group(0)
        return self._sub(m)

    def redact(self, text: str) -> str:
        """`text` with every local path outside the folder replaced."""
        if "/" not in text and "\\" not in text:
            return text
        # each pattern only where what it needs is there (a URL is not a file:// one, "\\n" no Windows path)
        if "://" in text and "file://" in text.lower():
            text = _FILE_URL_RE.sub(lambda m: self._sub(m, 1), text)
        if ":\\" in text or "\\\\" in text:
            text = _WINDOWS_RE.sub(self._sub, text)
        if "/" in text or "~" in text:
            text = _POSIX_RE.sub(self._posix_sub, text)
        return _RELATIVE_RE.sub(self._sub, text) if ".." in text else text


_PEM_RE = re.compile(r"-----BEGIN ((?:[A-Z0-9]+ )*)PRIVATE KEY( BLOCK|)-----.*?"
                     r"(?:-----END \1PRIVATE KEY\2-----|\Z)", re.DOTALL)
# an END line whose BEGIN was in an earlier part of the record: hide from the start of this part
_PEM_ORPHAN_END_RE = re.compile(r"\A.*?-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----", re.DOTALL)
# a password in a URL, the user possibly empty ("redis://:pw@host")
_URL_PASSWORD_RE = re.compile(r"\b([a-zA-Z][a-zA-Z0-9+.-]*://[^\s:/@]*):([^\s/@]+)@")
_TOKEN_CHARS = r"[A-Za-z0-9\-._~+/]"
_AUTH_HEADER_RE = re.compile(
    r"""(?i)\b((?:proxy-)?authorization\\?["']?\s*[:=]\s*\\?["']?((?:bearer|basic|token|digest|negotiate|apikey)"""
    rf"""\s+)?)(?!\[masked )({_TOKEN_CHARS}+=*)""")
_AUTH_RE = re.compile(rf"\b(Bearer|Basic|bearer|basic|BEARER|BASIC)(\s+)(?!\[masked )({_TOKEN_CHARS}{{8,}}=*)")
# a name (JSON/YAML key, env variable, setting) followed by ":" or "=" and a value; `_secret_name` decides
_VALUE = r"""(\\?"(?:[^"\\\n]|\\[^"\n])*(?:\\?")?|\\?'[^'\n]*'|(?:\$\{[^}\s]*\}|[^\s,;"'}\]\\])+(?:\\[^"'][^\s,;"'}\]\\]*)*)"""
# (":" or "=", and the "=>" of PHP, Ruby and Perl hashes and the ":=" of Go)
_ASSIGN_RE = re.compile(rf"""(?<![\w.-])(\\?["']?)([A-Za-z_][\w.-]*)\1\s*(?:=>|:=|[:=](?![=>]))\s*(?!\[masked )(?={_VALUE})""")
# a command-line flag: --password hunter2, --api-key=..., -token x
_FLAG_RE = re.compile(rf"""(?<![\w-])--?([A-Za-z][\w-]*)(?:=|\s+)(?![-\[])(?={_VALUE})""")
_PARTS_RE = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|\d+")
_SECRET_PARTS = frozenset((
    "secret", "secrets", "password", "passwd", "passphrase", "passwort", "pwd", "token", "credential",
    "credentials", "apikey", "accountkey", "secretkey", "privatekey", "accesskey", "clientsecret", "authtoken",
    "accesstoken", "sastoken", "signingkey"))
# "KEY" is a secret after one of these words (API_KEY, SecretAccessKey, JWT_SIGNING_KEY, ENCRYPTION_KEY)
_KEY_QUALIFIERS = frozenset((
    "api", "access", "secret", "private", "signing", "sign", "encryption", "encrypt", "enc", "master", "client",
    "account", "auth", "session", "app", "license", "licence", "service", "shared", "storage", "deploy", "ssh",
    "gpg", "pgp", "hmac", "crypto", "jwt", "webhook", "subscription", "consumer", "admin", "root", "cipher", "aes",
    "rsa", "decryption", "hash", "salt", "cookie", "csrf", "xsrf", "license", "oauth", "bot"))
# a name ending in one of these says something about a secret, not the secret (token_count, password_file)
_NOT_SECRET_TAILS = frozenset((
    "count", "counts", "limit", "limits", "len", "length", "size", "type", "types", "usage", "budget", "file",
    "files", "path", "dir", "url", "uri", "endpoint", "policy", "min", "max", "total", "used", "rate", "cost",
    "estimate", "expiry", "expires", "expiration", "ttl", "timeout", "name", "names", "prefix", "kind", "mode",
    "format", "env", "var", "header", "field", "index", "hint", "required", "enabled", "set", "id", "ids",
    "strength", "rotation", "version", "source", "provider", "store", "vault", "manager", "hash", "hashed", "stdin",
    "prompt"))
# a placeholder for a secret, not one: ${DB_PASSWORD}, $DB_PASSWORD, {{ vault_token }}, <your-key>, %(SECRET)s, ***
# (quoted or not; ${NAME:-default} holds a default value and is hidden whole)
_PLACEHOLDER_RE = re.compile(
    r"""(\\?["']?)(?:\$\{[A-Za-z_][\w.]*\}|\$[A-Za-z_]\w*|\{\{[^{}\n]*\}\}|<[^<>\s"']+>|%\([\w.-]+\)[sd]|\*{3,}"""
    # code that reads the value from the environment: os.environ["X"], os.getenv('X'), process.env.X, ENV.fetch("X")
    r"""|(?:os\.environ(?:\.get)?|os\.[Gg]etenv|getenv|System\.getenv|ENV(?:\.fetch)?|env"""
    r"""|Environment\.GetEnvironmentVariable)\s*(?:\[[^\]\n]*\]|\([^)\n]*\))"""
    r"""|process\.env(?:\.[A-Za-z_]\w*|\[[^\]\n]*\]))\1"""
    r"""(?=$|[\s,;})\]\\])""")
_NOT_VALUES = frozenset(("true", "false", "null", "none", "nil", "yes", "no", '""', "''", "undefined", "{", "["))


# a lone "pass" (nested YAML "pass: x") or "auth" (docker's config.json, .npmrc's _auth) names a secret only when its
# value looks like one: "pass=ok", "auth: required" are not
_STATUS_WORDS = frozenset(("ok", "fail", "failed", "passed", "skip", "skipped", "error", "none", "n/a", "required",
                           "optional", "enabled", "disabled", "on", "off"))
# a part ending in one of these is a secret's name run together (PGPASSWORD, MYSQLPWD, APPSECRET, XTOKEN)
_COLOR_RE = re.compile(r"#(?:[0-9a-fA-F]{3}){1,2}")  # "pass": "#1a7f37", a colour
_SECRET_ENDINGS = ("password", "passwd", "secret", "token")
# keytool's and openssl's password flags (-storepass, -keypass, -passout), read as one word
_PASS_FLAGS = frozenset(("storepass", "keypass", "srcstorepass", "deststorepass", "srckeypass", "destkeypass",
                         "passin", "passout", "storepasswd", "keypasswd"))


def _secret_name(name: str, flag: bool = False, value: str = "") -> bool:
    """Whether a setting named `name` holds a secret (camelCase, snake_case, kebab-case and dotted names).

    A lone ``pass`` or ``auth`` is a secret's name only when `value` looks like a password (one word of letters and
    digits, a symbol or mixed case, not ``ok``/``failed``/…) or a key."""
    parts = [p.lower() for p in _PARTS_RE.findall(name)]
    if not parts or parts[-1] in _NOT_SECRET_TAILS or (flag and parts[0] == "no"):
        return False
    if parts in (["pass"], ["auth"]):
        v = value.strip("\\\"'")
        if parts == ["auth"]:
            return len(v) >= 8 and _looks_random(v)
        return v.lower() not in _STATUS_WORDS and _looks_like_password(v) and not any(c in v for c in " {}()[]<>") \
            and _COLOR_RE.fullmatch(v) is None
    for i, part in enumerate(parts):
        if part in _SECRET_PARTS or part in _PASS_FLAGS or (len(part) > 6 and part.endswith(_SECRET_ENDINGS)):
            return True
        if part == "key" and i and parts[i - 1] in _KEY_QUALIFIERS:
            return True
        if part == "pass" and i and i == len(parts) - 1:  # DB_PASS, SMTP_PASS (not a lone "pass=3")
            return True
    return False


_AWS_RE = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}\b")  # AWS key ids
# the token patterns, each named by what `_OLD_TRIGGERS` says it needs, in the order they are tried
_TOKEN_RULES = tuple((name, re.compile(rx)) for name, rx in (
    ("google", r"\bAIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),  # Google API keys
    ("oauth", r"\bya29\.[0-9A-Za-z_-]{20,}"),  # Google OAuth access tokens
    ("github", r"\b(?:gh[pousr]_[A-Za-z0-9]{36,255}|github_pat_[A-Za-z0-9_]{22,255})\b"),  # GitHub tokens
    ("gitlab", r"\bglpat-[A-Za-z0-9_-]{20,}"),  # GitLab tokens
    ("slack", r"\bx(?:ox[abposr]|app)-[A-Za-z0-9-]{10,}"),  # Slack tokens (bot, user, app-level)
    ("slack_hook", r"\bhooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/-]+"),  # Slack webhooks
    ("discord", r"\bdiscord(?:app)?\.com/api/webhooks/[0-9]+/[A-Za-z0-9_-]+"),  # Discord webhooks
    ("openai", r"\bsk-(?:proj-|ant-[a-z0-9]+-|svcacct-)?[A-Za-z0-9_-]{20,}"),  # OpenAI / Anthropic keys
    ("stripe", r"\b[rs]k_(?:live|test)_[A-Za-z0-9]{16,}"),  # Stripe keys
    ("npm", r"\bnpm_[A-Za-z0-9]{36}\b"),  # npm tokens
    ("pypi", r"\bpypi-[A-Za-z0-9_-]{50,}"),  # PyPI tokens
    ("hf", r"\bhf_[A-Za-z0-9]{30,}\b"),  # Hugging Face tokens
    ("sendgrid", r"\bSG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"),  # SendGrid keys
    ("digitalocean", r"\bdop_v1_[a-f0-9]{64}\b"),  # DigitalOcean tokens
    ("jwt", r"\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"),  # JSON web tokens
    ("sas", r"\bsig=[A-Za-z0-9%+/=]{20,}"),  # Azure SAS signatures
))
_AZURE_RE = re.compile(r"(?i:\b(?:AccountKey|SharedAccessKey)=[A-Za-z0-9+/=]{20,})")  # Azure storage / bus keys
# what each of the hand-written patterns above needs in the lower-cased text ("settings": `_settings`)
_OLD_TRIGGERS = {
    "settings": ("key", "token", "secret", "cred", "pass", "pwd", "auth"), "openai": ("sk-",),
    "stripe": ("k_live_", "k_test_"), "slack_hook": ("hooks.",), "discord": ("discord",), "pypi": ("pypi-",),
    "github": ("ghp_", "gho_", "ghu_", "ghs_", "ghr_", "github_pat_"), "npm": ("npm_",), "hf": ("hf_",),
    "digitalocean": ("dop_v1_",), "auth_header": ("authorization",), "auth": ("bearer", "basic"),
    "google": ("aiza",), "slack": ("xox", "xapp-"), "gitlab": ("glpat-",), "oauth": ("ya29.",), "url": ("://",),
    "sas": ("sig=",), "sendgrid": ("sg.",), "jwt": ("eyj",), "azure": ("accountkey", "sharedaccesskey"),
    "aws": ("akia", "asia", "abia", "acca", "agpa", "aida", "aipa", "anpa", "anva", "apka", "aroa", "asca"),
    "pem": ("private key",), "cookie": ("cookie", "-b "),
}
# the words a setting's name holds when `_secret_name` says it is a secret
_NAME_WORDS = ("secret", "pass", "pwd", "token", "key", "cred", "auth")
# two runs of key characters either side of a line break: a key wrapped before it could be recognised
_SPLIT_RE = re.compile(r"(?<![A-Za-z0-9+/=_.-])([A-Za-z0-9+/=_.-]{3,})(\n|\\n)([A-Za-z0-9+/=_.-]{3,})")


def _looks_random(s: str) -> bool:
    """Whether a run of key characters looks like part of a key rather than a word."""
    return (any(c.isdigit() for c in s) and any(c.isalpha() for c in s)) or any(c in "+/=_" for c in s) \
        or (len(s) >= 12 and not s.islower() and not s.isupper() and not s.istitle())


def _looks_like_password(s: str) -> bool:
    """Whether a bare word said to be a password looks like one: letters and digits, a symbol, or mixed case."""
    return len(s) >= 4 and not s.isdigit() and (_looks_random(s) or any(not c.isalnum() for c in s)
                                                or (not s.islower() and not s.isupper() and not s.istitle()))


def _not_placeholder(value: str) -> bool:
    """Whether `value` is a value, not a placeholder (``$VAR``, ``${VAR}``, ``<key>``, ``{{ x }}``, ``***``)."""
    return _PLACEHOLDER_RE.fullmatch(value) is None and not value.startswith(("$", "%", "<", "{{"))


_SCHEMES_NOT_USERS = frozenset(("mailto", "sip", "sips", "xmpp", "tel", "im", "news", "urn", "data", "cid", "mid"))
_COOKIE_ATTRS = frozenset(("path", "domain", "expires", "max-age", "samesite", "secure", "httponly", "priority",
                           "partitioned", "version", "comment"))
# a registry client's command before "login" on the same line, with no other command between
_REGISTRY_CLI_RE = re.compile(r"\b(?:docker|podman|buildah|skopeo|helm|nerdctl|oras|crane|regctl|cf|oc)\b[^\n|;&]*\Z")
_WORDY_LINE_RE = re.compile(r"(?i)login|passw|token|secret|auth|key|cred")
_COOKIE_RE = re.compile(r"""(?i)(?:\b(?:set-)?cookie\\?["']?\s*[:=]\s*\\?["']?|(?<![\w-])(?:-b|--cookie)\s+\\?["']?)""")
_COOKIE_PAIR_RE = re.compile(r"""\s*([^=;\s'"\\,]+)=([^;\s'"\\]*);?""")


def _cookie_spans(text: str) -> list[tuple[int, int]]:
    """The values of a ``Cookie:``/``Set-Cookie:`` header's pairs and of ``curl -b``/``--cookie`` (attributes stay)."""
    spans = []
    for head in _COOKIE_RE.finditer(text):
        at = head.end()
        while (m := _COOKIE_PAIR_RE.match(text, at)) and m.end() > at:
            if m.group(2) and m.group(1).lower() not in _COOKIE_ATTRS and _not_placeholder(m.group(2)):
                spans.append(m.span(2))
            at = m.end()
    return spans


# the structural rules no token-shape list has: (what the lower-cased text must hold, the pattern, the group to
# hide, a check of the match or None). Each value group takes a quote around the value out of the group.
_Q = r"""(\\?["']?)"""  # an optional quote (escaped in a JSON string) before a value; the value ends at its pair
_STRUCTURAL: tuple[tuple[tuple[str, ...], re.Pattern, int, Callable[[re.Match], bool] | None], ...] = tuple(
    (triggers, re.compile(rx), group, check) for triggers, rx, group, check in (
        # passwords handed to commands
        (("--user", "--proxy-user", "--auth", "--basic-auth", "--http-user"),
         r"""(?<![\w-])--(?:user|proxy-user|auth|basic-auth|http-user)(?:=|\s+)\\?['"]?[^\s:'"`\\]+\\?['"]?:"""
         r"""\\?['"]?([^\s'"`\\]+)""", 1, lambda m: not m.group(1).isdigit() and _not_placeholder(m.group(1))),
        ((" -u", "\t-u", " -a"), r"""\b(?:curl|https?|wget|httpie|xh)\b[^\n|;&]*?\s-[uaU]\s*\\?['"]?[^\s:'"`\\]+\\?['"]?:"""
                                  r"""\\?['"]?([^\s'"`\\]+)""",
         1, lambda m: not m.group(1).isdigit() and _not_placeholder(m.group(1))),
        (("mysql", "mariadb"), rf"""\b(?:mysql\w*|mariadb[\w-]*)\b[^\n|;&]*?\s-p(?!\s){_Q}([^\s'"`\\]+)\1""", 2,
         lambda m: _not_placeholder(m.group(2))),
        (("sshpass",), rf"""\bsshpass\s+(?:-[a-oq-zA-Z]\S*\s+)*-p\s*{_Q}([^\s'"`\\]+)\1""", 2,
         lambda m: _not_placeholder(m.group(2))),
        (("pass:",), rf"""(?<![\w-])pass:{_Q}([^\s'"`\\]+)\1""", 2, None),  # openssl -passin/-passout pass:...
        (("login",), rf"""\blogin\b[^\n|;&]*?\s-p\s*{_Q}([^\s'"\\-][^\s'"`\\]*)\1""", 2,
         lambda m: not m.group(2).isdigit() and _not_placeholder(m.group(2)) and _REGISTRY_CLI_RE.search(
             m.string, m.string.rfind("\n", 0, m.start()) + 1, m.start()) is not None),
        (("redis-cli",), rf"""\bredis-cli\b[^\n|;&]*?\s-a\s+{_Q}([^\s'"`\\]+)\1""", 2,
         lambda m: _not_placeholder(m.group(2))),
        (("password-stdin",), r"""\becho\s+(-n\s+)?(['"]?)([^\s'"|]+)\2\s*\|[^|\n]*--password-stdin""", 3,
         lambda m: _not_placeholder(m.group(3))),
        (("<<<",), rf"""<<<\s*{_Q}([^\s'"`\\]+)\1""", 2,
         lambda m: _not_placeholder(m.group(2)) and (
             _WORDY_LINE_RE.search(m.string, m.string.rfind("\n", 0, m.start()) + 1, m.start()) is not None
             or (len(m.group(2)) >= 12 and _looks_random(m.group(2))))),
        # user:password@host without a scheme, and a URL whose user alone is a key (a Sentry DSN)
        (("@",), r"""(?<![\w.%+/:@-])([A-Za-z_][\w.%+-]*):([^\s:/@'"\\]+)@(?=[A-Za-z0-9\[])""", 2,
         lambda m: m.group(1).lower() not in _SCHEMES_NOT_USERS),
        (("://",), r"""://([A-Za-z0-9_-]{16,})@""", 1, lambda m: _looks_random(m.group(1))),
        # settings in syntaxes the name/value scan does not read: XML elements and key/value attributes, Python's
        # auth tuple, .netrc, SQL
        (("</",), r"""<([\w:.-]+)(?:\s[^<>]*)?>([^<>\n]{1,200})</\1>""", 2,
         lambda m: _secret_name(m.group(1).rsplit(":", 1)[-1], value=m.group(2)) and _not_placeholder(m.group(2))),
        (("value",), r"""(?i)\b(?:key|name)\s*=\s*\\?(["'])([\w:.-]+)\\?\1\s+value\s*=\s*\\?(["'])([^"'\n\\]+)\\?\3""",
         4, lambda m: _secret_name(m.group(2), value=m.group(4)) and _not_placeholder(m.group(4))),
        (("auth",), r"""\b(?:auth|\w*BasicAuth|\w*DigestAuth|HTTPProxyAuth)\s*(?:=\s*)?[(\[]\s*(['"])[^'"\n]*\1\s*,"""
                    r"""\s*(['"])([^'"\n]+)\2""", 3, lambda m: _not_placeholder(m.group(3))),
        (("password",), r"""\b(?:machine|login)(?:\s|\\n)+\S+(?:\s|\\n)+(?:login(?:\s|\\n)+\S+(?:\s|\\n)+)?"""
                        r"""password(?:\s|\\n)+([^\s\\]+)""", 1, lambda m: _not_placeholder(m.group(1))),
        (("identified", "password"), r"""(?i)\b(?:identified\s+(?:with\s+\S+\s+)?by(?:\s+password)?|password)\s+"""
                                     r"""\\?(['"])([^'"\n\\]+)\\?\1""", 2, lambda m: _not_placeholder(m.group(2))),
        # prose: "the admin password is hunter2", "the token for staging was `ab12…`"
        (("password", "passwd", "passphrase", "passcode", "pwd", "secret", "token", "api key", "api_key", "api-key",
          "apikey", "credential"),
         r"""(?i)\b(?:password|passwd|passphrase|passcode|pwd|secret|token|api[ _-]?key|credentials?)"""
         r"""(?:\s+(?:for|of|to|on)\s+[^\s,;:]+)?\s+(?:is|was|are|were|is\s+now|set\s+to|changed\s+to|reset\s+to)"""
         r"""\s*:?\s+([`'"]?)([^\s`'"]+?)\1(?=[.,;:!?)]*(?:[\s`'"\\]|$))""", 2,
         lambda m: _not_placeholder(m.group(2)) and (len(m.group(2)) >= 4 if m.group(1)
                                                     else _looks_like_password(m.group(2)))),
        # a URL's query parameter named as a secret (?key=..., &sig=..., ?code=...)
        (("key=", "auth=", "sig=", "signature=", "token=", "code=", "secret=", "password=", "pass=", "pwd="),
         r"""(?i)[?&;](?:key|auth|sig|signature|x-amz-signature|x-amz-security-token|x-goog-signature|access_token"""
         r"""|token|apikey|api_key|api-key|secret|password|pass|pwd|client_secret|code)=([^&#\s'"\\]+)""", 1,
         lambda m: _not_placeholder(m.group(1)) and (not m.group(0)[1:].lower().startswith("code=")
                                                     or len(m.group(1)) >= 8)),
        # a lone AWS secret key in a record that says aws or secret
        (("aws", "secret"), r"""(?<![A-Za-z0-9/+=])([A-Za-z0-9/+]{40})(?![A-Za-z0-9/+=])""", 1,
         lambda m: any(c.isupper() for c in m.group(1)) and any(c.islower() for c in m.group(1))
         and any(c.isdigit() for c in m.group(1))),
        # token shapes the rule set lacks, or finds only beside a service's name
        (("1//0",), r"""\b1//0[A-Za-z0-9_-]{30,}""", 0, None),  # Google OAuth refresh tokens
        (("whsec_",), r"""\bwhsec_[A-Za-z0-9+/=]{24,}""", 0, None),  # Stripe webhook signing secrets
        (("access_token$",), r"""\baccess_token\$(?:production|sandbox)\$[a-z0-9]{16}\$[a-f0-9]{32}""", 0, None),
        (("sq0csp-",), r"""\bsq0csp-[A-Za-z0-9_-]{40,}""", 0, None),  # Square OAuth secrets
        ((":aa",), r"""\b\d{8,10}:AA[A-Za-z0-9_-]{33}(?![A-Za-z0-9_-])""", 0, None),  # Telegram bot tokens
        (("key-",), r"""\bkey-[a-f0-9]{32}\b""", 0, None),  # Mailgun keys
        (("secret_",), r"""\bsecret_[A-Za-z0-9]{43}\b""", 0, None),  # Notion integration tokens (before ntn_)
        (("tskey-",), r"""\btskey-[a-z]+-[A-Za-z0-9]{6,}-[A-Za-z0-9]{16,}""", 0, None),  # Tailscale keys
        (("nrak-",), r"""\bNRAK-[A-Z0-9]{27}\b""", 0, None),  # New Relic user keys
        (("k.eyj",), r"""\b[ps]k\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}""", 0, None),  # Mapbox tokens
        (("discord", "bot"), r"""\b[MNO][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,38}\b""", 0, None),
    ))


# what a record asks for: the rules, the structural rules (each with where its anchors are) and the old patterns
_Hits = tuple[dict[int, list[int]], dict[int, list[int]], set[str]]


class _Scanner:
    """One Aho-Corasick scan of the lower-cased text for every keyword any rule needs, and what each hit asks for.

    The automaton is `ahocorasick_rs` (Rust): one pass finds all of several hundred keywords, overlapping ones too,
    at about 100 MiB/s, where a Python alternation of them runs at under 20."""

    def __init__(self) -> None:
        from ahocorasick_rs import AhoCorasick, Implementation, MatchKind

        self.rules = gitleaks.load()
        # each keyword (and each anchor: what a rule's matches begin with) -> what it asks for
        wants: dict[str, set[tuple[str, int]]] = {}
        for i, rule in enumerate(self.rules.rules):
            for k in rule.keywords:
                wants.setdefault(k, set()).add(("rule", i))
            for k in rule.anchors or ():
                wants.setdefault(k, set()).add(("rule@", i))
        # a structural rule whose matches all begin with known strings is tried only where they are
        self.anchored = tuple(gitleaks.beginnings(rx.pattern, rx.flags) is not None for _, rx, _, _ in _STRUCTURAL)
        for i, (triggers, rx, _, _) in enumerate(_STRUCTURAL):
            for k in triggers:
                wants.setdefault(k, set()).add(("structural", i))
            for k in gitleaks.beginnings(rx.pattern, rx.flags) or ():
                wants.setdefault(k, set()).add(("structural@", i))
        for j, triggers in enumerate(_OLD_TRIGGERS.values()):
            for k in triggers:
                wants.setdefault(k, set()).add(("old", j))
        self._rule_anchored = tuple(rule.anchors is not None for rule in self.rules.rules)
        self.keywords = sorted(wants)
        self._wants = [tuple(sorted(wants[k])) for k in self.keywords]
        self._old_names = tuple(_OLD_TRIGGERS)
        # a DFA: larger (a few MiB for these keywords) and about twice as fast as the default automaton
        self._ac = AhoCorasick(self.keywords, matchkind=MatchKind.Standard, implementation=Implementation.DFA)

    def hits(self, low: str) -> _Hits | None:
        """What the lower-cased text asks for, or None: the rules and structural rules to try (those whose keywords
        or triggers it holds), each with where its anchors begin in `low`, and the hand-written patterns to try."""
        found = self._ac.find_matches_as_indexes(low, overlapping=True)
        if not found:
            return None
        at: dict[int, list[int]] = {}
        for i, start, _ in found:
            at.setdefault(i, []).append(start)
        rules: dict[int, list[int]] = {}
        structural: dict[int, list[int]] = {}
        rule_at: dict[int, list[int]] = {}
        structural_at: dict[int, list[int]] = {}
        old: set[str] = set()
        for i, starts in at.items():
            for kind, j in self._wants[i]:
                if kind == "rule":
                    rules[j] = []
                elif kind == "rule@":
                    rule_at.setdefault(j, []).extend(starts)
                elif kind == "structural":
                    structural[j] = []
                elif kind == "structural@":
                    structural_at.setdefault(j, []).extend(starts)
                else:
                    old.add(self._old_names[j])
        # a rule whose matches all begin with an anchor, and no anchor here, cannot match: it is not tried
        rules = {j: rule_at.get(j, []) for j in rules if j in rule_at or not self._rule_anchored[j]}
        structural = {j: structural_at.get(j, []) for j in structural if j in structural_at or not self.anchored[j]}
        return rules, structural, old


@functools.lru_cache(maxsize=1)
def _scanner() -> _Scanner:
    """The one scanner of this process (built on first use: the rules are compiled then)."""
    return _Scanner()


def may_hold_credential(text: str) -> bool:
    """Whether `text` holds any keyword some credential rule needs (the exact prefilter every record passes)."""
    return _scanner().hits(text.lower()) is not None


def _unescaped(text: str) -> tuple[str, Callable[[int], int]]:
    """`text` with each escaped quote (``\\"``, a JSON string's) unescaped, and where a position of it was in `text`."""
    if '\\"' not in text:
        return text, int
    parts = text.split('\\"')
    joins = list(itertools.accumulate(len(p) + 1 for p in parts[:-1]))  # after each unescaped quote, in the view
    return '"'.join(parts), lambda i: i + bisect.bisect_right(joins, i)


def _hide(text: str, spans: list[tuple[int, int]], replacement: str) -> str:
    """`text` with each of `spans` (possibly overlapping) replaced by `replacement`."""
    out: list[str] = []
    at = 0
    for start, end in sorted(spans):
        if end <= at:
            continue
        if start >= at:
            out += (text[at:start], replacement)
        at = end
    return "".join(out) + text[at:]


class CredentialRedactor:
    """Hides credentials: gitleaks' rule set, passwords handed to commands, secret settings in any syntax, URL
    passwords, cookies, prose ("the password is …"), private-key blocks and tokens by their form."""

    def __init__(self, replacement: str = MASKED_SECRET) -> None:
        self.replacement = replacement
        self._scan = _scanner()
        # v3 (issue 29): gitleaks' rules and the structural ones; v4: "=>" and ":=" assignments, environment lookups
        # as placeholders. The rule set's commit is in the name, so an index masked by another masker is built again
        self.name = f"credentials-v4+{self._scan.rules.label}"
        # a hidden value that ends a line, and the next line starting with what looks like the rest of it
        self._tail_re = re.compile(rf"(?m)({re.escape(replacement)}(?:\n|\\n))([A-Za-z0-9+/=_.-]+)(?=(\s|\\n)?(.?))")

    def _pass(self, text: str, hits: _Hits | None = None) -> str:
        """One pass of every rule over `text`, each tried only when the text holds what it needs (`hits`)."""
        low = text.lower()
        hits = hits or self._scan.hits(low)
        if hits is None:
            return text
        rule_at, structural, kinds = hits
        r = self.replacement
        view_hits: _Hits | None
        # the rules read a JSON string's escaped quotes as quotes: they run on the text unescaped, and what they find
        # is carried back to the text's own positions
        view, back = _unescaped(text)
        if view is not text:
            view_hits = self._scan.hits(view.lower())
            rule_at, structural = (view_hits[0], view_hits[1]) if view_hits else ({}, {})
        anchor = len(low) == len(text)  # lower-casing kept the positions (no rare letters): try rules where needed
        rules = self._scan.rules
        spans = rules.spans(view, [(rules.rules[i], where if anchor else None) for i, where in rule_at.items()])
        for i, where in structural.items():
            _, rx, group, check = _STRUCTURAL[i]
            found = (rx.match(view, p) for p in sorted(set(where))) if anchor and self._scan.anchored[i] \
                else rx.finditer(view)
            spans += [m.span(group) for m in found if m is not None and (check is None or check(m))]
        if "cookie" in kinds:
            spans += _cookie_spans(view)
        if spans and ("sha256:" in low or "md5:" in low):
            # a fingerprint is a public hash: a rule reading "key ... SHA256:<base64>" as a setting does not hide it
            prints = [f.span() for f in _FINGERPRINT_RE.finditer(view)]
            spans = [(s, e) for s, e in spans if not any(a <= s and e <= b for a, b in prints)]
        if spans:
            text = _hide(text, [(back(s), back(e - 1) + 1) for s, e in spans if e > s], r)
        if "url" in kinds and "@" in text:
            text = _URL_PASSWORD_RE.sub(self._url_password, text)
        if "auth_header" in kinds:
            text = _AUTH_HEADER_RE.sub(lambda m: m.group(1) + r if m.group(2) or len(m.group(3)) >= 16
                                       or _looks_random(m.group(3)) else m.group(0), text)
        if "auth" in kinds:
            text = _AUTH_RE.sub(lambda m: m.group(0) if m.group(1).islower() and not _looks_random(m.group(3))
                                else f"{m.group(1)}{m.group(2)}{r}", text)
        if "aws" in kinds:
            text = _AWS_RE.sub(r, text)
        for name, rx in _TOKEN_RULES:
            if name in kinds:
                text = rx.sub(r, text)
        if "azure" in kinds:
            text = _AZURE_RE.sub(r, text)
        return self._settings(text) if "settings" in kinds else text

    def _url_password(self, m: re.Match) -> str:
        """A URL's password hidden; its user too when that looks like a key (Sidekiq's, a DSN's)."""
        scheme, _, user = m.group(1).rpartition("//")
        if len(user) >= 8 and _looks_random(user):
            return f"{scheme}//{self.replacement}:{self.replacement}@"
        return f"{m.group(1)}:{self.replacement}@"

    def _settings(self, text: str) -> str:
        """Hide the value of each setting (``name: value``, ``name=value``, ``--name value``) named as a secret."""
        low = text.lower()
        if len(low) != len(text):  # lower-casing moved the positions (rare letters): try every name
            return self._values(text, _ASSIGN_RE.finditer(text), _FLAG_RE.finditer(text))
        starts = set()
        for word in _NAME_WORDS:  # a name holds one of these words: start from each, not from every position
            i = low.find(word)
            while i >= 0:
                j = i
                while j and (low[j - 1].isalnum() or low[j - 1] in "_.-"):
                    j -= 1
                starts.add(j)
                i = low.find(word, i + len(word))
        assigns: list[re.Match] = []
        flags: list[re.Match] = []
        for j in sorted(starts):
            if text[j] == "-" and (m := _FLAG_RE.match(text, j)):
                flags.append(m)
                continue
            k = j
            while k < len(text) and text[k] in "-.":
                k += 1
            for q in (k - 2, k - 1, k):  # the name quoted, escaped and quoted, or bare
                if q >= j - 2 and q >= 0 and (q == k or text[q] in "\\\"'") and (m := _ASSIGN_RE.match(text, q)):
                    assigns.append(m)
                    break
        return self._values(text, assigns, flags)

    def _values(self, text: str, assigns: Iterable[re.Match], flags: Iterable[re.Match]) -> str:
        """Hide the values of the settings found (`assigns`, `flags`: their matches) whose name says secret."""
        spans: list[tuple[int, int]] = []
        for matches, flag in ((assigns, False), (flags, True)):
            for m in matches:
                last = m.lastindex or 0  # the value is the last group, the name the one before it
                value = m.group(last)
                if value.lower() in _NOT_VALUES or _PLACEHOLDER_RE.match(text, m.end()) \
                        or _FINGERPRINT_RE.match(value.strip("\\\"'")) or value.startswith("="):  # a == b
                    continue
                if _secret_name(m.group(last - 1), flag, value):
                    spans.append((m.end(), m.end() + len(value)))
        return _hide(text, spans, self.replacement) if spans else text

    def redact(self, text: str) -> str:
        """`text` with every credential it recognises replaced."""
        hits = self._scan.hits(text.lower())
        if hits is None:
            return text
        r = self.replacement
        if "PRIVATE KEY" in text:
            text = _PEM_RE.sub(r, text)
            text = _PEM_ORPHAN_END_RE.sub(r, text)
            hits = None
        text = self._pass(text, hits)
        if "\n" in text or "\\n" in text:  # a line break, or one escaped in a JSON string
            text = _SPLIT_RE.sub(self._split, text)
            if r + "\n" in text or r + "\\n" in text:
                text = self._wrapped(text)
        return text

    def _split(self, m: re.Match) -> str:
        """A key cut by a line break: hide both halves when the joined runs hold a key the halves do not."""
        left, sep, right = m.groups()
        joined = left + right
        if self._pass(joined) == joined or self._pass(left) != left or self._pass(right) != right:
            return m.group(0)
        return f"{self.replacement}{sep}{self.replacement}"

    def _wrapped(self, text: str) -> str:
        """Hide the rest of a masked key wrapped onto the next lines (a long key or a value in a block)."""
        def sub(m: re.Match) -> str:
            run, space, after = m.group(2), m.group(3), m.group(4)
            whole_line = not after or space in ("\n", "\\n")
            if (len(run) >= 4 and _looks_random(run)) or (whole_line and len(run) >= 16):
                return m.group(1) + self.replacement
            return m.group(0)
        for _ in range(64):  # a key wrapped over many lines: each pass hides one more line
            new = self._tail_re.sub(sub, text)
            if new == text:
                break
            text = new
        return text


_MEMO_CHARS = 64
_MEMO_SIZE = 4096


class Masker:
    """Passes evidence text through redactors in order; `Masker.hiding_outside(run_folder)` is the usual one."""

    def __init__(self, *redactors: PathRedactor | CredentialRedactor | Callable[[str], str]) -> None:
        self.redactors = redactors
        self._steps = tuple(r.redact if hasattr(r, "redact") else r for r in redactors)
        self.name = "+".join(getattr(r, "name", getattr(r, "__qualname__", repr(r))) for r in redactors) or "none"
        # short texts come again and again (a record's conversation id, "has started episode 4."): masked once
        self._memo: dict[str, str] = {}

    @classmethod
    def hiding_outside(cls, run_folder: str | Path) -> Masker:
        """A masker hiding local paths outside `run_folder` and credentials."""
        return cls(CredentialRedactor(), PathRedactor(run_folder))

    @classmethod
    def credentials(cls) -> Masker:
        """A masker hiding credentials only."""
        return cls(CredentialRedactor())

    def mask(self, text: str) -> str:
        """`text` with what the redactors hide replaced."""
        short = len(text) <= _MEMO_CHARS
        if short and (done := self._memo.get(text)) is not None:
            return done
        out = text
        for step in self._steps:
            out = step(out)
        if short:
            if len(self._memo) >= _MEMO_SIZE:
                self._memo.clear()
            self._memo[text] = out
        return out

    __call__ = mask


__all__ = ["CredentialRedactor", "MASKED_PATH", "MASKED_SECRET", "Masker", "PathRedactor", "may_hold_credential"]
