"""A loopback GitHub for real processes: the REST answers of the gate, the audit and the
comment commands, over HTTP on 127.0.0.1, with state shared by every process that talks to it.

It keeps one repository's labels, issues (text, labels, ``labeled``/``unlabeled`` events with
their actor, comments) and pull requests (head SHA, files, contents at the head, reviews), and
answers as GitHub's REST docs and the recorded exchanges in ``cassettes/`` show: the fields
PyGithub reads, 404 for what it does not hold. Writes by the token are the bot's
(``github-actions[bot]``, type ``Bot``). Every request is served under one lock, so each is
atomic, as on GitHub; races between processes stay races between requests.
"""

from __future__ import annotations

import base64
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

__all__ = ["BOT", "LoopbackGitHub", "loopback_github"]

BOT = {"login": "github-actions[bot]", "type": "Bot", "id": 41898282}


def _label(name: str) -> dict[str, Any]:
    return {"id": abs(hash(name)) % 10**9, "name": name, "color": "ededed", "description": ""}


@dataclass
class LoopbackGitHub:
    """The shared state (read it only under :attr:`lock`) and the server's base URL."""

    repo: str
    url: str = ""
    repo_labels: set[str] = field(default_factory=set)
    issues: dict[int, dict[str, Any]] = field(default_factory=dict)
    events: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    comments: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    pulls: dict[int, dict[str, Any]] = field(default_factory=dict)
    contents: dict[tuple[str, str], str] = field(default_factory=dict)
    reviews: dict[int, list[dict[str, Any]]] = field(default_factory=dict)
    permissions: dict[str, str] = field(default_factory=dict)
    requests: list[tuple[str, str]] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)
    _next_id: int = 5000

    def add_issue(self, number: int, title: str, body: str, labels: tuple[str, ...] = ()) -> None:
        """An open issue as its author opened it."""
        with self.lock:
            self.issues[number] = {"title": title, "body": body, "labels": list(labels)}
            self.events.setdefault(number, [])
            self.comments.setdefault(number, [])

    def add_pull(self, number: int, head: str, files: dict[str, list[str]]) -> None:
        """An open pull request at ``head`` adding ``files`` (path → lines)."""
        with self.lock:
            patches = []
            for path, lines in files.items():
                patch = f"@@ -0,0 +1,{len(lines)} @@\n" + "\n".join(f"+{x}" for x in lines)
                patches.append({"filename": path, "status": "added", "patch": patch})
                self.contents[(path, head)] = "\n".join(lines) + "\n"
            self.pulls[number] = {"head": head, "files": patches}
            self.comments.setdefault(number, [])
            self.reviews.setdefault(number, [])

    def by_hand(self, number: int, name: str, *, removed: bool, login: str = "octocat") -> None:
        """A person adds or removes a label in GitHub's UI (an event with their login)."""
        with self.lock:
            labels = self.issues[number]["labels"]
            if removed and name in labels:
                labels.remove(name)
            elif not removed and name not in labels:
                labels.append(name)
            self.events[number].append(
                {"id": self._id(), "event": "unlabeled" if removed else "labeled",
                 "label": _label(name), "actor": {"login": login, "type": "User", "id": 2},
                 "created_at": "2026-11-30T06:00:00Z"}
            )  # fmt: skip

    def gate_labels(self, number: int, names: set[str]) -> list[str]:
        """The issue's labels among ``names``."""
        with self.lock:
            return [n for n in self.issues[number]["labels"] if n in names]

    def bot_comments(self, number: int) -> list[dict[str, Any]]:
        """The bot's comments on issue or pull request ``number``."""
        with self.lock:
            return [c for c in self.comments[number] if c["user"]["login"] == BOT["login"]]

    # --- answers ------------------------------------------------------------------------------

    def _id(self) -> int:
        self._next_id += 1
        return self._next_id

    def _issue(self, number: int) -> dict[str, Any]:
        issue = self.issues[number]
        return {
            "id": number,
            "number": number,
            "title": issue["title"],
            "body": issue["body"],
            "state": "open",
            "labels": [_label(n) for n in issue["labels"]],
            "user": {"login": "octocat", "type": "User", "id": 1},
            "html_url": f"https://github.com/{self.repo}/issues/{number}",
        }

    def _comment(self, comment: dict[str, Any], number: int) -> dict[str, Any]:
        return {
            **comment,
            "html_url": f"https://github.com/{self.repo}/issues/{number}#c{comment['id']}",
            "created_at": "2026-11-30T05:00:00Z",
            "updated_at": "2026-11-30T05:00:00Z",
        }

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """The status and JSON body GitHub gives ``method path`` (``path`` without query)."""
        prefix = f"/repos/{self.repo}"
        self.requests.append((method, path))
        if not path.startswith(prefix):
            return 404, {"message": "Not Found"}
        rest = path[len(prefix) :]
        for pattern, handler in self._routes():
            match = re.fullmatch(pattern, rest)
            if match and handler[0] == method:
                try:
                    return handler[1](body, *match.groups())  # type: ignore[no-any-return]
                except KeyError:
                    return 404, {"message": "Not Found"}
        return 404, {"message": "Not Found"}

    def _routes(self) -> list[tuple[str, tuple[str, Any]]]:
        return [
            (r"/contents/(.+)", ("GET", self._get_contents)),
            (r"/labels", ("POST", self._create_label)),
            (r"/issues", ("GET", lambda b: (200, [self._issue(n) for n in sorted(self.issues)]))),
            (r"/issues/(\d+)", ("GET", lambda b, n: (200, self._issue(int(n))))),
            (r"/issues/(\d+)/labels", ("POST", self._add_labels)),
            (r"/issues/(\d+)/labels/(.+)", ("DELETE", self._remove_label)),
            (r"/issues/(\d+)/events", ("GET", self._events)),
            (r"/issues/(\d+)/comments", ("GET", self._list_comments)),
            (r"/issues/(\d+)/comments", ("POST", self._post_comment)),
            (r"/issues/comments/(\d+)", ("PATCH", self._edit_comment)),
            (r"/issues/comments/(\d+)/reactions", ("POST", lambda b, c: (201, {"id": 1}))),
            (r"/collaborators/([^/]+)/permission", ("GET", self._permission)),
            (r"/pulls/(\d+)", ("GET", self._pull)),
            (r"/pulls/(\d+)/files", ("GET", self._pull_files)),
            (r"/pulls/(\d+)/comments", ("GET", self._review_comments)),
            (r"/pulls/(\d+)/reviews", ("POST", self._create_review)),
        ]

    def _get_contents(self, body: Any, path: str) -> tuple[int, Any]:
        text = next((t for (p, _), t in self.contents.items() if p == unquote(path)), None)
        if text is None:
            return 404, {"message": "Not Found"}
        raw = text.encode()
        return 200, {
            "type": "file",
            "encoding": "base64",
            "content": base64.b64encode(raw).decode(),
            "path": path,
            "name": path.rsplit("/", 1)[-1],
            "sha": "0" * 40,
            "size": len(raw),
        }

    def _create_label(self, body: Any) -> tuple[int, Any]:
        if body["name"] in self.repo_labels:
            return 422, {
                "message": "Validation Failed",
                "errors": [{"resource": "Label", "code": "already_exists", "field": "name"}],
            }
        self.repo_labels.add(body["name"])
        return 201, _label(body["name"])

    def _add_labels(self, body: Any, number: str) -> tuple[int, Any]:
        issue = self.issues[int(number)]
        names = body if isinstance(body, list) else body.get("labels", [])
        for name in names:
            self.repo_labels.add(name)
            if name not in issue["labels"]:  # GitHub records no event for a no-op
                issue["labels"].append(name)
                self.events[int(number)].append(
                    {"id": self._id(), "event": "labeled", "label": _label(name), "actor": BOT,
                     "created_at": "2026-11-30T05:00:00Z"}
                )  # fmt: skip
        return 200, [_label(n) for n in issue["labels"]]

    def _remove_label(self, body: Any, number: str, name: str) -> tuple[int, Any]:
        issue = self.issues[int(number)]
        name = unquote(name)
        if name not in issue["labels"]:
            return 404, {"message": "Label does not exist"}
        issue["labels"].remove(name)
        self.events[int(number)].append(
            {"id": self._id(), "event": "unlabeled", "label": _label(name), "actor": BOT,
             "created_at": "2026-11-30T05:00:00Z"}
        )  # fmt: skip
        return 200, [_label(n) for n in issue["labels"]]

    def _events(self, body: Any, number: str) -> tuple[int, Any]:
        return 200, list(self.events[int(number)])

    def _list_comments(self, body: Any, number: str) -> tuple[int, Any]:
        return 200, [self._comment(c, int(number)) for c in self.comments[int(number)]]

    def _post_comment(self, body: Any, number: str) -> tuple[int, Any]:
        comment = {"id": self._id(), "body": body["body"], "user": BOT}
        self.comments[int(number)].append(comment)
        return 201, self._comment(comment, int(number))

    def _edit_comment(self, body: Any, comment_id: str) -> tuple[int, Any]:
        for number, comments in self.comments.items():
            for comment in comments:
                if comment["id"] == int(comment_id):
                    comment["body"] = body["body"]
                    return 200, self._comment(comment, number)
        return 404, {"message": "Not Found"}

    def _permission(self, body: Any, login: str) -> tuple[int, Any]:
        permission = self.permissions.get(login, "none")
        return 200, {"permission": permission, "user": {"login": login, "type": "User"}}

    def _pull(self, body: Any, number: str) -> tuple[int, Any]:
        pull = self.pulls[int(number)]
        return 200, {
            "number": int(number),
            "state": "open",
            "draft": False,
            "head": {"sha": pull["head"], "ref": "topic"},
            "base": {"ref": "main", "repo": {"full_name": self.repo, "private": True}},
        }

    def _pull_files(self, body: Any, number: str) -> tuple[int, Any]:
        return 200, list(self.pulls[int(number)]["files"])

    def _review_comments(self, body: Any, number: str) -> tuple[int, Any]:
        return 200, [
            {"id": c["id"], "body": c["body"], "user": BOT, "original_commit_id": r["commit_id"]}
            for r in self.reviews[int(number)]
            for c in r["comments"]
        ]

    def _create_review(self, body: Any, number: str) -> tuple[int, Any]:
        comments = [{"id": self._id(), **c} for c in body.get("comments", [])]
        self.reviews[int(number)].append({"commit_id": body["commit_id"], "comments": comments})
        return 200, {"id": self._id(), "state": "COMMENTED", "commit_id": body["commit_id"]}


@contextmanager
def loopback_github(repo: str) -> Iterator[LoopbackGitHub]:
    """A running loopback GitHub for ``repo``; its :attr:`~LoopbackGitHub.url` is the API
    base (``GITHUB_API_URL``)."""
    state = LoopbackGitHub(repo)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def _serve(self) -> None:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            path = urlsplit(self.path).path
            with state.lock:
                status, answer = state.answer(self.command, path, json.loads(raw) if raw else None)
            data = json.dumps(answer).encode()
            self.send_response(status)
            self.send_header("content-type", "application/json; charset=utf-8")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = do_PATCH = do_DELETE = _serve

        def log_message(self, format: str, *args: Any) -> None:
            return

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    state.url = f"http://127.0.0.1:{httpd.server_address[1]}"
    thread = threading.Thread(target=httpd.serve_forever, name="loopback-github", daemon=True)
    thread.start()
    try:
        yield state
    finally:
        httpd.shutdown()
        httpd.server_close()
