"""URLs as output shows them, the secrets they hold, and every form of a secret redacted.

:func:`shown_url` is one rule for every URL the bot prints (GitHub API, model server,
database): no user information, no fragment; of an HTTP(S) URL no query value, of a database URL
no secret one. :func:`read_url` also names the secrets found (for the runner's masking) and why
a URL cannot be shown; libpq reads a ``postgresql://`` URL. :class:`Redactor` removes every
printable form of a secret from text.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any
from urllib.parse import SplitResult, quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

from bot.neutralise import command_data, visible

__all__ = [
    "KEYWORD_STRING_PROBLEM",
    "LIBPQ_SCHEMES",
    "NO_SECRETS",
    "REDACTED",
    "Redactor",
    "UrlView",
    "libpq_keywords",
    "read_url",
    "redact",
    "redacted_excerpt",
    "secret_forms",
    "secret_name",
    "shown_url",
]

_SECRET_WORDS = ("pass", "pwd", "secret", "token", "key", "auth", "credential", "signature")
"""A query parameter or connection option whose name holds one of these holds a secret
(``password``, ``sslpassword``, ``access_token``, ``api_key``, ``oauth_client_secret`` …)."""

LIBPQ_SCHEMES = ("postgresql", "postgres")
"""The URI schemes of libpq's connection URIs."""

_WEB_SCHEMES = ("http", "https")
"""A URL of these schemes (the GitHub API, a model server) is shown with every query value
masked: a gateway's signature or code (``?sig=…``, ``?code=…``) need not have a secret name."""

_SHOWN_SCHEMES = (*_WEB_SCHEMES, *LIBPQ_SCHEMES)

LONG_VALUE_CHARS = 8
"""A query value of an HTTP(S) URL this long counts as a secret whatever its name: masked by
the runner and redacted from output. A shorter one (``v=1``) would blank ordinary text."""

REDACTED = "***"


def secret_name(name: str) -> bool:
    """Whether a query parameter or connection option of this name holds a secret."""
    lowered = name.lower()
    return any(word in lowered for word in _SECRET_WORDS)


@dataclass(frozen=True)
class UrlView:
    """A URL as the bot may print it (:func:`read_url`).

    Attributes:
        text: the URL without its user information (user name and password) and fragment,
            each secret query value as ``***`` (every one of an HTTP(S) URL); only
            ``scheme://…`` when ``problem`` is set or a secret is also part of the rest (a host
            named like the token).
        secrets: every secret value found (password, secret query values, an HTTP(S) URL's
            query values of :data:`LONG_VALUE_CHARS` or more and, for a database URL, libpq's
            secret options), decoded and as written, for the runner's masking and
            :func:`redact`.
        problem: why the URL cannot be shown part by part, and why a database URL must not be
            used (its parts may hold pieces of its password); ``None`` when it can.
    """

    text: str
    secrets: tuple[str, ...]
    problem: str | None


def _libpq_options(url: str) -> dict[str, str] | None:
    """The connection options libpq reads from ``url`` (psycopg's ``conninfo_to_dict``), or
    ``None`` when libpq cannot read it (its message repeats the URL: never shown)."""
    import psycopg  # only for a database URL: the CLI starts without it
    from psycopg.conninfo import conninfo_to_dict

    try:
        return {k: str(v) for k, v in conninfo_to_dict(url).items() if v is not None}
    except (psycopg.Error, ValueError):  # ValueError: text libpq cannot take (a lone surrogate)
        return None


def _query_pairs(query: str) -> list[tuple[str, str, str]]:
    """``(piece as written, name decoded, value as written)`` for each ``&``-separated piece."""
    pairs = []
    for piece in query.split("&") if query else []:
        name, _, value = piece.partition("=")
        pairs.append((piece, unquote_plus(name), value))
    return pairs


def _url_secrets(parts: SplitResult) -> set[str]:
    web = parts.scheme.lower() in _WEB_SCHEMES
    found: set[str] = set()
    if parts.password:
        found |= {parts.password, unquote(parts.password)}
    for _, name, value in _query_pairs(parts.query):
        decoded = unquote_plus(value)
        if value and (secret_name(name) or (web and len(decoded) >= LONG_VALUE_CHARS)):
            found |= {value, unquote(value), decoded}
    return found


def _without_secrets(text: str) -> str:
    """``text`` (a URL) without its user information, fragment and secret query values (every
    query value of an HTTP(S) URL).

    Raises:
        ValueError: ``urllib.parse`` cannot split it.
    """
    parts = urlsplit(text)
    host = parts.netloc.rpartition("@")[2]
    web = parts.scheme.lower() in _WEB_SCHEMES
    query = "&".join(
        f"{piece.partition('=')[0]}={REDACTED}"
        if (web and "=" in piece) or secret_name(name)
        else piece
        for piece, name, _ in _query_pairs(parts.query)
    )
    if not parts.netloc and not text.partition(":")[2].startswith("//"):  # e.g. "host:port"
        return urlunsplit((parts.scheme, host, parts.path, query, ""))
    return f"{parts.scheme}://{host}{parts.path}" + (f"?{query}" if query else "")


def _ports_ok(ports: str) -> bool:
    return all(p == "" or (p.isascii() and p.isdigit()) for p in ports.split(","))


def _libpq_disagrees(parts: SplitResult, options: dict[str, str]) -> bool:
    """Whether libpq reads another user name or password than the URL standard does (an
    unencoded ``@ / ? #`` in them: libpq takes the first ``@`` before a ``/`` as the end of the
    user information, RFC 3986 the last ``@`` before ``/ ? #``)."""
    standard = {
        "user": unquote(parts.username or ""),
        "password": unquote(parts.password or ""),
    }
    for _, name, value in _query_pairs(parts.query):
        if name in standard:
            standard[name] = unquote_plus(value)
    return any(options.get(key, "") != value for key, value in standard.items())


def _problem(text: str, options: dict[str, str] | None) -> str | None:
    """Why ``text`` cannot be shown part by part (see :attr:`UrlView.problem`), or ``None``."""
    try:
        parts = urlsplit(text)
        if options is None:
            parts.port  # noqa: B018  (raises ValueError for a port that is not a number)
    except ValueError:
        return "it cannot be read as a URL (its port, brackets or characters)"
    # libpq knows no fragment: a "#" is part of the host or database name it reads, so the
    # URL standard's split after a "#" in the password is not libpq's
    if options is not None and (_libpq_disagrees(parts, options) or "#" in text):
        return (
            "libpq would read its user name or password differently from the URL standard: "
            "percent-encode any @ : / ? # in them"
        )
    if "@" in _without_secrets(text):
        return "it has an @ outside its user name and password: percent-encode it as %40"
    if options is not None and not _ports_ok(options.get("port", "")):
        return "its port is not a number"
    return None


KEYWORD_STRING_PROBLEM = (
    "it is a libpq keyword string (host=… password=…), not a URL: give it as a postgresql:// URL"
)


def libpq_keywords(text: str) -> dict[str, str] | None:
    """The options of a libpq keyword string (``host=db password=…``), or ``None`` when
    ``text`` is not one (a URL, a file's path, anything libpq refuses)."""
    if "://" in text or "=" not in text:
        return None
    return _libpq_options(text) or None


def read_url(url: str) -> UrlView:
    """Read a URL the way the bot prints it: :class:`UrlView` (parsed with ``urllib.parse``;
    a ``postgresql://`` URL also with libpq's own parser, through psycopg). A libpq keyword
    string is read for its secrets and never shown."""
    text = url.strip()
    keywords = libpq_keywords(text)
    if keywords is not None:
        found = {v for k, v in keywords.items() if secret_name(k) and v}
        return UrlView(
            "…", tuple(sorted(found, key=lambda s: (-len(s), s))), KEYWORD_STRING_PROBLEM
        )
    scheme = text.partition("://")[0].lower() if "://" in text else ""
    secrets: set[str] = set()
    problem: str | None = None
    options: dict[str, str] | None = None
    if scheme in LIBPQ_SCHEMES:
        options = _libpq_options(text)
        if options is None:
            problem = (
                "libpq cannot read it as a connection URI (a % not followed by two hexadecimal "
                "digits, or a query option libpq does not know)"
            )
        else:
            secrets |= {v for k, v in options.items() if secret_name(k)}
    shown = ""
    try:
        parts = urlsplit(text)
        secrets |= _url_secrets(parts)
        shown = _without_secrets(text)
    except ValueError:
        pass
    problem = problem or _problem(text, options)
    secrets.discard("")
    # a secret that is also another part (a host named like the token): nothing can be shown
    repeated = any(form in shown for s in secrets for form in secret_forms(s))
    if problem is not None or repeated:
        shown = f"{scheme}://…" if scheme in _SHOWN_SCHEMES else "…"
    return UrlView(shown, tuple(sorted(secrets, key=lambda s: (-len(s), s))), problem)


def shown_url(value: Any) -> str:
    """A URL as output may show it (:attr:`UrlView.text`): one rule for every URL the bot
    prints, the GitHub API URL, the model server's (Ollama's or an OpenAI-compatible one's)
    and the database URL."""
    return read_url(str(value)).text


def secret_forms(secret: str) -> set[str]:
    """Every form in which ``secret`` may reach an output: as it is, percent-encoded (every
    reserved character, or all but ``/``; ``+`` for a space; hexadecimal in either case), with
    visible escapes, escaped for workflow-command data, inside a JSON string, base64-encoded
    on its own (standard or URL-safe alphabet, with or without padding) and its UTF-8 bytes in
    hexadecimal (either case). Not covered: reversed, spaced or split."""
    how = {"errors": "surrogatepass"}  # text from the environment may hold lone surrogates
    encoded = {quote(secret, "", **how), quote(secret, **how), quote_plus(secret, "", **how)}
    raw = secret.encode("utf-8", "surrogatepass")
    base64_forms = {f(raw).decode("ascii") for f in (base64.b64encode, base64.urlsafe_b64encode)}
    encoded |= base64_forms | {form.rstrip("=") for form in base64_forms}
    encoded |= {raw.hex(), raw.hex().upper()}
    lower_hex = {re.sub("%[0-9A-F]{2}", lambda m: m.group().lower(), e) for e in encoded}
    escaped = {
        visible(secret),
        command_data(secret),
        json.dumps(secret)[1:-1],
        json.dumps(secret, ensure_ascii=False)[1:-1],
    }
    return {form for form in {secret, *encoded, *lower_hex, *escaped} if form}


def redact(text: str, secrets: Iterable[str], *, min_chars: int = 1) -> str:
    """``text`` with every form (:func:`secret_forms`) of each secret of at least
    ``min_chars`` characters replaced by ``***``, longest first."""
    return Redactor.of(secrets, min_chars=min_chars)(text)


@dataclass(frozen=True)
class Redactor:
    """Replaces every form of a job's secrets (:func:`secret_forms`) by ``***``: the one
    redaction of GitHub writes, store rows and output.

    Attributes:
        forms: the forms to replace, longest first.
    """

    forms: tuple[str, ...] = ()

    @classmethod
    def of(cls, secrets: Iterable[str], *, min_chars: int = 1) -> Redactor:
        """The redactor of each secret of at least ``min_chars`` characters."""
        forms = {f for s in secrets if len(s) >= min_chars for f in secret_forms(s)}
        return cls(tuple(sorted(forms, key=lambda f: (-len(f), f))))

    def __call__(self, text: str) -> str:
        for form in self.forms:
            text = text.replace(form, REDACTED)
        return text

    def __add__(self, other: Redactor) -> Redactor:
        forms = set(self.forms) | set(other.forms)
        return Redactor(tuple(sorted(forms, key=lambda f: (-len(f), f))))


NO_SECRETS = Redactor()
"""A redactor with nothing to redact."""


def redacted_excerpt(text: str, secrets: Iterable[str], *, max_chars: int) -> str:
    """The start of ``text``, at most ``max_chars`` characters, with every form of each secret
    replaced (:func:`redact`) before the cut: a secret cut first, straddling the end, would be
    a piece no form matches."""
    return redact(text, secrets)[:max_chars]
