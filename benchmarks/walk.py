"""How far one event walks through the code:
`.venv/bin/python benchmarks/walk.py [--backlog] [--rooms | --pipeline]`.

Runs an ``issues.opened`` event (the real payload in tests/data/webhooks/, a ten-word body the gate
asks the author about) through :func:`bot.runner.run_event` with the project's fake GitHub
(tests/support/fake_github.py) and fake model (``FakeChatModel``, tests/support/__init__.py), under
a policy measured for that model so the author comment is written too; ``--backlog`` runs
``backlog`` over two open issues instead (:func:`bot.runner.run_backlog`). The event is run once
untraced first, so imports are done before the traced run; each run has its own SQLite store in a
temporary folder.

What is counted, from :func:`sys.setprofile` over the traced run:

- **files**: the ``bot/`` files the walk enters. The foundation and settings helpers are left
  out (``errors``, ``neutralise``, ``chat``, ``retry``, ``regular_file``, ``prompts/``,
  ``config``, ``setting_spec``, ``settings_table``, ``gate_policy``, ``repo_file``: every layer
  reads them), and so are the standard library, third-party packages and the fakes; a call
  made from one of those counts as made by the ``bot/`` file that called into them.
  With ``--rooms`` a package under ``bot/`` (``bot/gate/``, ``bot/history/`` …) counts as one
  room, a module outside a package as one: the walk a reader takes between rooms, not
  within one, and a read of a property is no step. ``--pipeline`` counts rooms too, and leaves
  out every layer below the gate's own orchestration (the layer of ``plan_gate`` in this tree's
  ARCHITECTURE.md; on this tree the foundation, settings, adapters and store, and the shared
  pieces with the job's context): what the pipeline stands on, as a reader reads a library,
  so the walk is the one through the event's own logic.
- **steps**: calls from one counted file into another (a property or a method is a call).
- **climbs back up**: a return into a file already on the current path, followed by a call
  out of it into a different file than the one just returned from. A file that calls one
  file after another climbs back up between them: the reader has to go back up to learn
  what comes next.

Prints the figures, each file with the times it was entered, and the steps, one a line,
indented by depth, a climb marked ``^``. It reads the ``bot`` package of the tree it sits in:
to compare two trees, copy it into the other one (``git archive main``, say) and run it there.
"""

from __future__ import annotations

import argparse
import functools
import inspect
import re
import sys
import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import FrameType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import bot  # noqa: E402
from bot import runner  # noqa: E402
from bot.config import Settings  # noqa: E402
from tests.support import FakeChatModel, load_webhook, policy_file, write_payload  # noqa: E402
from tests.support.fake_github import FakeGitHub  # noqa: E402
from tests.support.replies import NEEDS_REPLY  # noqa: E402

BOT = ROOT / "bot"

HELPERS = frozenset(
    f"bot/{name}"
    for name in (
        "__init__.py",
        "errors.py",
        "neutralise.py",
        "chat.py",
        "retry.py",
        "regular_file.py",
        "config.py",
        "setting_spec.py",
        "settings_table.py",
        "policy_file.py",
        "repo_file.py",
    )
)
"""Files every layer reads (foundation and settings): calls into them are not steps."""

HELPER_DIRS = ("bot/prompts/",)

REPO = "Codertocat/Hello-World"


ROOMS = False

PIPELINE = False

BELOW_PIPELINES: tuple[str, ...] = ()
"""With ``--pipeline``: the paths of every layer below the gate's pipeline (read from this
tree's ARCHITECTURE.md: the layers under the one holding ``plan_gate``)."""


def counted(filename: str) -> str | None:
    """``bot/x/y.py`` for a file of this tree's ``bot`` package that is not a helper (with
    ``--rooms``, ``bot/x/`` for every file of the package ``bot/x``)."""
    try:
        rel = Path(filename).resolve().relative_to(BOT)
    except ValueError:
        return None
    name = f"bot/{rel.as_posix()}"
    if name in HELPERS or name.startswith(HELPER_DIRS):
        return None
    if PIPELINE and (
        name in BELOW_PIPELINES
        or name.startswith(tuple(p for p in BELOW_PIPELINES if p.endswith("/")))
    ):
        return None
    if ROOMS and len(rel.parts) > 1:
        return f"bot/{rel.parts[0]}/"
    return name


@dataclass
class Walk:
    """The trace of one run (module doc: what counts)."""

    stack: list[str | None] = field(default_factory=list)
    entered: dict[str, int] = field(default_factory=dict)
    lines: list[str] = field(default_factory=list)
    steps: int = 0
    climbs: int = 0
    returned_from: str | None = None

    def _top(self) -> tuple[str | None, int]:
        depth = sum(1 for f in self.stack if f is not None)
        return next((f for f in reversed(self.stack) if f is not None), None), depth

    def profile(self, frame: FrameType, event: str, _arg: Any) -> None:
        if event == "call":
            file = counted(frame.f_code.co_filename)
            if ROOMS and _reads_a_field(frame):
                file = None  # reading a property of a data object is no walk
            self._call(file, frame.f_code.co_name)
        elif event == "return" and self.stack:
            self._return(self.stack.pop())

    def _call(self, file: str | None, function: str) -> None:
        current, depth = self._top()
        self.stack.append(file)
        if file is None or file == current:
            return
        self.entered[file] = self.entered.get(file, 0) + 1
        climb = current is not None and self.returned_from not in (None, file)
        if current is not None:
            self.steps += 1
        self.climbs += climb
        self.returned_from = None
        mark = "^" if climb else " "
        self.lines.append(f"{mark} {'  ' * depth}{file}:{function}")

    def _return(self, file: str | None) -> None:
        if file is None:
            return
        current, _ = self._top()
        if current is not None and current != file:
            self.returned_from = file


def _below_the_gate() -> tuple[str, ...]:
    """The ``bot/`` paths of the layers below the one whose modules define ``plan_gate`` (the
    gate's own orchestration), from this tree's ARCHITECTURE.md."""
    text = (ROOT / "ARCHITECTURE.md").read_text("utf-8")
    section = text.split("\n## Layers\n", 1)[1].split("\n## ", 1)[0]
    rows = [
        (int(m[1]), re.findall(r"`(bot/[^`]*)`", m[2]))
        for m in re.finditer(r"^\| (\d+) \| [^|]+ \| (.+) \|$", section, re.MULTILINE)
    ]
    home = next(
        p.relative_to(ROOT).as_posix()
        for p in BOT.rglob("*.py")
        if "def plan_gate(" in p.read_text("utf-8")
    )
    gate_layer = next(
        n for n, paths in rows if any(home == q or (q.endswith("/") and home.startswith(q))
                                      for q in paths)
    )  # fmt: skip
    return tuple(q for n, paths in rows if n < gate_layer for q in paths)


def _reads_a_field(frame: FrameType) -> bool:
    """Whether the call is a property (or cached property) of the object it runs on."""
    owner = frame.f_locals.get("self")
    if owner is None:
        return False
    found = inspect.getattr_static(type(owner), frame.f_code.co_name, None)
    return isinstance(found, property | functools.cached_property)


def _settings(folder: Path, payload: dict[str, Any], model: FakeChatModel) -> Settings:
    return Settings(
        github_token="t",  # never sent: the GitHub port is the fake
        event_name="issues",
        event_path=write_payload(folder, payload),
        db_path=folder / "triage.db",
        author_comment=True,
        gate_policy=Path(policy_file(folder, model.name)),
    )


def _issue_event(folder: Path) -> Callable[[], object]:
    payload = load_webhook("issues.opened.18")
    model = FakeChatModel().enqueue(NEEDS_REPLY)
    github = FakeGitHub()
    runner.make_github = lambda settings, **k: github.built_for(settings.bot_login)  # type: ignore[assignment]
    runner.make_chat_model = lambda *a, **k: model  # type: ignore[assignment]
    settings = _settings(folder, payload, model)
    return lambda: runner.run_event(settings)


def _backlog(folder: Path) -> Callable[[], object]:
    payload = load_webhook("issues.opened.18")
    model = FakeChatModel().enqueue(NEEDS_REPLY, NEEDS_REPLY)
    github = FakeGitHub()
    github.open_issue_list = [dict(payload["issue"], number=n, labels=[]) for n in (1, 2)]
    runner.make_github = lambda settings, **k: github.built_for(settings.bot_login)  # type: ignore[assignment]
    runner.make_chat_model = lambda *a, **k: model  # type: ignore[assignment]
    settings = replace(_settings(folder, payload, model), event_name="")
    if next(iter(inspect.signature(runner.run_backlog).parameters)) == "repo":  # an older tree
        return lambda: runner.run_backlog(REPO, settings, github)  # type: ignore[arg-type]
    return lambda: runner.run_backlog(settings, REPO)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--backlog", action="store_true", help="walk a backlog run instead")
    parser.add_argument("--rooms", action="store_true", help="count a package as one room")
    parser.add_argument(
        "--pipeline",
        action="store_true",
        help="rooms, with the ports, payload models, report pieces and job context as libraries",
    )
    args = parser.parse_args()
    global ROOMS, PIPELINE, BELOW_PIPELINES
    ROOMS = args.rooms or args.pipeline
    PIPELINE = args.pipeline
    if PIPELINE:
        BELOW_PIPELINES = _below_the_gate()
    build = _backlog if args.backlog else _issue_event
    with tempfile.TemporaryDirectory() as warm:
        build(Path(warm))()  # imports happen here, untraced
    walk = Walk()
    with tempfile.TemporaryDirectory() as folder:
        run = build(Path(folder))
        sys.setprofile(walk.profile)
        try:
            run()
        finally:
            sys.setprofile(None)
    print(f"tree: {Path(bot.__file__).parent.parent}")
    what = "backlog of 2 issues" if args.backlog else "issues.opened"
    print(f"{what}: {len(walk.entered)} files, {walk.steps} steps, {walk.climbs} climbs back up")
    for file, times in walk.entered.items():
        print(f"  {times:3d}x {file}")
    print("steps (^ = a climb back up):")
    print("\n".join(walk.lines))


if __name__ == "__main__":
    main()
