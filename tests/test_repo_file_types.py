"""The repository file's ``types:`` section (:class:`bot.repo_file.TypesConfig`): each type's
label names, the common names when a type is left out, case-insensitive whole-name matching,
the name the bot applies, a name under two types refused with the file and line, label names
held to the rules of the file's other labels, and the model's path in the repository."""

from __future__ import annotations

import pytest

from bot.errors import ConfigError
from bot.repo_file import (
    DEFAULT_TYPE_LABELS,
    REPO_FILE_PATH,
    TypeLabels,
    TypesConfig,
    parse_repo_file,
)


def _types(text: str) -> TypesConfig:
    return parse_repo_file(text).types


def test_no_file_maps_the_common_names() -> None:
    labels = parse_repo_file("").types.labels
    assert labels == TypeLabels()
    for name in ("bug", "type: bug", "type:bug", "kind/bug", "Type: Bug"):
        assert labels.type_of(name) == "bug", name
    for name in ("enhancement", "feature", "feature-request", "feature request", "type: feature",
                 "type:feature", "kind/feature", "Type: Feature Request"):  # fmt: skip
        assert labels.type_of(name) == "feature", name
    for name in ("question", "type: question", "type:question", "kind/question",
                 "Type: Question", "support", "type:support"):  # fmt: skip
        assert labels.type_of(name) == "question", name
    assert (labels.applied("bug"), labels.applied("feature"), labels.applied("question")) == (
        "bug",
        "enhancement",
        "question",
    )
    assert parse_repo_file("").types.model is None


@pytest.mark.parametrize(
    ("label", "kind"),
    [
        ("BUG", "bug"),
        ("Type: bug", "bug"),
        ("TYPE:FEATURE", "feature"),
        ("Feature Request", "feature"),
        # the whole name: no prefix dropped, no word found inside, no space or dash alike
        ("bugfix", None),
        ("bug report", None),
        ("status: bug", None),
        ("feature_request", None),
        ("needs-info", None),
        ("", None),
    ],
)
def test_matching_is_case_insensitive_on_the_whole_name(label: str, kind: str | None) -> None:
    assert TypeLabels().type_of(label) == kind


def test_renamed_and_multi_word_labels_replace_that_types_common_names_only() -> None:
    labels = _types(
        "types:\n"
        "  labels:\n"
        "    bug: ['Kind: Defect', Bug]\n"
        "    question: ['Questions and Help', '*question']\n"
    ).labels
    assert labels.type_of("kind: defect") == "bug"
    assert labels.type_of("QUESTIONS AND HELP") == "question"
    assert labels.type_of("*Question") == "question"
    # a type given its own list loses the common names; one left out keeps them
    assert labels.type_of("type: bug") is None
    assert labels.type_of("support") is None
    assert labels.type_of("enhancement") == "feature"
    assert labels.names("feature") == DEFAULT_TYPE_LABELS["feature"]
    # the first name listed is the one the bot applies, spelt as listed
    assert labels.applied("bug") == "Kind: Defect"
    assert labels.applied("question") == "Questions and Help"


def test_a_type_given_no_names_has_no_label() -> None:
    labels = _types("types:\n  labels:\n    question: []\n").labels
    assert labels.applied("question") is None
    assert labels.type_of("question") is None
    assert labels.type_of("bug") == "bug"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            "types:\n  labels:\n    bug: [defect, Triage]\n    feature: [idea]\n"
            "    question: [help, TRIAGE]\n",
            "line 5: types.labels.question: Value error, 'TRIAGE' is listed under bug too",
        ),
        (
            "types:\n  labels:\n    bug: [x]\n    feature:\n      - idea\n      - X\n",
            "line 4: types.labels.feature: Value error, 'X' is listed under bug too",
        ),
        (
            # a common name of a type the file leaves out
            "types:\n  labels:\n    bug: [bug, Support]\n",
            "line 2: types.labels: Value error, 'Support' under bug is one of question's "
            "common names",
        ),
        (
            'types:\n  labels:\n    bug: ["a\\u202eb"]\n',
            "line 3: types.labels.bug.0: Value error, a label name may not hold U+202E",
        ),
        (
            'types:\n  labels:\n    feature: ["two\\nlines"]\n',
            "line 3: types.labels.feature.0: Value error, a label name may not hold U+000A",
        ),
        ("types:\n  labels:\n    bug: ['']\n", "line 3: types.labels.bug.0: String should"),
        ("types:\n  labels:\n    chore: [chore]\n", "line 3: types.labels.chore: Extra inputs"),
        ("types:\n  labels:\n    bug: bug\n", "line 3: types.labels.bug: Input should be"),
        ("types:\n  model: ../secrets.json\n", "line 2: types.model: Value error, must be a"),
        ("types:\n  model: /etc/passwd\n", "line 2: types.model: Value error, must be a"),
        ("types:\n  model: models/\n", "line 2: types.model: Value error, must be a"),
        ("types:\n  model: models/.\n", "line 2: types.model: Value error, must be a"),
        ("types:\n  model: 'a\\\\b.json'\n", "line 2: types.model: Value error, a path may"),
        ("types:\n  model: ''\n", "line 2: types.model: Value error, must be a"),
        ("types:\n  model: 3\n", "line 2: types.model: Input should be"),
    ],
)
def test_a_broken_types_section_names_the_file_key_and_line(text: str, named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_repo_file(text, source="repo/.github/triage-bot.yml")
    assert caught.value.exit_code == 2
    assert str(caught.value).startswith("repo/.github/triage-bot.yml: ")
    assert named in str(caught.value)


def test_the_model_is_a_path_in_the_repository() -> None:
    assert _types("types:\n  model: .github/triage-types.json\n").model == (
        ".github/triage-types.json"
    )
    with pytest.raises(ConfigError, match=REPO_FILE_PATH):
        parse_repo_file("types:\n  model: a/../../b.json\n")
