"""A setting as data: the table's row type, the value rules rows name, the views printed."""

from __future__ import annotations

# only the standard library at import: `triage-bot --help` builds its flags from here
import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from dataclasses import MISSING, dataclass, field, fields
from pathlib import Path
from types import NoneType, UnionType
from typing import (
    Any,
    Generic,
    Required,
    TypedDict,
    TypeVar,
    Unpack,
    get_args,
    get_type_hints,
    overload,
)
from urllib.parse import parse_qsl, urlsplit

__all__ = [
    "Columns",
    "Factory",
    "IntRange",
    "SettingSpec",
    "action_env",
    "api_key",
    "comma_list",
    "existing_file",
    "github_login",
    "home_path",
    "http_url",
    "int_at_least",
    "int_between",
    "positive_seconds",
    "readme_default",
    "readme_table",
    "setting",
    "table_of",
    "true_or_false",
    "with_action_env",
    "with_readme_table",
]

T = TypeVar("T")
Parse = Callable[[Any], Any]

_COLUMNS = "setting"  # the dataclass field metadata key that holds a row's declared columns


def _as_given(value: Any) -> Any:
    return value


@dataclass(frozen=True, kw_only=True)
class SettingSpec:
    """One row of the settings table.

    Attributes:
        name: the ``Settings`` attribute, also the key of its CLI flag's value.
        default: the value when nothing sets it (``None``: unset).
        help: markdown: the README's meaning cell, the CLI help without backticks.
        flag: a ``bool`` flag also gets its ``--no-`` form.
        action_value: what action.yml passes for the input, inside ``${{ }}``.
        parse: text → value; raises ``ValueError`` or ``TypeError`` with the reason.
        echo: the rejected value as an error message may show it.
        secret: never in ``repr`` or an error; masked and redacted in every output.
    """

    name: str
    type: Any
    default: Any
    help: str
    env: str
    flag: str | None = None
    commands: tuple[str, ...] = ()
    action_input: str | None = None
    action_value: str | None = None
    choices: tuple[str, ...] = ()
    parse: Parse = str
    echo: Callable[[Any], Any] = _as_given
    readme_default: str | None = None
    default_from_env: Callable[[Mapping[str, str]], Any] | None = None
    secret: bool = False

    @property
    def env_vars(self) -> tuple[str, ...]:
        """Variables read, highest first: both forms of ``INPUT_<input>``, then :attr:`env`."""
        names: list[str] = []
        if self.action_input is not None:
            upper = self.action_input.upper()
            names += [f"INPUT_{upper}", f"INPUT_{upper.replace('-', '_')}"]
        return tuple(dict.fromkeys([*names, self.env]))

    def convert(self, value: Any) -> Any:
        """A flag value or a variable's stripped text → the setting's value.

        Raises:
            ValueError, TypeError: not one of :attr:`choices`, or :attr:`parse` refuses it.
        """
        if self.choices and value not in self.choices:
            raise ValueError(f"expected {' or '.join(self.choices)}")
        return self.parse(value)


@dataclass(frozen=True)
class Factory(Generic[T]):
    """A default computed when a ``Settings`` is made (``Path.home()`` …), not at import."""

    make: Callable[[], T]


class Columns(TypedDict, total=False):
    """The columns a :func:`setting` call declares beyond name, type and default."""

    help: Required[str]
    env: Required[str]
    flag: str | None
    commands: tuple[str, ...]
    action_input: str | None
    action_value: str | None
    choices: tuple[str, ...]
    parse: Parse
    echo: Callable[[Any], Any]
    readme_default: str | None
    default_from_env: Callable[[Mapping[str, str]], Any] | None
    secret: bool


@overload
def setting(default: Factory[T], **columns: Unpack[Columns]) -> T: ...
@overload
def setting(default: T, **columns: Unpack[Columns]) -> T: ...
def setting(default: Any, **columns: Unpack[Columns]) -> Any:
    """One row of the settings table, declared as a dataclass field (columns in its metadata)."""
    shown = not columns.get("secret", False)
    if not shown:
        columns.setdefault("echo", hidden)
    metadata = {_COLUMNS: columns}
    if isinstance(default, Factory):
        return field(default_factory=default.make, repr=shown, metadata=metadata)
    return field(default=default, repr=shown, metadata=metadata)


def table_of(cls: type[Any]) -> tuple[SettingSpec, ...]:
    """The :func:`setting` rows of a dataclass, in field order."""
    hints = get_type_hints(cls)
    rows = []
    for item in fields(cls):
        if _COLUMNS not in item.metadata:
            continue
        if item.default is not MISSING:
            default = item.default
        else:
            assert item.default_factory is not MISSING  # setting() gives one
            default = item.default_factory()
        rows.append(
            SettingSpec(
                name=item.name,
                type=_without_none(hints[item.name]),
                default=default,
                **item.metadata[_COLUMNS],
            )
        )
    return tuple(rows)


def _without_none(hint: Any) -> Any:
    if isinstance(hint, UnionType):
        rest = [arg for arg in get_args(hint) if arg is not NoneType]
        if len(rest) == 1:
            return rest[0]
    return hint


# --- value rules, named by the rows --------------------------------------------------------

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def true_or_false(value: Any) -> bool:
    """A flag's ``bool``, or ``true/false``, ``yes/no``, ``on/off``, ``1/0`` in any case."""
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in _TRUE:
        return True
    if text in _FALSE:
        return False
    raise ValueError("expected true/false, yes/no, on/off or 1/0")


def comma_list(value: Any) -> tuple[str, ...]:
    """``"a, b,,c"`` → ``("a", "b", "c")``; a tuple passes as it is."""
    if isinstance(value, tuple):
        return value
    return tuple(item.strip() for item in str(value).split(",") if item.strip())


def home_path(value: Any) -> Path:
    """A path with ``~`` expanded."""
    return Path(value).expanduser()


def positive_seconds(value: Any) -> float:
    """A finite number of seconds above 0 (``nan`` and ``inf`` parse as floats; they are not)."""
    number = float(value)
    if not math.isfinite(number) or number <= 0:
        raise ValueError("must be a finite number of seconds > 0")
    return number


@dataclass(frozen=True)
class IntRange:
    """A value rule: an integer from ``low`` to ``high`` (``None``: no upper bound)."""

    low: int
    high: int | None = None
    unit: str = ""

    def __call__(self, value: Any) -> int:
        count = int(value)
        if self.high is None and count < self.low:
            raise ValueError(f"must be ≥ {self.low} {self.unit}")
        if self.high is not None and not self.low <= count <= self.high:
            raise ValueError(f"must be between {self.low} and {self.high}")
        return count


def int_at_least(low: int, unit: str) -> IntRange:
    """An integer ≥ ``low``; the message names the ``unit``."""
    return IntRange(low, unit=unit)


def int_between(low: int, high: int) -> IntRange:
    """An integer in ``[low, high]``."""
    return IntRange(low, high)


def share(value: Any) -> float:
    """A share from 0 to 1 (``0.8``; ``80%`` is read as 0.8)."""
    text = str(value).strip()
    number = float(text.removesuffix("%")) / (100 if text.endswith("%") else 1)
    if not 0 <= number <= 1:
        raise ValueError("must be a share from 0 to 1 (or 0% to 100%)")
    return number


def existing_file(kind: str) -> Parse:
    """A path (``~`` expanded) to a file that exists now; the message names the ``kind``."""

    def parse(value: Any) -> Path:
        path = Path(value).expanduser()
        if not path.is_file():
            raise ValueError(f"no such {kind} file")
        return path

    return parse


def repository_path(value: Any) -> str:
    """A file's path from a repository's root: relative, ``/``-separated, no ``.`` or ``..``
    part, no control character, at most 255 characters."""
    text = str(value)
    parts = text.split("/")
    if (
        not text
        or len(text) > 255
        or text.startswith("/")
        or "\\" in text
        or any(part in ("", ".", "..") for part in parts)
        or any(unicodedata.category(ch) == "Cc" for ch in text)
    ):
        raise ValueError("must be a file's path from the repository's root, like policy/gate.json")
    return text


def http_url(value: Any) -> str:
    """A model server's HTTP(S) URL, trailing slash cut: no user information, each query name
    once, and every part showable without its secrets (:func:`bot.urls.read_url`)."""
    from pydantic import HttpUrl, TypeAdapter, ValidationError  # here: keeps --help fast

    from bot.urls import read_url

    text = str(value).strip().rstrip("/")
    try:
        TypeAdapter(HttpUrl).validate_python(text)
    except ValidationError as exc:
        why = exc.errors(include_url=False)[0]["msg"]
        # not chained: pydantic's error holds the input, and the URL may hold a password
        raise ValueError(f"must be a URL like http://127.0.0.1:11434 ({why})") from None
    parts = urlsplit(text)
    if "@" in parts.netloc:
        raise ValueError(
            "must hold no user name or password (user:pass@): the bot sends no credentials "
            "from a URL (an OpenAI-compatible server's key goes in TRIAGE_OPENAI_API_KEY)"
        )
    names = [name for name, _ in parse_qsl(parts.query, keep_blank_values=True)]
    if len(set(names)) < len(names):
        raise ValueError("must give each query name once (the query goes with every request)")
    problem = read_url(text).problem
    if problem:
        raise ValueError(f"must be a URL whose parts can be shown without its secrets: {problem}")
    return text


def hidden(_value: Any) -> str:
    """A secret as an error message shows it: ``***``."""
    return "***"


API_KEY_MIN_CHARS = 8
"""The shortest API key accepted: every output is searched for a key and its encodings, which
for a shorter one would blank ordinary words."""


def api_key(value: Any) -> str:
    """An API key of visible ASCII characters, stripped; the error never shows the value."""
    key = str(value).strip()
    if len(key) < API_KEY_MIN_CHARS or not all("!" <= c <= "~" for c in key):
        raise ValueError(
            f"must be at least {API_KEY_MIN_CHARS} visible ASCII characters, without spaces"
        )
    return key


def github_login(value: Any) -> str:
    """A GitHub login (≤ 39 letters, digits, inner hyphens), or an App's ``name[bot]``."""
    login = str(value).strip()
    core = login.removesuffix("[bot]")
    if not (
        0 < len(core) <= 39
        and not core.startswith("-")
        and all(c.isascii() and (c.isalnum() or c == "-") for c in core)
    ):
        raise ValueError("must be a GitHub login (letters, digits, hyphens)")
    return login


# --- views printed from the table ----------------------------------------------------------

README_HEADER = "| variable | flag | action input | default | meaning |\n|---|---|---|---|---|"


def readme_default(spec: SettingSpec) -> str:
    """The README's default cell: the row's own, else the default as a variable holds it."""
    if spec.readme_default is not None:
        return spec.readme_default
    value = spec.default
    if value is None or value == ():
        return "–"
    if isinstance(value, bool):
        return f"`{str(value).lower()}`"
    if isinstance(value, float):
        return f"`{value:g}`"
    return f"`{value}`"


def readme_table(specs: Sequence[SettingSpec]) -> str:
    """The README's configuration table (markdown, one row per setting, table order)."""

    def code(text: str | None) -> str:
        return f"`{text}`" if text else "–"

    rows = [
        f"| {code(s.env)} | {code(s.flag)} | {code(s.action_input)} | {readme_default(s)} "
        f"| {s.help} |"
        for s in specs
    ]
    return "\n".join([README_HEADER, *rows])


def action_env(specs: Sequence[SettingSpec]) -> dict[str, str]:
    """action.yml's run-step ``env:``: each action input as the ``INPUT_*`` variable read."""
    return {
        f"INPUT_{s.action_input.upper().replace('-', '_')}": "${{ "
        + (s.action_value or f"inputs.{s.action_input}")
        + " }}"
        for s in specs
        if s.action_input is not None
    }


def with_readme_table(readme: str, specs: Sequence[SettingSpec]) -> str:
    """``readme`` with its configuration table replaced by :func:`readme_table`.

    Raises:
        ValueError: ``readme`` holds no configuration table header.
    """
    start = readme.find(README_HEADER)
    if start < 0:
        raise ValueError("no configuration table (its header row) in the README")
    end = readme.find("\n\n", start)
    return readme[:start] + readme_table(specs) + (readme[end:] if end >= 0 else "\n")


_ENV_LINE = re.compile(r"^(?P<indent>[ \t]+)INPUT_[A-Z0-9_]+:.*\n", re.MULTILINE)


def with_action_env(action: str, specs: Sequence[SettingSpec]) -> str:
    """action.yml's text with its ``INPUT_*`` env lines replaced by :func:`action_env`.

    The ``inputs:`` block stays hand-written: it is the action's own documentation.

    Raises:
        ValueError: ``action`` holds no ``INPUT_*`` env line to replace.
    """
    found = list(_ENV_LINE.finditer(action))
    if not found:
        raise ValueError("no INPUT_* env lines in action.yml")
    indent = found[0].group("indent")
    block = "".join(f"{indent}{name}: {value}\n" for name, value in action_env(specs).items())
    parts, at = [], 0
    for number, match in enumerate(found):
        parts.append(action[at : match.start()] + (block if number == 0 else ""))
        at = match.end()
    return "".join(parts) + action[at:]
