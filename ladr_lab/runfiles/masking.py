"""Masking local paths and credentials (seed 004): evidence text passes through a Masker before it is indexed.

`Masker.hiding_outside(run_folder)` hides every local path outside the run folder (`PathRedactor`: absolute,
``~``, ``file://``, Windows, relative with ``..``, spaces inside) and credentials (`CredentialRedactor`:
private-key blocks, cloud and service tokens by their form, authorization headers, passwords in URLs, settings
whose name says secret in JSON, YAML, env and CLI flags, keys wrapped over lines). What a masker hides is neither
returned nor searched. Masking is off by default. The retriever masks a record whole before cutting it into lines
and pieces; a record whose lines arrive in separate reads (one still being written when a search reads it) is
masked in parts, so a key block over those lines can be left partly visible (the seed's known limit).

Cost: one prefilter scan of each record (`may_hold_credential`) names the patterns it can need; most records
need none. docs/runfiles.md lists what is covered and what it costs.
"""
from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterable
from pathlib import Path

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
        if ("SHA256:" in text or "MD5:" in text) and any(
                f.start() <= start < f.end() for f in _FINGERPRINT_RE.finditer(text, max(0, start - 60), start + 60)):
            return m.group(0)
        return self._sub(m)

    def redact(self, text: str) -> str:
        """`text` with every local path outside the folder replaced."""
        if "/" not in text and "\\" not in text:
            return text
        if "://" in text:
            text = _FILE_URL_RE.sub(lambda m: self._sub(m, 1), text)
        if "\\" in text:
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
_ASSIGN_RE = re.compile(rf"""(?<![\w.-])(\\?["']?)([A-Za-z_][\w.-]*)\1\s*[:=]\s*(?!\[masked )(?={_VALUE})""")
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
    "strength", "rotation", "version", "source", "provider", "store", "vault", "manager", "hash", "hashed"))
# a placeholder for a secret, not one: ${DB_PASSWORD}, $DB_PASSWORD, {{ vault_token }}, <your-key>, %(SECRET)s, ***
# (quoted or not; ${NAME:-default} holds a default value and is hidden whole)
_PLACEHOLDER_RE = re.compile(
    r"""(\\?["']?)(?:\$\{[A-Za-z_][\w.]*\}|\$[A-Za-z_]\w*|\{\{[^{}\n]*\}\}|<[^<>\s"']+>|%\([\w.-]+\)[sd]|\*{3,})\1"""
    r"""(?=$|[\s,;}\]\\])""")
_NOT_VALUES = frozenset(("true", "false", "null", "none", "nil", "yes", "no", '""', "''", "undefined", "{", "["))


def _secret_name(name: str, flag: bool = False) -> bool:
    """Whether a setting named `name` holds a secret (camelCase, snake_case, kebab-case and dotted names)."""
    parts = [p.lower() for p in _PARTS_RE.findall(name)]
    if not parts or parts[-1] in _NOT_SECRET_TAILS or (flag and parts[0] == "no"):
        return False
    for i, part in enumerate(parts):
        if part in _SECRET_PARTS:
            return True
        if part == "key" and i and parts[i - 1] in _KEY_QUALIFIERS:
            return True
        if part == "pass" and i and i == len(parts) - 1:  # DB_PASS, SMTP_PASS (not a lone "pass=3")
            return True
    return False


_AWS_RE = re.compile(r"\b(?:AKIA|ASIA|ABIA|ACCA|AGPA|AIDA|AIPA|ANPA|ANVA|APKA|AROA|ASCA)[A-Z0-9]{16}\b")  # AWS key ids
# the token patterns, each named by the group of `_TRIGGER_RE` that finds what it needs, in the order they are tried
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
_SETTINGS = frozenset(("settings_k", "settings_c", "settings_p"))
# the prefilter, and what each pattern needs: one scan of the lower-cased text for the substrings the patterns need,
# its group naming the pattern. Each alternative starts with a character rarer than the substring's first (a
# lookbehind checks the rest), so the scan skips most positions without trying anything.
_TRIGGER_RE = re.compile(
    r"k(?:(?P<settings_k>ey|en(?<=token))|(?P<openai>-(?<=sk-))|(?P<stripe>_live_|_test_)"
    r"|(?P<slack_hook>s\.(?<=hooks\.)))"
    r"|c(?:(?P<settings_c>ret(?<=secret)|red)|(?P<discord>ord(?<=discord)))"
    r"|p(?:(?P<settings_p>ass|wd)|(?P<pypi>ypi-))"
    r"|_(?:(?P<github>(?<=gh[pousr]_)|pat_(?<=github_pat_))|(?P<npm>(?<=npm_))|(?P<hf>(?<=hf_))"
    r"|(?P<digitalocean>v1_(?<=dop_v1_)))"
    r"|u(?P<auth_header>th(?<=auth))|b(?P<auth>earer|asic)|z(?P<google>a(?<=aiza))|x(?P<slack>ox|app-)"
    r"|-(?P<gitlab>(?<=glpat-))|9(?P<oauth>\.(?<=ya29\.))|:(?P<url>//)|=(?P<sas>(?<=sig=))|g(?P<sendgrid>\.(?<=sg\.))"
    r"|j(?P<jwt>(?<=eyj))")
_AWS_TRIGGER_RE = re.compile(r"A(?:KIA|SIA|BIA|CCA|GPA|IDA|IPA|NPA|NVA|PKA|ROA|SCA)")
# the words a setting's name holds when `_secret_name` says it is a secret
_NAME_WORDS = ("secret", "pass", "pwd", "token", "key", "cred")
# two runs of key characters either side of a line break: a key wrapped before it could be recognised
_SPLIT_RE = re.compile(r"(?<![A-Za-z0-9+/=_-])([A-Za-z0-9+/=_.-]{3,})(\n|\\n)([A-Za-z0-9+/=_.-]{3,})")


def may_hold_credential(text: str) -> bool:
    """Whether `text` contains any of the substrings every credential pattern needs (a cheap, exact prefilter)."""
    return _TRIGGER_RE.search(text.lower()) is not None or _AWS_TRIGGER_RE.search(text) is not None


def _looks_random(s: str) -> bool:
    """Whether a run of key characters looks like part of a key rather than a word."""
    return (any(c.isdigit() for c in s) and any(c.isalpha() for c in s)) or any(c in "+/=_" for c in s) \
        or (len(s) >= 12 and not s.islower() and not s.isupper() and not s.istitle())


class CredentialRedactor:
    """Hides credentials: private-key blocks, cloud and service keys, tokens, URL passwords, secret assignments."""

    name = "credentials-v2"  # v2 (issue 18): an index built with the v1 masker is built again

    def __init__(self, replacement: str = MASKED_SECRET) -> None:
        self.replacement = replacement
        # a hidden value that ends a line, and the next line starting with what looks like the rest of it
        self._tail_re = re.compile(rf"(?m)({re.escape(replacement)}(?:\n|\\n))([A-Za-z0-9+/=_.-]+)(?=(\s|\\n)?(.?))")

    def _pass(self, text: str) -> str:
        """One pass of every pattern over `text`, each tried only when the text holds what it needs."""
        r = self.replacement
        low = text.lower()
        kinds = {m.lastgroup for m in _TRIGGER_RE.finditer(low)}
        if "url" in kinds and "@" in text:
            text = _URL_PASSWORD_RE.sub(lambda m: f"{m.group(1)}:{r}@", text)
        if "auth_header" in kinds and "authorization" in low:
            text = _AUTH_HEADER_RE.sub(lambda m: m.group(1) + r if m.group(2) or len(m.group(3)) >= 16
                                       or _looks_random(m.group(3)) else m.group(0), text)
        if "auth" in kinds:
            text = _AUTH_RE.sub(lambda m: m.group(0) if m.group(1).islower() and not _looks_random(m.group(3))
                                else f"{m.group(1)}{m.group(2)}{r}", text)
        if _AWS_TRIGGER_RE.search(text) is not None:
            text = _AWS_RE.sub(r, text)
        for name, rx in _TOKEN_RULES:
            if name in kinds:
                text = rx.sub(r, text)
        if kinds.isdisjoint(_SETTINGS):
            return text
        if "accountkey" in low or "sharedaccesskey" in low:
            text = _AZURE_RE.sub(r, text)
        return self._settings(text)

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
                        or _FINGERPRINT_RE.match(value.strip("\\\"'")):
                    continue
                if _secret_name(m.group(last - 1), flag):
                    spans.append((m.end(), m.end() + len(value)))
        if not spans:
            return text
        out: list[str] = []
        at = 0
        for start, end in sorted(spans):
            if start >= at:
                out += (text[at:start], self.replacement)
                at = end
        return "".join(out) + text[at:]

    def redact(self, text: str) -> str:
        """`text` with every credential it recognises replaced."""
        if _TRIGGER_RE.search(text.lower()) is None and _AWS_TRIGGER_RE.search(text) is None:
            return text
        r = self.replacement
        if "PRIVATE KEY" in text:
            text = _PEM_RE.sub(r, text)
            text = _PEM_ORPHAN_END_RE.sub(r, text)
        text = self._pass(text)
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


class Masker:
    """Passes evidence text through redactors in order; `Masker.hiding_outside(run_folder)` is the usual one."""

    def __init__(self, *redactors: PathRedactor | CredentialRedactor | Callable[[str], str]) -> None:
        self.redactors = redactors
        self._steps = tuple(r.redact if hasattr(r, "redact") else r for r in redactors)
        self.name = "+".join(getattr(r, "name", getattr(r, "__qualname__", repr(r))) for r in redactors) or "none"

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
        for step in self._steps:
            text = step(text)
        return text

    __call__ = mask


__all__ = ["CredentialRedactor", "MASKED_PATH", "MASKED_SECRET", "Masker", "PathRedactor", "may_hold_credential"]
