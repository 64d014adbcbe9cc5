"""The sinks for untrusted text: one function per place text leaves the bot.

Untrusted text is model output, file paths, issue and comment text, label names and exception
messages that may echo any of those. Each sink makes it inert *by construction* — it never
decides whether a piece of markdown is dangerous, it rebuilds the text so that no syntax
survives except what the sink itself writes:

* :func:`neutralise` — inline markdown (a paragraph, a table cell, a list item). Every ASCII
  punctuation character that CommonMark or GitHub gives a meaning to is backslash-escaped
  (backticks as ``&#96;``, so no backtick run can form), ``@`` is followed by a zero-width
  space (no mention, no e-mail autolink), whitespace is collapsed (no line structure). Text
  between two equal backtick runs is re-emitted by :func:`code_span`, so code stays readable.
* :func:`neutralise_block` — multi-line markdown. Each line is inline text as above; the only
  structure kept is the list marker at a line's start and fenced code, re-emitted in a fence
  longer than any backtick run inside it and always closed (an unclosed fence in model text
  cannot swallow what the bot writes after it).
* :func:`code_span` / :func:`code_block` — inline or fenced code whose delimiter is longer
  than any backtick run in it.
* :func:`chart_label` — a quoted label inside the bot's own mermaid chart (a week on the
  x-axis): one line of letters, digits and ``-.:/_+``; anything else becomes ``?``.
* :func:`html_text` — text inside raw HTML the bot writes (``<summary>…</summary>``): markdown
  does not apply there (CommonMark HTML blocks), so it is HTML-escaped instead.
* :func:`log_value` / :func:`log_text` — text for people on stdout or stderr (one line, or
  lines kept), shown as it is: only control, format, private-use and unassigned characters and
  line separators become visible escapes (``\x1b``, ``\u2028``; ``\n`` in a one-line
  value), and a zero-width space keeps any line from starting a workflow command (see
  :func:`log_text`). No percent-encoding: that belongs to workflow commands.
* :func:`command_data` — the data of a workflow command (``::warning::…``, ``::add-mask::…``),
  escaped as GitHub's toolkit escapes it (``%25``, ``%0D``, ``%0A``): the only place the bot
  percent-encodes printed text.
* :func:`escape_delimiters` / :func:`escape_special_tokens` — untrusted text inside a prompt's
  delimited block (the issue in ``<issue>``, the code in the audit's block): a tag that would
  open or close the block, and a chat-template control token written as text, lose their first
  character to an entity, so the text can neither leave its block nor forge a chat turn.
* :func:`shown_url` — a URL (GitHub API, model server, database) as any output may show it: no
  user information, no fragment; of an HTTP(S) URL no query value at all, of a database URL no
  secret one (libpq's other options say how it connects); :func:`read_url` also names the
  secrets found (for the runner's masking) and why a URL cannot be shown, and :func:`redact`
  removes every printable form of a secret from text.

The oracle for every markdown sink is a real CommonMark renderer with tables and raw HTML on
(markdown-it-py), in tests/test_neutralise.py and benchmarks/reliability.py.
"""

from __future__ import annotations

import base64
import html
import json
import re
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import cache
from typing import Any
from urllib.parse import SplitResult, quote, quote_plus, unquote, unquote_plus, urlsplit, urlunsplit

__all__ = [
    "LIBPQ_SCHEMES",
    "NO_SECRETS",
    "Redactor",
    "UrlView",
    "chart_label",
    "code_block",
    "code_span",
    "command_data",
    "escape_delimiters",
    "escape_special_tokens",
    "html_text",
    "json_line",
    "log_text",
    "log_value",
    "neutralise",
    "neutralise_block",
    "read_url",
    "redact",
    "redacted_excerpt",
    "secret_forms",
    "secret_name",
    "shown_url",
]

ZWSP = "\u200b"
"""Zero-width space: follows every ``@`` so GitHub links no mention and no e-mail address."""

_SYNTAX = frozenset("\\*_[]<>!|~&#$:.()")
"""ASCII punctuation escaped with a backslash: emphasis, links and images, raw HTML and
entities, tables, strikethrough, headings and issue references, math, autolinks
(``http:``, ``www.``), ordered-list markers. Backticks are written as ``&#96;``."""

_LINE_START = frozenset("-+=")
"""Escaped only at the start of inline text: list markers, setext underlines."""

_RUN = re.compile(r"`+")
_LIST_MARKER = re.compile(r"([-*+]|[0-9]{1,9}[.)])[ \t]+")
_FENCE = re.compile(r"(`{3,}|~{3,})(.*)$")


@cache
def _tag_like(tag: str) -> re.Pattern[str]:
    # "\s*(?:/\s*)?" rather than "\s*/?\s*": unambiguous, so no quadratic backtracking.
    return re.compile(rf"<(?=\s*(?:/\s*)?{re.escape(tag)})", re.IGNORECASE)


_SPECIAL_TOKEN = re.compile(
    "|".join(
        (
            r"<(?=\|[^<>|\n]{1,40}\|>)",  # ChatML, Llama 3, Phi, Qwen FIM: <|im_start|>
            r"<(?=\uff5c[^<>\uff5c\n]{1,40}\uff5c>)",  # DeepSeek: <｜begin▁of▁sentence｜>
            r"<(?=/?[a-z]+(?:_[a-z]+)*_of_[a-z_]+>)",  # Gemma: <start_of_turn>, <end_of_image>
            r"<(?=unused[0-9]{1,4}>)",  # Gemma's reserved <unused0> … <unused6241>
            r"<(?=/?(?:s|bos|eos|pad|unk|mask|cls|sep)>)",  # SentencePiece/BERT control tokens
            r"<(?=/?(?:think|thinking|tool_call|tool_response|tools)>)",  # reasoning/tool tags
            r"<(?=<\s*/?\s*SYS\s*>>)",  # Llama 2: <<SYS>> <</SYS>>
            r"\[(?=/?(?:INST|[A-Z]+(?:_[A-Z]+)+)\])",  # Llama 2/Mistral: [INST] [TOOL_CALLS]
        )
    ),
    re.IGNORECASE,
)
"""Chat-template control tokens by family pattern (not a list of names): what a tokenizer
could read as a special token when the prompt is tokenised with special tokens parsed. The
first character is made inert (``<`` → ``&lt;``, ``[`` → ``&#91;``). The Mistral pattern is
upper-case words joined by ``_`` (``[TOOL_CALLS]``) or ``INST``, so ``[BUG]`` stays as written;
IGNORECASE applies to it too, which also catches ``[inst]``."""


def escape_delimiters(text: str, tag: str = "issue") -> str:
    """Make ``<TAG`` / ``</TAG`` (any case, any spacing) inside untrusted text inert
    (``<`` → ``&lt;``), so the text cannot open or close its delimiter."""
    return escape_special_tokens(_tag_like(tag).sub("&lt;", text))


def escape_special_tokens(text: str) -> str:
    """Make chat-template control tokens written as text inert: their first character
    becomes an entity (``<`` → ``&lt;``, ``[`` → ``&#91;``), for every family
    :data:`_SPECIAL_TOKEN` knows."""
    return _SPECIAL_TOKEN.sub(lambda m: "&lt;" if m.group() == "<" else "&#91;", text)


def _cap(text: str, max_chars: int) -> str:
    return text if len(text) <= max_chars else text[: max_chars - 1] + "…"


_GITHUB_LINKS = re.compile(
    r"(?<=#)(?=[A-Za-z0-9])"  # issue and PR references: #12, owner/repo#12
    r"|(?<=\bGH)(?=-[0-9])"  # GH-12
    r"|(?<=:)(?=[A-Za-z0-9_+-]+:)",  # emoji shortcodes :rocket: (any case, to be safe)
)
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])[0-9A-Fa-f]{7,}(?![0-9A-Za-z])")


def _unlinked(text: str) -> str:
    """A zero-width space wherever github.com links or replaces text *after* rendering, so a
    backslash escape cannot stop it: issue and PR references, ``GH-`` numbers, emoji
    shortcodes, and hex runs a commit SHA could match (one every six digits)."""
    text = _GITHUB_LINKS.sub(ZWSP, text)
    return _HEX_RUN.sub(lambda m: ZWSP.join(re.findall(".{1,6}", m.group())), text)


def _hidden(ch: str) -> bool:
    """Control, format (bidi overrides, zero-width), private-use and unassigned characters."""
    return unicodedata.category(ch) in ("Cc", "Cf", "Co", "Cn", "Zl", "Zp")


def _escape_plain(text: str, *, at_line_start: bool) -> str:
    out: list[str] = []
    for at, ch in enumerate(_unlinked(text)):
        if ch == "`":
            out.append("&#96;")
        elif ch == "@":
            out.append("@" + ZWSP)
        elif ch in _SYNTAX or (at == 0 and at_line_start and ch in _LINE_START):
            out.append("\\" + ch)
        elif ch != ZWSP and _hidden(ch):
            out.append(_visible(ch))
        else:
            out.append(ch)
    return "".join(out)


def _visible(text: str) -> str:
    """Control characters shown as escapes (``\\n``, ``\\x00``): code spans have no lines."""
    return "".join(
        ch if ch.isprintable() or ch == " " else ch.encode("unicode_escape").decode("ascii")
        for ch in text
    )


def code_span(text: str, *, max_chars: int = 300, table: bool = False) -> str:
    """Inline code showing ``text`` exactly (control characters as escapes; the shown text
    cut at ``max_chars`` with ``…``): the delimiter is one backtick longer than the longest run
    inside, padded with a space where CommonMark strips one. ``table=True`` escapes ``|``
    (GFM splits table cells before it reads code spans)."""
    content = _cap(_visible(text), max_chars) or " "
    longest = max((len(run) for run in _RUN.findall(content)), default=0)
    fence = "`" * (longest + 1)
    if content.strip(" ") and (content[0] in "` " or content[-1] in "` "):
        content = f" {content} "
    if table:
        content = content.replace("|", "\\|")
    return f"{fence}{content}{fence}"


def _inline(text: str, *, table: bool, at_line_start: bool) -> str:
    """Escaped text with equal backtick runs on the line re-emitted as code spans."""
    out: list[str] = []
    last = 0
    runs = list(_RUN.finditer(text))
    used = -1
    for i, run in enumerate(runs):
        if i <= used:
            continue
        same = (j for j in range(i + 1, len(runs)) if runs[j].group() == run.group())
        closing = next(same, None)
        if closing is None:
            continue
        inner = text[run.end() : runs[closing].start()]
        if not inner.strip(" "):
            continue
        head = text[last : run.start()]
        out.append(_escape_plain(head, at_line_start=at_line_start and not out))
        out.append(code_span(inner.strip(" "), table=table))
        last = runs[closing].end()
        used = closing
    out.append(_escape_plain(text[last:], at_line_start=at_line_start and not out))
    return "".join(out)


def _fitted(source: str, build: Callable[[str], str], max_chars: int) -> str:
    """``build(source)``, with ``source`` cut (``…``) until the result is at most ``max_chars``
    long: escapes make the markdown longer than its text, and the bound is on what is posted."""
    while True:
        out = build(source)
        if len(out) <= max_chars or len(source) <= 1:
            return out
        source = _cap(source, max(1, min(len(source) - 1, len(source) * max_chars // len(out))))


def neutralise(text: str, *, max_chars: int = 1000, table: bool = False) -> str:
    """One line of inert markdown showing ``text`` (whitespace collapsed), at most ``max_chars``
    characters long (the text is cut with ``…`` to fit). Safe anywhere inline, at a line's
    start too; ``table=True`` for a GFM table cell."""
    flat = " ".join(text.split())
    return _fitted(flat, lambda t: _inline(t, table=table, at_line_start=True), max_chars)


def code_block(lines: Sequence[str]) -> str:
    """Fenced code showing ``lines`` exactly (control characters as escapes): the fence is a
    backtick run longer than any inside, so no line can close it. It carries no info string:
    on github.com ```mermaid, ```geojson, ```topojson, ```stl and ```math fences render as
    diagrams, maps, models and formulas, which untrusted text must not get."""
    shown = [_visible(line) for line in lines]
    longest = max((len(r) for line in shown for r in _RUN.findall(line)), default=0)
    fence = "`" * max(3, longest + 1)
    return "\n".join([fence, *shown, fence])


def _block(text: str) -> str:
    out: list[str] = []
    code: list[str] | None = None
    closer = ""
    for raw in text.splitlines():
        line = raw.rstrip().replace("\t", "    ")
        stripped = line.lstrip(" ")
        fence = _FENCE.match(stripped)
        if code is not None:
            run, rest = (fence.group(1), fence.group(2)) if fence else ("", "x")
            if run[:1] == closer[0] and len(run) >= len(closer) and not rest.strip():
                out.append(code_block(code))
                code = None
                continue
            code.append(line)
            continue
        if fence and not (fence.group(1)[0] == "`" and "`" in fence.group(2)):
            closer, code = fence.group(1), []
            continue
        if not stripped:
            if out and out[-1]:
                out.append("")
            continue
        marker = _LIST_MARKER.match(stripped)
        if marker:  # nesting kept: indentation only ever makes a list or literal code
            indent = " " * min(len(line) - len(stripped), 12)
            rest = _inline(
                " ".join(stripped[marker.end() :].split()), table=False, at_line_start=True
            )
            out.append(f"{indent}{marker.group(1)} {rest}")
        else:
            out.append(_inline(" ".join(stripped.split()), table=False, at_line_start=True))
    if code is not None:
        out.append(code_block(code))
    return "\n".join(out).strip("\n")


def neutralise_block(text: str, *, max_chars: int = 8000) -> str:
    """Multi-line inert markdown showing ``text``, at most ``max_chars`` characters long (the
    text is cut with ``…`` to fit).

    Kept: line breaks (one blank line at most between paragraphs), a list marker at a line's
    start with its indentation (``-``, ``*``, ``+``, ``1.``, ``1)``), and fenced code (``` or
    ~~~, re-emitted without its info string in a backtick fence longer than any run inside,
    closed at the end of the text if the author left it open). Everything else on a line is
    :func:`neutralise`'d.
    """
    return _fitted(text.strip(), _block, max_chars)


def html_text(text: str, *, max_chars: int = 300) -> str:
    """Text for inside raw HTML the bot writes (e.g. ``<summary>``): one line, control and
    invisible characters as escapes, HTML-escaped (quotes too), a zero-width space after
    ``@`` and where github.com would link a reference, SHA or emoji, cut at ``max_chars``."""
    flat = _cap(" ".join(_visible(text).split()), max_chars)
    linked = _unlinked(flat)
    return html.escape(linked, quote=True).replace("@", "@" + ZWSP)


_NOT_LABEL = re.compile(r"[^0-9A-Za-z .:/_+-]")


def chart_label(text: str, *, max_chars: int = 32) -> str:
    """Text for a double-quoted label inside a mermaid chart the bot writes in its own
    ```` ```mermaid ```` fence (``x-axis ["2026-11-23", …]``), cut at ``max_chars`` with ``…``.

    Inside a fence markdown escapes would show, and mermaid has no escape for its quote, so
    only letters, digits, spaces and ``-.:/_+`` are kept: every other character (quotes,
    brackets, backticks and tildes that could close the fence, line breaks, ``#`` entity
    codes, ``%%`` comments, ``<`` HTML) becomes ``?``. A date passes unchanged.
    """
    return _cap(_NOT_LABEL.sub("?", " ".join(text.split())), max_chars)


def json_line(value: Any) -> str:
    """One line of JSON for stdout: ``json.dumps`` escapes control characters, line
    separators and non-ASCII; ``[`` after ``##`` (only ever inside a string) becomes
    ``\\u005b``, so the runner's ``##[`` commands cannot appear. Still valid JSON."""
    return json.dumps(value, ensure_ascii=True).replace("##[", "##\\u005b")


def command_data(text: str) -> str:
    """Text for the data of a workflow command (after ``::name::``), escaped as GitHub's
    toolkit escapes it: ``%`` → ``%25``, CR → ``%0D``, LF → ``%0A`` (the runner undoes it)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escaped(ch: str) -> str:
    """A character that is not shown as text (control, format, private-use, unassigned,
    surrogate, line or paragraph separator) as its escape (``\x1b``, ``\u202e``), else itself."""
    if ch == "\t" or not (_hidden(ch) or unicodedata.category(ch) == "Cs"):
        return ch
    return ch.encode("unicode_escape").decode("ascii")


def _plain_line(line: str) -> str:
    """One line of text shown as it is (see :func:`log_text`)."""
    shown = "".join(_escaped(ch) for ch in line).replace("##[", f"##{ZWSP}[")
    body = shown.lstrip()
    if body.startswith("::"):
        shown = shown[: len(shown) - len(body)] + ZWSP + body
    return shown


def log_text(text: str, *, max_chars: int = 20_000) -> str:
    """Text for people on a step's stdout or stderr (an error message, a report), its lines
    kept (CRLF read as LF), cut at ``max_chars`` with ``…``, shown as it is but inert.

    GitHub's runner reads a workflow command from a line that starts with ``::`` after leading
    whitespace (.NET's, which Python's ``str.isspace`` includes), and from ``##[`` anywhere in a
    line; it splits lines at CR and LF. So: every character that is not shown as text
    (control, format, private-use, unassigned, surrogate, line or paragraph separator; a tab
    stays) becomes its escape (``\r``, ``\x1b``, ``\u2028``), so no line break but LF
    remains and no escape sequence can restyle the log; a zero-width space goes before a
    ``::`` that would start a line and between the ``##`` and ``[`` of ``##[``. Nothing else
    changes: ``%`` stays ``%``. A zero-width space in ``text`` is escaped like any format
    character, so each one in the result is the sink's.
    """
    lines = _cap(text, max_chars).replace("\r\n", "\n").split("\n")
    return "\n".join(_plain_line(line) for line in lines)


def log_value(text: str, *, max_chars: int = 2000) -> str:
    """A value for one line of people's text on stdout or stderr: :func:`log_text` with the
    line break escaped too (``\n``), so the value cannot start a line. Callers put a fixed
    label before it; a table cell is one too."""
    return _plain_line(_cap(text, max_chars))


# --- URLs and secrets ----------------------------------------------------------------------

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
        _visible(secret),
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
