"""A loopback GitHub for the dataset: a real HTTP server on 127.0.0.1 (``http.server`` in a
thread) serving a world of closed issues (:mod:`tests.support.dataset_world`) the way GitHub does:
the closed-issues list (pull requests among the issues, newest first, 100 a page, ``Link``
and ``ETag`` headers, 304 to a matching ``If-None-Match``; ``state=all&sort=updated`` lists the
open ones too, by update time, as settling asks), each issue's timeline (404 for a
deleted one; for a transferred one, 301 to ``/repositories/{id}/issues/{number}/timeline``,
where it is served), the GraphQL edit histories (``nodes(ids:)``, ``null`` and a ``NOT_FOUND`` error
for a deleted issue), the repository file, and ``X-RateLimit-*`` headers on every answer.
For settling audits it serves audited pull requests (:mod:`tests.support.pull_world`): the
GraphQL pull request with its review threads, ``compare/{base}...{head}`` (404 for a head it
does not know) and the ``viewer`` query, in the shapes of :mod:`tests.support.pull_wire`.

It counts every request by kind (``list``, ``timeline``, ``graphql`` for the edit histories,
``marks`` for the duplicate marks,
``contents``, ``pull``, ``compare``, ``viewer``), the timelines also per issue (``per_issue``)
and the ``pull`` and ``compare`` requests per pull request (``per_pull``), so a benchmark or
test measures what a run costs, and answers rate limits on demand: ``faults``
queues, per kind, the answers its next requests get instead of the normal one:

- ``primary``: 403 "API rate limit exceeded", ``X-RateLimit-Remaining: 0`` and a reset;
- ``secondary``: 429 with ``Retry-After: 30``;
- ``graphql-limited``: GraphQL's 200 with a ``RATE_LIMITED`` error and no data;
- ``low``: the normal answer, saying only ``RESERVE_LEFT`` requests are left (a patient
  client then waits for the reset before its next request).

Pagination faults, a list whose ``Link`` header's ``next`` never ends or points elsewhere:

- ``list_next``: past the last page of the closed-issues list, each page still names a next
  page and holds ``"empty"`` nothing, ``"repeat"`` the last page again, or ``"pulls"`` pull
  requests never listed before;
- ``timeline_next``: each timeline page names a next page: ``"self"`` the page itself,
  ``"endless"`` a new page each time (``cursor=N``, holding the first event again), or
  ``"once"`` a second, empty page;
- ``next_base``: the scheme, host and port the ``next`` links name (another host's, say)
  instead of the server's own.

``max_requests`` is a test's safety net against such a list: past it, every list, timeline and
GraphQL request is answered 400, so a client that keeps following ends with an error instead
of running on.
"""

from __future__ import annotations

import base64
import hashlib
import json
import threading
import time
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlencode, urlsplit

from bot.clients.github_port import Comparison, PullHistory
from tests.support.dataset_world import REPO, REPO_FILE, T0, Scenario, issue_item, never_edited
from tests.support.pull_wire import comparison_answer, pull_history_answer
from tests.support.pull_world import AuditedPull

__all__ = ["RESERVE_LEFT", "RESET_IN_S", "LoopbackGitHub"]

RESET_IN_S = 1800
"""A rate-limit answer's reset: this many seconds after the server's clock."""

RESERVE_LEFT = 10
"""Requests left in a ``low`` answer."""


class LoopbackGitHub:
    """The server, started as a context manager; ``base_url`` is its REST (and GraphQL) root.

    Args:
        scenarios: the closed issues.
        pulls_every: a closed pull request after every this many issues (the list mixes them).
        more_pulls: that many closed pull requests besides (a repository of pull requests
            alone has no closed issue).
        repo_file: the ``.github/triage-bot.yml`` text, ``None`` for none (404).
        faults: kind → the answers its next requests get (module docstring).
        clock: the server's epoch seconds (for ``X-RateLimit-Reset``).
        audited: the audited pull requests settling reads (their numbers apart from the
            issues').
        login: the login the ``viewer`` query answers.
    """

    def __init__(
        self,
        scenarios: list[Scenario],
        *,
        pulls_every: int = 4,
        more_pulls: int = 0,
        repo_file: str | None = REPO_FILE,
        faults: dict[str, list[str]] | None = None,
        clock: Callable[[], float] = time.time,
        audited: Sequence[AuditedPull] = (),
        login: str = "github-actions[bot]",
    ) -> None:
        self.scenarios = {s.number: s for s in scenarios}
        self.pull_histories: dict[int, PullHistory] = {a.history.number: a.history for a in audited}
        self.comparisons: dict[tuple[str, str], tuple[int, Comparison]] = {
            key: (a.history.number, comparison)
            for a in audited
            for key, comparison in a.comparisons.items()
        }
        self.login = login
        self.per_pull: Counter[int] = Counter()
        self.per_issue: Counter[int] = Counter()
        self.by_node = {s.item["node_id"]: s for s in scenarios}
        self.moved = {s.moved: s for s in scenarios if s.moved is not None}
        pulls = [
            issue_item(
                100_000 + s.number,
                title="Bump a dependency",
                body="",
                created=_created(s),
                pull_request=True,
            )
            for i, s in enumerate(scenarios)
            if pulls_every and i % pulls_every == 0
        ]
        pulls += [
            issue_item(
                200_000 + i,
                title="Update the docs",
                body="",
                created=T0 + timedelta(days=i),
                pull_request=True,
            )
            for i in range(more_pulls)
        ]
        items = [s.item for s in scenarios] + pulls
        self.listing = sorted(items, key=lambda item: item["created_at"], reverse=True)
        self.repo_file = repo_file
        self.faults = {kind: list(queue) for kind, queue in (faults or {}).items()}
        self.clock = clock
        self.list_next: str | None = None
        self.timeline_next: str | None = None
        self.next_base: str | None = None
        self.max_requests: int | None = None
        self.requests: Counter[str] = Counter()
        self.not_modified = 0
        self.remaining = 5000
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def base_url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def __enter__(self) -> LoopbackGitHub:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def count(self, kind: str) -> str | None:
        """Count a request; the fault it gets, if one is queued for its kind."""
        with self._lock:
            self.requests[kind] += 1
            self.remaining -= 1
            if self.max_requests is not None and self.requests.total() > self.max_requests:
                return "spent"
            queue = self.faults.get(kind)
            return queue.pop(0) if queue else None

    def _fault(self, handler: BaseHTTPRequestHandler, fault: str | None, resource: str) -> bool:
        """Answer ``fault`` (not ``low``, which changes only a header); whether it did."""
        if fault == "spent":
            self._send(handler, 400, {"message": "the test's request budget is spent"})
            return True
        if fault == "primary":
            self._send(
                handler,
                403,
                {
                    "message": "API rate limit exceeded for user ID 1.",
                    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api",
                },
                {"X-RateLimit-Remaining": "0"},
                resource=resource,
            )
            return True
        if fault == "secondary":
            self._send(
                handler,
                429,
                {
                    "message": "You have exceeded a secondary rate limit. Please wait a few "
                    "minutes before you try again.",
                    "documentation_url": "https://docs.github.com/rest/overview/rate-limits-for-the-rest-api#about-secondary-rate-limits",
                },
                {"Retry-After": "30"},
                resource=resource,
            )
            return True
        if fault == "graphql-limited":
            body = {
                "errors": [
                    {"type": "RATE_LIMITED", "message": "API rate limit exceeded for user ID 1."}
                ]
            }
            self._send(handler, 200, body, {"X-RateLimit-Remaining": "0"}, resource=resource)
            return True
        return False

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                return

            def do_GET(self) -> None:
                fake._get(self)

            def do_POST(self) -> None:
                fake._post(self)

        return Handler

    def _send(
        self,
        handler: BaseHTTPRequestHandler,
        status: int,
        body: Any,
        headers: dict[str, str] | None = None,
        *,
        resource: str = "core",
    ) -> None:
        data = b"" if body is None else json.dumps(body).encode()
        sent = {
            "Content-Type": "application/json; charset=utf-8",
            "Content-Length": str(len(data)),
            "X-RateLimit-Limit": "5000",
            "X-RateLimit-Remaining": str(max(0, self.remaining)),
            "X-RateLimit-Reset": str(int(self.clock()) + RESET_IN_S),
            "X-RateLimit-Resource": resource,
            **(headers or {}),
        }
        handler.send_response(status)
        for name, value in sent.items():
            handler.send_header(name, value)
        handler.end_headers()
        handler.wfile.write(data)

    def _get(self, handler: BaseHTTPRequestHandler) -> None:
        url = urlsplit(handler.path)
        query = {k: v[-1] for k, v in parse_qs(url.query).items()}
        parts = url.path.strip("/").split("/")
        repo_path = ["repos", *REPO.split("/")]
        if (
            parts[0] == "repositories"
            and len(parts) == 5
            and parts[2:5:2] == ["issues", "timeline"]
        ):
            self._timeline(handler, url.path, query, self.moved.get((int(parts[1]), int(parts[3]))))
            return
        if [p.lower() for p in parts[:3]] != [p.lower() for p in repo_path]:  # as GitHub
            self._send(handler, 404, {"message": "Not Found"})
            return
        rest = parts[3:]
        if rest == ["issues"]:
            self._list(handler, query)
        elif len(rest) == 3 and rest[0] == "issues" and rest[2] == "timeline":
            scenario = self.scenarios.get(int(rest[1]))
            if scenario is not None and scenario.moved is not None:
                self._moved(handler, url.query, scenario.moved)
            else:
                self._timeline(handler, url.path, query, scenario)
        elif len(rest) == 2 and rest[0] == "compare":
            self._compare(handler, unquote(rest[1]))
        elif rest[:1] == ["contents"]:
            self.count("contents")
            if self.repo_file is None:
                self._send(handler, 404, {"message": "Not Found"})
                return
            raw = self.repo_file.encode()
            self._send(
                handler,
                200,
                {
                    "type": "file",
                    "encoding": "base64",
                    "size": len(raw),
                    "name": "triage-bot.yml",
                    "path": ".github/triage-bot.yml",
                    "content": base64.b64encode(raw).decode(),
                    "sha": hashlib.sha1(raw).hexdigest(),
                },
            )
        else:
            self._send(handler, 404, {"message": "Not Found"})

    def _compare(self, handler: BaseHTTPRequestHandler, spec: str) -> None:
        fault = self.count("compare")
        if self._fault(handler, fault, "core"):
            return
        base, _, head = spec.partition("...")
        found = self.comparisons.get((base, head))
        if found is None:
            self._send(handler, 404, {"message": "Not Found"})
            return
        number, comparison = found
        with self._lock:
            self.per_pull[number] += 1
        body = comparison_answer(self.base_url, REPO, base, head, comparison)
        self._send(handler, 200, body, _low(fault))

    def _pull(self, handler: BaseHTTPRequestHandler, variables: dict[str, Any]) -> None:
        fault = self.count("pull")
        if self._fault(handler, fault, "graphql"):
            return
        number = int(variables.get("number", 0))
        with self._lock:
            self.per_pull[number] += 1
        repo = f"{variables.get('owner')}/{variables.get('name')}"
        history = self.pull_histories.get(number) if repo == REPO else None
        self._send(handler, 200, pull_history_answer(history), _low(fault), resource="graphql")

    def _timeline(
        self,
        handler: BaseHTTPRequestHandler,
        path: str,
        query: dict[str, str],
        scenario: Scenario | None,
    ) -> None:
        fault = self.count("timeline")
        if scenario is not None:
            with self._lock:
                self.per_issue[scenario.number] += 1
        if self._fault(handler, fault, "core"):
            return
        if scenario is None or scenario.timeline is None:
            self._send(handler, 404, {"message": "Not Found"})
        else:
            events, headers = self._timeline_page(path, query, scenario.timeline)
            self._send(handler, 200, events, {**_low(fault), **headers})

    def _moved(self, handler: BaseHTTPRequestHandler, query: str, to: tuple[int, int]) -> None:
        """GitHub's answer for a transferred issue: 301 to where it is now, by repository id."""
        self.count("timeline")
        where = f"{self.base_url}/repositories/{to[0]}/issues/{to[1]}/timeline"
        where += f"?{query}" if query else ""
        body = {
            "message": "Moved Permanently",
            "url": where,
            "documentation_url": "https://docs.github.com/rest/guides/best-practices-for-using-the-rest-api#follow-redirects",
        }
        self._send(handler, 301, body, {"Location": where})

    def _list(self, handler: BaseHTTPRequestHandler, query: dict[str, str]) -> None:
        fault = self.count("list")
        if self._fault(handler, fault, "core"):
            return
        per_page = int(query.get("per_page", "30"))
        page = int(query.get("page", "1"))
        items = self.listing
        if query.get("state", "open") != "all":
            items = [item for item in items if item["state"] == query.get("state", "open")]
        if query.get("sort") == "updated":
            ascending = query.get("direction") == "asc"
            items = sorted(
                items, key=lambda i: (i["updated_at"], i["number"]), reverse=not ascending
            )
        if "since" in query:
            items = [item for item in items if item["updated_at"] >= query["since"]]
        chunk = items[(page - 1) * per_page : page * per_page]
        pages = max(1, -(-len(items) // per_page))
        if page > pages and self.list_next == "repeat":
            chunk = items[(pages - 1) * per_page :]
        elif page > pages and self.list_next == "pulls":
            created = T0 - timedelta(days=page)
            chunk = [
                issue_item(300_000 + page * per_page + i, title="Bump", body="", created=created,
                           pull_request=True)
                for i in range(per_page)
            ]  # fmt: skip
        etag = 'W/"' + hashlib.sha256(json.dumps(chunk).encode()).hexdigest() + '"'
        if handler.headers.get("If-None-Match") == etag:
            self.not_modified += 1
            self._send(handler, 304, None, {"ETag": etag})
            return
        headers = {"ETag": etag, **_low(fault)}
        if page * per_page < len(items) or self.list_next:
            next_query = urlencode({**query, "page": page + 1})
            headers["Link"] = f'<{self._next_base()}/repos/{REPO}/issues?{next_query}>; rel="next"'
        self._send(handler, 200, chunk, headers)

    def _next_base(self) -> str:
        return self.next_base or self.base_url

    def _timeline_page(
        self, path: str, query: dict[str, str], timeline: list[dict[str, Any]]
    ) -> tuple[list[dict[str, Any]], dict[str, str]]:
        """A timeline page and its ``Link`` header under :attr:`timeline_next`."""
        cursor = int(query.get("cursor", "0"))
        if cursor == 0:
            events = timeline
        else:
            events = timeline[:1] if self.timeline_next == "endless" else []
        after = {
            "self": urlencode(query),
            "endless": urlencode({**query, "cursor": cursor + 1}),
            "once": urlencode({**query, "cursor": 1}) if cursor == 0 else None,
        }.get(self.timeline_next or "")
        if after is None:
            return events, {}
        return events, {"Link": f'<{self._next_base()}{path}?{after}>; rel="next"'}

    def _post(self, handler: BaseHTTPRequestHandler) -> None:
        length = int(handler.headers.get("Content-Length", "0"))
        payload = json.loads(handler.rfile.read(length) or b"{}")
        if urlsplit(handler.path).path != "/graphql":
            self._send(handler, 404, {"message": "Not Found"})
            return
        query = str(payload.get("query", ""))
        if "pullRequest(" in query:
            self._pull(handler, payload.get("variables") or {})
            return
        if "viewer" in query:
            self.count("viewer")
            body = {"data": {"viewer": {"login": self.login}}}
            self._send(handler, 200, body, resource="graphql")
            return
        if "MarkedAsDuplicateEvent" in query:
            self._marks(handler, payload.get("variables", {}).get("ids", []))
            return
        fault = self.count("graphql")
        if self._fault(handler, fault, "graphql"):
            return
        nodes: list[Any] = []
        errors = []
        for node in payload.get("variables", {}).get("ids", []):
            scenario = self.by_node.get(node)
            if scenario is None or scenario.timeline is None:
                nodes.append(None)
                errors.append(
                    {
                        "type": "NOT_FOUND",
                        "path": ["nodes", len(nodes) - 1],
                        "message": f"Could not resolve to a node with the global id of '{node}'.",
                    }
                )
                continue
            nodes.append(scenario.edits or never_edited(scenario))
        body: dict[str, Any] = {"data": {"nodes": nodes}}
        if errors:
            body["errors"] = errors
        self._send(handler, 200, body, _low(fault), resource="graphql")

    def _marks(self, handler: BaseHTTPRequestHandler, ids: list[str]) -> None:
        """The duplicate marks of the issues ``ids`` names (a scenario's ``extra["marks"]``)."""
        fault = self.count("marks")
        if self._fault(handler, fault, "graphql"):
            return
        nodes: list[Any] = []
        for node in ids:
            scenario = self.by_node.get(node)
            if scenario is None or scenario.timeline is None:
                nodes.append(None)
                continue
            marks = scenario.extra.get("marks", [])
            nodes.append({"id": node, "timelineItems": {"nodes": marks}})
        self._send(handler, 200, {"data": {"nodes": nodes}}, _low(fault), resource="graphql")


def _created(scenario: Scenario) -> datetime:
    """A pull request's opening time: half an hour after the scenario's issue."""
    return datetime.fromisoformat(scenario.item["created_at"]) + timedelta(minutes=30)


def _low(fault: str | None) -> dict[str, str]:
    """The header of a ``low`` answer (none otherwise)."""
    return {"X-RateLimit-Remaining": str(RESERVE_LEFT)} if fault == "low" else {}
