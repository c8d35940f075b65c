"""The rules a run's request ids follow: distinct, and distinct as text (the frames store mixed
ids as text), with the message that says which two requests break them."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sykit._base.errors import ArgumentError

__all__ = ["check_encodable", "check_ids_as_text", "clash"]


def check_encodable(position: int, request_id: Any) -> None:
    """Refuse an id whose text is not valid Unicode (a lone surrogate such as ``"a\\ud800"``):
    the random draws are keyed by the id's UTF-8 bytes, and the frames store it as text."""
    text = request_id if type(request_id) is str else str(request_id)
    if text.isascii():
        return
    try:
        text.encode()
    except UnicodeEncodeError as error:
        raise ArgumentError(
            f"requests[{position}] has the id {request_id!a}, whose text cannot be encoded "
            f"as UTF-8 ({error.reason} at position {error.start}, a lone surrogate perhaps); "
            "request ids must be valid Unicode text"
        ) from None


def check_ids_as_text(ids: Sequence[Any], given: Sequence[bool] | None = None) -> None:
    """Refuse distinct ids that are the same as text (1 and "1"): the frames store mixed ids as
    text, so their rows would merge. ``given`` says which ids came with their request (None:
    all did)."""
    if len(ids) < 2 or not any(type(i) is str for i in ids) or all(type(i) is str for i in ids):
        return  # ids of one type are distinct as text when they are distinct
    as_text: dict[str, int] = {}
    for position, request_id in enumerate(ids):
        key = str(request_id)
        if key in as_text:
            first = as_text[key]
            raise ArgumentError(
                clash(
                    (first, ids[first], True if given is None else given[first]),
                    (position, request_id, True if given is None else given[position]),
                )
            )
        as_text[key] = position


def clash(first: tuple[int, Any, bool], second: tuple[int, Any, bool]) -> str:
    """Why two requests cannot share a run: the same id, or ids that are the same as text."""

    def which(entry: tuple[int, Any, bool]) -> str:
        position, request_id, given = entry
        own = f"id {request_id!r}" if given else f"no id, so its position {request_id!r}"
        return f"requests[{position}] ({own})"

    if first[1] == second[1] and type(first[1]) is type(second[1]):
        return (
            f"requests contains the id {first[1]!r} twice, in {which(first)} and "
            f"{which(second)}; request ids must be unique"
        )
    return (
        f"{which(first)} and {which(second)} have ids that are the same as text: the request "
        "tables store mixed ids as strings, so their rows and random draws would be merged; "
        "give them ids that differ as text"
    )
