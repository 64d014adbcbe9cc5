"""The read ``triage-bot doctor`` makes of GitHub: the token's OAuth scopes. One request, no
retry: a doctor reports what it finds now. (What it reads of a model backend is the backend's
own: :data:`bot.factory.BACKENDS`.)

Errors map through the same choke point as the jobs' client
(:func:`~bot.clients.github_errors.translate_github_error`).
"""

from __future__ import annotations

from github import Auth, Github

from bot.clients.github_errors import translate_github_error

__all__ = ["token_scopes"]


def token_scopes(token: str, *, base_url: str = "https://api.github.com") -> list[str] | None:
    """``GET /rate_limit`` (costs no rate limit): the token's scopes from GitHub's
    ``X-OAuth-Scopes`` header, e.g. ``["repo", "workflow"]``.

    Only classic personal access tokens (and OAuth app tokens) get that header. A fine-grained
    token, the Actions ``GITHUB_TOKEN`` and a GitHub App's token do not: their permissions are
    set where they are made (the workflow's ``permissions:`` block, the App's settings), and
    GitHub does not list them to the token. Then this returns ``None``.

    Raises:
        GitHubError: the token is refused (:class:`~bot.errors.GitHubAuthError`) or GitHub is
            unreachable.
    """
    gh = Github(auth=Auth.Token(token), base_url=base_url, retry=0, timeout=15)
    try:
        gh.get_rate_limit()
    except Exception as exc:  # PyGithub and requests raise many kinds
        raise translate_github_error(exc, what="read the token's scopes") from exc
    return gh.oauth_scopes
