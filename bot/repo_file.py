"""The repository's own configuration, ``.github/triage-bot.yml``, parsed and validated.

How it is read and checked, and why: docs/repository-file.md.
"""

from __future__ import annotations

import unicodedata
from typing import Annotated, Any, Literal

import re2
import yaml
from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)

from bot.checklist import EVERY_ISSUE, RESERVED_KEYS
from bot.errors import ConfigError
from bot.policy_file import GatePolicy, ModelName
from bot.setting_spec import IntRange, github_login
from bot.settings_table import SETTINGS

__all__ = [
    "DEFAULT_TYPE_LABELS",
    "REPO_FILE_PATH",
    "SETTING_OF_KEY",
    "TYPE_NAMES",
    "AuditConfig",
    "AuthorCommentConfig",
    "DatasetConfig",
    "DuplicateStatement",
    "DuplicatesConfig",
    "ElementConfig",
    "GateConfig",
    "LabelConfig",
    "LabelsConfig",
    "ModelsConfig",
    "RepoFile",
    "SkipRules",
    "TypeLabels",
    "TypeName",
    "TypesConfig",
    "compile_pattern",
    "json_schema",
    "parse_repo_file",
]

REPO_FILE_PATH = ".github/triage-bot.yml"
"""Where the file lives in the repository (read from the default branch)."""

MAX_FILE_CHARS = 64_000
"""Largest file accepted (characters); a configuration is a few dozen lines."""

MAX_ELEMENTS = 3
"""Most elements a repository may add: each is one more quote the model writes, and the
validator's ``num_predict`` stays ≤ 200 (:func:`bot.gate.validator.make_validator` adds room
per element up to that), where a reply cut short is a validator-error."""


class _Strict(BaseModel):
    # strict: ``max_segments: "8"`` is a wrong type in a file meant for editors with a schema
    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)


class AuthorCommentConfig(_Strict):
    """``author_comment:``: whether the gate tells the author what to add (the
    ``author_comment`` setting), and a line of the repository's own in it (neutralised by
    :func:`bot.gate.author_comment.needs_refinement_comment`: no links, mentions or
    markup)."""

    enabled: bool | None = Field(
        default=None, description="post the comment on needs-refinement (default: true)"
    )
    intro: str | None = Field(
        default=None,
        max_length=300,
        description="a line of your own under the comment's heading (shown as plain text)",
    )


_RE2_OPTIONS = re2.Options()
_RE2_OPTIONS.log_errors = False  # a refused pattern is the config error, not a stderr line


def compile_pattern(pattern: str) -> Any:
    """A pattern from the file, compiled by RE2 (linear time; RE2 caches compiled patterns).

    Raises:
        ValueError: RE2 cannot run the pattern (the message says why).
    """
    try:
        return re2.compile(pattern, _RE2_OPTIONS)
    except re2.error as exc:
        why = exc.args[0] if exc.args else ""
        why = why.decode("utf-8", "replace") if isinstance(why, bytes) else str(why)
        raise ValueError(f"{pattern!r} is not a regular expression RE2 can run ({why})") from None
    except UnicodeEncodeError:
        raise ValueError(f"{pattern!r} is not UTF-8 text") from None


def _regex(pattern: str) -> str:
    """A title pattern RE2 runs (:func:`compile_pattern`); the error points at the item."""
    compile_pattern(pattern)
    return pattern


_BIDI = frozenset("\u061c\u200e\u200f\u202a\u202b\u202c\u202d\u202e\u2066\u2067\u2068\u2069")
"""Bidirectional controls: they reorder what a reader sees around them."""


def _label_text(name: str) -> str:
    """A label name with no control character, line break or bidirectional control."""
    bad = [ch for ch in name if unicodedata.category(ch) in ("Cc", "Zl", "Zp") or ch in _BIDI]
    if bad:
        raise ValueError(f"a label name may not hold U+{ord(bad[0]):04X} (a control character)")
    return name


_LabelName = Annotated[str, Field(min_length=1, max_length=50), AfterValidator(_label_text)]


class SkipRules(_Strict):
    """``skip:``: issues the gate leaves alone. Any rule that matches skips the event, with
    the rule named in the run's reason. Labels and logins compare case-insensitively
    (GitHub's rule); title patterns are RE2 regular expressions (Python's syntax without
    backreferences and lookarounds; linear time) searched in the title."""

    labels: list[_LabelName] = Field(
        default_factory=list, description="skip issues with any of these"
    )
    authors: list[str] = Field(default_factory=list, description="skip issues by these logins")
    bots: bool = Field(default=False, description="skip issues opened by Bot accounts")
    titles: list[Annotated[str, AfterValidator(_regex)]] = Field(
        default_factory=list,
        description="skip issues whose title matches an RE2 regex (no backreferences or "
        "lookarounds)",
    )

    def reason(
        self, *, title: str, labels: list[str], author: str | None, author_type: str | None
    ) -> str | None:
        """Why the rules skip this issue (one line), or ``None`` when none matches."""
        wanted = {name.lower() for name in self.labels}
        hit = next((name for name in labels if name.lower() in wanted), None)
        if hit is not None:
            return f"the issue has the label {hit!r}, which {REPO_FILE_PATH} skips"
        if author and author.lower() in {login.lower() for login in self.authors}:
            return f"the issue's author {author!r} is skipped by {REPO_FILE_PATH}"
        if self.bots and author_type == "Bot":
            return f"the issue was opened by a bot, which {REPO_FILE_PATH} skips"
        text = title.encode("utf-8", "surrogatepass")  # a payload may hold a lone surrogate
        for pattern in self.titles:
            if compile_pattern(pattern).search(text):
                return f"the title matches {pattern!r}, which {REPO_FILE_PATH} skips"
        return None


class LabelConfig(_Strict):
    """One gate label: any field left out keeps the bot's (``ready-for-dev`` …)."""

    name: Annotated[str, AfterValidator(_label_text)] | None = Field(
        default=None, min_length=1, max_length=50, pattern=r"^[^,]*\S[^,]*$",
        description="the label's name (GitHub: at most 50 characters; no commas here)",
    )  # fmt: skip
    color: str | None = Field(
        default=None, pattern=r"^[0-9a-fA-F]{6}$", description="six hex digits, no #"
    )
    description: str | None = Field(
        default=None, max_length=100, description="at most 100 characters (GitHub's limit)"
    )


class LabelsConfig(_Strict):
    """``labels:``: the three gate labels, renamed or recoloured. A label the bot applied
    under its old name is no longer a gate label once renamed (rename it on GitHub too)."""

    ready: LabelConfig = Field(default_factory=LabelConfig)
    needs_refinement: LabelConfig = Field(default_factory=LabelConfig)
    validator_error: LabelConfig = Field(default_factory=LabelConfig)


def _int_rule(setting: str) -> IntRange:
    """The integer range a setting's row accepts, for the file key that sets it."""
    rule = next(spec.parse for spec in SETTINGS if spec.name == setting)
    if not isinstance(rule, IntRange):
        raise TypeError(f"the {setting} row takes no integer range")
    return rule


_SEGMENTS = _int_rule("max_segments")


class AuditConfig(_Strict):
    """``audit:``: the PR audit's file skips and segment cap."""

    skip_globs: list[str] = Field(
        default_factory=list, description="globs of files never audited (added to the bot's)"
    )
    max_segments: int | None = Field(
        default=None,
        ge=_SEGMENTS.low,
        le=_SEGMENTS.high,
        description=f"per-PR cap ({_SEGMENTS.low}-{_SEGMENTS.high})",
    )


class ModelsConfig(_Strict):
    """``models:``: the Ollama model tag per role."""

    validator: str | None = Field(default=None, min_length=1, description="the gate's model")
    auditor: str | None = Field(default=None, min_length=1, description="the audit's model")


class GateConfig(_Strict):
    """``gate:``: the issue gate's decision policy, for a repository that commits its
    calibration (``triage-bot calibrate --yaml`` prints this block)."""

    policy: GatePolicy | None = Field(
        default=None,
        description="which signals decide (the model's verdict, guards, thresholds) and the "
        "model and prompt version it was measured for",
    )
    model_aliases: dict[ModelName, ModelName] = Field(
        default_factory=dict,
        max_length=50,
        description="other names of a model a policy was measured with: the name your server "
        "serves it by → a name the policy knows (its measured model or one of its "
        "same_model_as); the policy and its figures then hold for it",
    )


class DatasetConfig(_Strict):
    """``dataset:``: the labels ``triage-bot dataset`` reads maintainers' decisions from,
    beyond its own lists of the common names (``triage-bot dataset --help`` prints both), and
    the bots whose questions are a maintainer's. Names compare case-insensitively, with
    ``-``, ``_`` and spaces alike and any prefix up to a ``:`` or ``/`` left out
    (``Status: Needs Info`` is ``needs-info``); logins case-insensitively."""

    needs_info_labels: list[_LabelName] = Field(
        default_factory=list,
        description="labels that ask the reporter for more (added to needs-info, "
        "needs-repro, waiting-for-author …)",
    )
    accepted_labels: list[_LabelName] = Field(
        default_factory=list,
        description="labels that accept a report as written (added to confirmed, "
        "accepted, reproduced)",
    )
    triager_bots: list[Annotated[str, AfterValidator(github_login)]] = Field(
        default_factory=list,
        description="logins of bots that ask reporters for information for you (an app's "
        "NAME[bot]): their questions count as a maintainer's; other bots' never do",
    )


TypeName = Literal["bug", "feature", "question"]
"""An issue's type, as type rows and the classifier name it."""

TYPE_NAMES: tuple[TypeName, ...] = ("bug", "feature", "question")

DEFAULT_TYPE_LABELS: dict[TypeName, tuple[str, ...]] = {
    "bug": ("bug", "type: bug", "type:bug", "kind/bug", "Type: Bug"),
    "feature": (
        "enhancement",
        "feature",
        "feature-request",
        "feature request",
        "type: feature",
        "type:feature",
        "kind/feature",
        "Type: Feature Request",
    ),
    "question": (
        "question",
        "type: question",
        "type:question",
        "kind/question",
        "Type: Question",
        "support",
        "type:support",
    ),
}
"""The common names of each type's label; the first is the one the bot applies."""

_TypeList = Annotated[list[_LabelName], Field(max_length=50)]


def _clash(
    mine: list[str], others: dict[TypeName, list[str] | tuple[str, ...]]
) -> tuple[str, TypeName] | None:
    """A name of ``mine`` that another type lists too (case-insensitively), and that type."""
    for name in mine:
        for other, names in others.items():
            if name.lower() in {n.lower() for n in names}:
                return name, other
    return None


class TypeLabels(_Strict):
    """``types.labels:``: the label names of each issue type. A type left out keeps the
    common names (:data:`DEFAULT_TYPE_LABELS`); a type given an empty list has no label.
    Names match case-insensitively, on the whole name; the first name of a type is the one
    the bot applies. A name may stand for one type only."""

    bug: _TypeList | None = Field(
        default=None,
        description="labels of bug reports, the one the bot applies first (default: bug, "
        "type: bug, type:bug, kind/bug, Type: Bug)",
    )
    feature: _TypeList | None = Field(
        default=None,
        description="labels of feature requests, the one the bot applies first (default: "
        "enhancement, feature, feature-request, feature request, type: feature, "
        "type:feature, kind/feature, Type: Feature Request)",
    )
    question: _TypeList | None = Field(
        default=None,
        description="labels of questions, the one the bot applies first (default: question, "
        "type: question, type:question, kind/question, Type: Question, support, "
        "type:support)",
    )

    @field_validator("feature", "question")
    @classmethod
    def _one_type_a_name(cls, names: list[str] | None, info: ValidationInfo) -> list[str] | None:
        """A name also under an earlier type given in the file, refused at this type's key."""
        earlier: dict[TypeName, list[str] | tuple[str, ...]] = {
            t: info.data[t] for t in TYPE_NAMES if info.data.get(t) is not None
        }
        clash = _clash(names or [], earlier)
        if clash is not None:
            raise ValueError(f"{clash[0]!r} is listed under {clash[1]} too: a label names one type")
        return names

    @model_validator(mode="after")
    def _none_among_the_defaults(self) -> TypeLabels:
        """A given name that is a common name of a type left out, refused."""
        given = {t: getattr(self, t) for t in TYPE_NAMES if getattr(self, t) is not None}
        kept: dict[TypeName, list[str] | tuple[str, ...]] = {
            t: DEFAULT_TYPE_LABELS[t] for t in TYPE_NAMES if t not in given
        }
        for kind, names in given.items():
            clash = _clash(names, kept)
            if clash is not None:
                raise ValueError(
                    f"{clash[0]!r} under {kind} is one of {clash[1]}'s common names, which "
                    f"{clash[1]} keeps while the file lists none of its own: list {clash[1]} too"
                )
        return self

    def names(self, kind: TypeName) -> tuple[str, ...]:
        """The label names of ``kind``, the one the bot applies first."""
        given: list[str] | None = getattr(self, kind)
        return DEFAULT_TYPE_LABELS[kind] if given is None else tuple(given)

    def applied(self, kind: TypeName) -> str | None:
        """The label the bot applies for ``kind``; ``None`` when the type has no label."""
        names = self.names(kind)
        return names[0] if names else None

    def type_of(self, label: str) -> TypeName | None:
        """The type a label names (case-insensitively, the whole name), or ``None``."""
        wanted = label.lower()
        return next((t for t in TYPE_NAMES if wanted in {n.lower() for n in self.names(t)}), None)


def _repository_path(path: str) -> str:
    """A path from the repository's root: relative, no ``..``, no control character."""
    if any(unicodedata.category(ch) in ("Cc", "Cf", "Zl", "Zp") for ch in path) or "\\" in path:
        raise ValueError("a path may not hold a control character or a backslash")
    parts = path.split("/")
    if path.startswith("/") or ".." in parts or parts[-1] in ("", "."):
        raise ValueError("must be a file's path from the repository's root (no leading /, no ..)")
    return path


class TypesConfig(_Strict):
    """``types:``: the labels that say what an issue is (a bug, a feature request, a
    question), read by ``triage-bot dataset --types`` and applied by the bot, and the type
    model learned from them."""

    labels: TypeLabels = Field(default_factory=TypeLabels)
    model: Annotated[str, AfterValidator(_repository_path)] | None = Field(
        default=None,
        min_length=1,
        max_length=300,
        description="the type model's file, a path from the repository's root (read at the "
        "default branch)",
    )


class DuplicateStatement(_Strict):
    """``duplicates.statement:``: what ``triage-bot eval --only duplicates --earlier-only``
    measured of "the top candidate above the threshold is a duplicate" on the repository's own
    pairs (the eval prints this block)."""

    threshold: float = Field(
        ge=0, le=1, description="the lowest top score the statement is made at"
    )
    right: int = Field(ge=0, description="statements at or above the threshold that were right")
    made: int = Field(ge=1, description="statements made at or above the threshold")

    @model_validator(mode="after")
    def _right_of_made(self) -> DuplicateStatement:
        if self.right > self.made:
            raise ValueError("right cannot exceed made")
        return self


class DuplicatesConfig(_Strict):
    """``duplicates:``: the possible-duplicate label, and the measured statement that lets the
    gate say "possibly the same as #N" on an issue (docs/gate.md#possible-duplicates)."""

    label: Annotated[_LabelName, Field(pattern=r"^[^,]*[^,\s][^,]*$")] | None = Field(
        default=None,
        description="the label added beside the gate label when the statement is said "
        "(default: none)",
    )
    statement: DuplicateStatement | None = Field(
        default=None,
        description="the statement's measured precision on this repository's pairs "
        "(default: none, and nothing is said)",
    )


def _one_line(text: str) -> str:
    if any(unicodedata.category(ch) in ("Cc", "Cf") for ch in text):
        raise ValueError("must be one line with no control or invisible characters")
    if "<" in text or ">" in text:
        raise ValueError("must not hold < or > (the prompt delimits the issue with tags)")
    return text


def _element_name(name: str) -> str:
    if name in RESERVED_KEYS:
        raise ValueError(f"{name!r} is the bot's own; pick another name")
    return name


class ElementConfig(_Strict):
    """One item of ``elements:``: something this repository requires of an issue, beyond the
    bot's own checklist (what goes wrong, how to make it happen, what was expected).

    The validator's model is asked to copy the words of the issue that give it; the bot
    checks the quote is in the issue; an issue that requires it and lacks it is
    needs-refinement, and the author comment asks for it with its definition.
    """

    name: Annotated[str, AfterValidator(_element_name)] = Field(
        pattern=r"^[a-z][a-z0-9_]{1,29}$",
        description="a short key: lower-case letters, digits and _ (e.g. version)",
    )
    definition: Annotated[str, AfterValidator(_one_line)] = Field(
        min_length=8,
        max_length=200,
        description="what the issue must give, in plain words for the model and the author "
        "(e.g. the version of the tool you ran)",
    )
    required_for: list[Annotated[str, Field(min_length=1, max_length=50)]] = Field(
        default_factory=lambda: [EVERY_ISSUE],
        min_length=1,
        description="labels of the issue kinds that require it (an issue template sets them, "
        "e.g. bug); * for every issue (the default)",
    )


def _unique_names(elements: list[ElementConfig]) -> list[ElementConfig]:
    names = [e.name for e in elements]
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise ValueError(f"element names must be unique: {', '.join(repeated)} repeats")
    return elements


class RepoFile(_Strict):
    """The whole file. Every key is optional; an empty file is the defaults."""

    elements: Annotated[list[ElementConfig], AfterValidator(_unique_names)] = Field(
        default_factory=list,
        max_length=MAX_ELEMENTS,
        description="what this repository requires of issues, beyond the bot's own checklist",
    )
    labels: LabelsConfig = Field(default_factory=LabelsConfig)
    author_comment: AuthorCommentConfig = Field(default_factory=AuthorCommentConfig)
    skip: SkipRules = Field(default_factory=SkipRules)
    audit: AuditConfig = Field(default_factory=AuditConfig)
    models: ModelsConfig = Field(default_factory=ModelsConfig)
    gate: GateConfig = Field(default_factory=GateConfig)
    dataset: DatasetConfig = Field(default_factory=DatasetConfig)
    types: TypesConfig = Field(default_factory=TypesConfig)
    duplicates: DuplicatesConfig = Field(default_factory=DuplicatesConfig)

    @field_validator("duplicates")
    @classmethod
    def _a_label_of_its_own(cls, value: DuplicatesConfig, info: ValidationInfo) -> DuplicatesConfig:
        """A duplicate label named like a gate label the file sets or a type label, refused
        (the bot's default gate names: :func:`bot.gate.labels.file_gate_labels`)."""
        if value.label is None:
            return value
        wanted = value.label.lower()
        labels: LabelsConfig | None = info.data.get("labels")
        if labels is not None:
            for key in ("ready", "needs_refinement", "validator_error"):
                name = getattr(labels, key).name
                if name is not None and name.lower() == wanted:
                    raise ValueError(f"label {value.label!r} is the gate label labels.{key} too")
        types: TypesConfig | None = info.data.get("types")
        kind = types.labels.type_of(value.label) if types is not None else None
        if kind is not None:
            raise ValueError(f"label {value.label!r} is a type label of {kind} too")
        return value

    def settings(self) -> dict[str, Any]:
        """Setting name → value, for the settings the file sets (lists become tuples)."""
        values: dict[str, Any] = {}
        for key, name in SETTING_OF_KEY.items():
            value: Any = self
            for part in key.split("."):
                value = getattr(value, part)
            if isinstance(value, list):
                value = tuple(value) or None
            if value is not None:
                values[name] = value
        return values


SETTING_OF_KEY = {
    "author_comment.enabled": "author_comment",
    "models.validator": "validator_model",
    "models.auditor": "audit_model",
    "audit.max_segments": "max_segments",
    "audit.skip_globs": "skip_globs",
}
"""File key → the settings-table row it sets (the README's walkthrough lists them)."""


def _line_of(root: yaml.Node | None, loc: tuple[int | str, ...]) -> int | None:
    """The 1-based line of the YAML node at pydantic's ``loc``; ``None`` off the tree."""
    node, line = root, None
    for step in loc:
        if isinstance(node, yaml.MappingNode):
            pair = next((p for p in node.value if p[0].value == step), None)
            if pair is None:
                return line
            line = pair[0].start_mark.line + 1  # the key's: an unknown key points at itself
            node = pair[1]
        elif isinstance(node, yaml.SequenceNode) and isinstance(step, int):
            if step >= len(node.value):
                return line
            node = node.value[step]
            line = node.start_mark.line + 1
        else:
            return line
    return line


def parse_repo_file(text: str, *, source: str = REPO_FILE_PATH) -> RepoFile:
    """The file's text as a :class:`RepoFile`; an empty file is the defaults.

    Raises:
        ConfigError: anything wrong (never another error); names the file, key and line.
    """
    if len(text) > MAX_FILE_CHARS:
        raise ConfigError(f"{source}: longer than {MAX_FILE_CHARS} characters")
    try:
        root = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "unreadable"
        raise ConfigError(f"{source}: not valid YAML{where}: {problem}") from None
    except RecursionError:  # PyYAML composes nested collections recursively
        raise ConfigError(f"{source}: nested too deeply to be a configuration") from None
    if data is None:
        return RepoFile()
    if not isinstance(data, dict):
        raise ConfigError(f"{source}: line 1: the file must be a mapping of keys")
    try:
        return RepoFile.model_validate(data)
    except ValidationError as exc:
        problems = []
        for err in exc.errors(include_url=False)[:5]:
            key = ".".join(str(step) for step in err["loc"]) or "(top level)"
            line = _line_of(root, tuple(err["loc"]))
            at = f"line {line}: " if line is not None else ""
            problems.append(f"{at}{key}: {err['msg']}")
        raise ConfigError(f"{source}: " + "; ".join(problems)) from None


def json_schema() -> dict[str, Any]:
    """The file's JSON schema (draft 2020-12), as ``schema/triage-bot.schema.json`` holds it."""
    schema = RepoFile.model_json_schema()
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        **schema,
    }
