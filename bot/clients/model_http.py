"""What the model-server backends (:mod:`bot.clients.ollama_client`,
:mod:`bot.clients.openai_client`) share on the wire: a reply read through its pydantic shape.

Every reply body is read by :func:`read_reply` into the backend's pydantic model
(``model_validate_json``) before the bot looks at a field of it; a body of another shape raises
:class:`ReplyShapeError`, which each backend's error translator turns into a
:class:`~bot.errors.ModelOutputError` naming its server. A token count is a
:data:`TokenCount`: what a server reports is stored with the decision, in a column that holds
32-bit integers.
"""

from __future__ import annotations

from typing import Annotated, TypeVar

from pydantic import BaseModel, Field, ValidationError

__all__ = ["TOKEN_COUNT_MAX", "ReplyShapeError", "TokenCount", "read_reply"]

TOKEN_COUNT_MAX = 2**31 - 1
"""The largest token count a reply may report (a PostgreSQL ``integer``)."""

TokenCount = Annotated[int, Field(ge=0, le=TOKEN_COUNT_MAX)]
"""A token count as a reply reports it."""

M = TypeVar("M", bound=BaseModel)


class ReplyShapeError(Exception):
    """A model server's reply body is not of the shape the backend reads.

    Attributes:
        api_json: whether the body is a JSON object at all (``False``: a web page, text, a
            JSON list: the base URL points elsewhere than the API).
        content_type: the reply's media type as sent (untrusted text).
        detail: where the body first departs from the shape and how, in pydantic's words
            (field names and list positions, never the body's values); empty when
            ``api_json`` is ``False``.
    """

    def __init__(self, *, api_json: bool, content_type: str, detail: str = "") -> None:
        super().__init__(detail or "not a JSON object")
        self.api_json = api_json
        self.content_type = content_type
        self.detail = detail


def read_reply(body: bytes, content_type: str, shape: type[M]) -> M:
    """``body`` (a reply whose ``Content-Type`` header is ``content_type``) read as ``shape``.

    Raises:
        ReplyShapeError: the content type is not JSON, or the body is not JSON, not an object,
            or not of the shape.
    """
    media = content_type.partition(";")[0].strip()
    if "json" not in media.lower():
        raise ReplyShapeError(api_json=False, content_type=media)
    try:
        return shape.model_validate_json(body)
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False, include_context=False)[0]
        if not first["loc"]:  # not JSON, or JSON that is not an object
            raise ReplyShapeError(api_json=False, content_type=media) from None
        where = ".".join(str(part) for part in first["loc"])
        # not chained: pydantic's error quotes the body, which is untrusted
        raise ReplyShapeError(
            api_json=True, content_type=media, detail=f"{where}: {first['msg']}"
        ) from None
