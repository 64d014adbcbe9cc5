from __future__ import annotations

from github import Auth, Github

from bot.clients.github_errors import translate_github_error

__all__ = ["token_scopes"]


def token_scopes(token: str, *, base_url: str = "https://api.github.com") -> list[str] | None:
    """``GET /rate_limit`` (free, no retry): the token's OAuth scopes; ``None`` unless a
    classic PAT or OAuth token. Raises :class:`~bot.errors.GitHubError` when refused."""
    gh = Github(auth=Auth.Token(token), base_url=base_url, retry=0, timeout=15)
    try:
        gh.get_rate_limit()
    except Exception as exc:  # PyGithub and requests raise many kinds
        raise translate_github_error(exc, what="read the token's scopes") from exc
    return gh.oauth_scopes
