"""Turn a user's table into a Dataset, checking every column it names.

The checks run once, on the whole table, so a typo or a text column where a score was expected fails
at the line that made the dataset and names the column, not deep inside a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from sykit._base.checks import plain
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.models import Request
from sykit.datasets._dataset import OUTPUT_PREFIX, QUALITY_PREFIX, Dataset

__all__ = ["from_frame"]

_SCALARS = (str, int, float, bool, np.generic)


def from_frame(
    frame: pd.DataFrame,
    *,
    prompt: str,
    quality: Mapping[str, str] | None = None,
    output_tokens: Mapping[str, str] | None = None,
    input_tokens: str | None = None,
    id: str | None = None,
    images: str | None = None,
    metadata: Sequence[str] | None = None,
    name: str = "frame",
    group: str | None = None,
) -> Dataset:
    """A :class:`Dataset` from your own table, one row per request.

        ds = sy.datasets.from_frame(
            df,
            prompt="question",
            quality={"small": "small_correct", "large": "large_correct"},   # model → column
            output_tokens={"small": "small_len"},                           # optional, per model
            input_tokens="n_tokens", id="qid", metadata=["topic"],
        )

    ``quality`` columns hold a score in [0, 1] per model (1/0 for correct/wrong; divide grades by
    their maximum); an empty cell means the answer is ungraded: its quality is NaN in the results,
    left out of quality means and counted (``n_ungraded``). Without ``quality`` the requests carry
    no ground truth. Every prompt is text, blank (empty or spaces) only in a row with images.
    ``input_tokens`` is estimated from the prompt when not given, ``id`` defaults to the row
    position, ``images`` names a column of image URLs (one URL or a list). A column named
    ``input_tokens``, ``id`` or ``images`` takes that role when the keyword is not given (the
    dataset makes columns of those names, so it could not be kept for analysis); when the keyword
    names another column, or ``prompt`` is not the column named ``prompt``, the same-named column
    is refused: rename it. So is a column named ``quality:<model>`` or ``output_tokens:<model>``
    (the dataset's ground truth) that is not given as one, and a frame with two columns of one
    name.

    ``metadata`` lists the columns the *algorithm* may read (``request.metadata``); none by default,
    each at most once, never a column used for quality or output tokens, nor the prompt, id,
    input_tokens or images column (the request has those already). Every other column still reaches
    ``result.requests`` for analysis, hidden from the algorithm: a raw grade column (e.g. the 1–10
    score you divided by 10) would otherwise let a router read the answer key.

    ``group`` names a column whose equal values mark related rows (the turns of one conversation,
    paraphrases of one question): the dataset's ``group_column``, which splits, folds and
    :func:`sykit.learn.cross_fit` keep together. A column that became the prompt, id,
    input_tokens or a model's quality or output tokens is the dataset's column of that name:
    ``group="question"`` with ``prompt="question"`` makes ``group_column`` ``"prompt"``.
    """
    if not isinstance(frame, pd.DataFrame):
        raise ArgumentTypeError(f"from_frame needs a pandas DataFrame, got {type(frame).__name__}")
    if not isinstance(name, str) or not name:
        raise ArgumentTypeError(f"name must be a non-empty string, got {name!r}")
    columns = list(frame.columns)
    repeated = list(dict.fromkeys(c for c in frame.columns[frame.columns.duplicated()]))
    if repeated:
        raise ArgumentError(
            f"from_frame: the frame has more than one column named "
            f"{', '.join(map(repr, repeated))}; rename or drop the copies, e.g. "
            "frame.loc[:, ~frame.columns.duplicated()] keeps the first of each"
        )
    # a column named like a role the dataset makes is that role, unless another column is named
    if input_tokens is None and "input_tokens" in columns:
        input_tokens = "input_tokens"
    if id is None and "id" in columns:
        id = "id"
    if images is None and "images" in columns:
        images = "images"

    def need(column: object, role: str) -> str:
        if not isinstance(column, str):
            raise ArgumentTypeError(
                f"{role} must be a column name (str), got {type(column).__name__}"
            )
        if column not in frame.columns:
            raise ArgumentError(
                f"from_frame: {role} column {column!r} is not in the frame; columns are: "
                f"{', '.join(map(str, columns))}"
            )
        return column

    need(prompt, "prompt")
    prompts = frame[prompt]
    missing_prompt = prompts.isna()
    if missing_prompt.any():
        rows = list(np.flatnonzero(missing_prompt.to_numpy())[:5])
        raise ArgumentError(
            f"from_frame: prompt column {prompt!r} is empty in {int(missing_prompt.sum())} row(s), "
            f"first at positions {[int(r) for r in rows]}"
        )
    if not all(isinstance(p, str) for p in prompts.tolist()):
        raise ArgumentError(
            f"from_frame: prompt column {prompt!r} must hold text (str) in every row"
        )

    quality = _mapping(quality, "quality")
    output_tokens = _mapping(output_tokens, "output_tokens")
    for model in output_tokens:
        if model not in quality:
            raise ArgumentError(
                f"from_frame: model {model!r} has an output_tokens column but no quality column; "
                f"add quality={{{model!r}: <column>}}"
            )
    truth: dict[str, pd.Series] = {}
    for model, column in quality.items():
        need(column, f"quality[{model!r}]")
        truth[QUALITY_PREFIX + model] = _scores(frame[column], column, model)
    for model, column in output_tokens.items():
        need(column, f"output_tokens[{model!r}]")
        truth[OUTPUT_PREFIX + model] = _token_counts(frame[column], f"output_tokens[{model!r}]")

    n = len(frame)
    if input_tokens is not None:
        need(input_tokens, "input_tokens")
        tokens = _token_counts(frame[input_tokens], "input_tokens")
    else:
        tokens = None  # estimated below from each prompt and its images, as sy.Request does

    if id is not None:
        need(id, "id")
        ids = frame[id].tolist()
        for value in ids:
            if isinstance(value, bool) or not isinstance(value, str | int):
                raise ArgumentError(
                    f"from_frame: id column {id!r} must hold str or int ids, got {value!r}"
                )
        seen: set[Any] = set()
        for value in ids:
            if value in seen:
                raise ArgumentError(f"from_frame: id column {id!r} repeats the id {value!r}")
            seen.add(value)
    else:
        ids = list(range(n))

    image_lists = None
    if images is not None:
        need(images, "images")
        image_lists = [_image_list(v, images) for v in frame[images].tolist()]

    texts = [str(p) for p in prompts.tolist()]  # numpy strings become plain str
    blank = [
        ids[i]
        for i, text in enumerate(texts)
        if not text.strip() and (image_lists is None or not image_lists[i])
    ]
    if blank:
        raise ArgumentError(
            f"from_frame: prompt column {prompt!r} is blank (empty or only spaces) in "
            f"{len(blank)} row(s) without images, ids {blank[:5]}{' …' if len(blank) > 5 else ''}; "
            "give those rows their text or drop them"
        )

    # the columns the dataset makes from the frame's: its name (the keyword) → the frame's column
    named = {"prompt": prompt, "id": id, "input_tokens": input_tokens, "images": images}
    roles = {made: column for made, column in named.items() if column is not None}
    role_of = {column: made for made, column in roles.items()}
    truth_columns = {*quality.values(), *output_tokens.values()}
    used = {*role_of, *truth_columns}
    rest = [c for c in columns if c not in used]
    if metadata is None:
        metadata = []
    else:
        if isinstance(metadata, str) or not isinstance(metadata, Sequence):
            raise ArgumentTypeError("metadata must be a list of column names")
        for column in metadata:
            need(column, "metadata")
            if column in truth_columns:
                raise ArgumentError(
                    f"from_frame: metadata column {column!r} is a quality or output_tokens column; "
                    "algorithms must not see the ground truth (it reaches result.requests anyway)"
                )
            if column in role_of:
                made = role_of[column]
                raise ArgumentError(
                    f"from_frame: metadata column {column!r} is the {made} column, which the "
                    f"algorithm reads as request.{made}; leave it out of metadata"
                )
        twice = list(dict.fromkeys(c for i, c in enumerate(metadata) if c in metadata[:i]))
        if twice:
            raise ArgumentError(
                f"from_frame: metadata names {', '.join(map(repr, twice))} more than once; "
                "list each column once"
            )
    metadata = list(metadata)
    for column in rest:
        _check_kept(column, roles)
    for column in metadata:
        values = frame[column]
        if values.dtype == object and not all(
            v is None or isinstance(v, _SCALARS) for v in values.tolist()
        ):
            raise ArgumentError(
                f"from_frame: metadata column {column!r} must hold scalars (text, numbers, bools)"
            )

    if tokens is None:
        counts = [
            Request(text, images=image_lists[i] if image_lists is not None else ()).input_tokens
            for i, text in enumerate(texts)
        ]
        tokens = pd.Series(counts, index=frame.index, dtype="Int64")
    canonical = {"id": ids, "prompt": texts, "input_tokens": tokens.to_numpy()}
    if image_lists is not None:
        canonical["images"] = image_lists
    out = pd.DataFrame(canonical, index=pd.RangeIndex(n))
    out["input_tokens"] = out["input_tokens"].astype("Int64")
    extras = {c: frame[c].to_numpy() for c in rest}
    extras.update({c: s.to_numpy() for c, s in truth.items()})
    out = pd.concat([out, pd.DataFrame(extras, index=out.index)], axis=1)
    for column in truth:
        if column.startswith(OUTPUT_PREFIX):
            out[column] = out[column].astype("Int64")
    group_column = _group_column(group, columns, out, role_of, quality, output_tokens)
    return Dataset(
        out, name=name, models=list(quality), metadata=metadata, group_column=group_column
    )


def _check_kept(column: object, roles: Mapping[str, str]) -> None:
    """Refuse a column kept under its own name (metadata or for analysis) whose name the
    dataset's own columns take."""
    if not isinstance(column, str):
        return  # (only str names are the dataset's own)
    if column in roles:
        raise ArgumentError(
            f"from_frame: the frame's column {column!r} would be lost: the dataset's own "
            f"{column!r} column takes its name (it holds the frame's {roles[column]!r}, from "
            f"{column}={roles[column]!r}). Rename it to keep it "
            f"(frame.rename(columns={{{column!r}: 'my_{column}'}})), or drop it"
        )
    for prefix, keyword, use in (
        (QUALITY_PREFIX, "quality", "to grade model {model!r} with it"),
        (OUTPUT_PREFIX, "output_tokens", "to give model {model!r} its output lengths"),
    ):
        if column.startswith(prefix):
            model = column[len(prefix) :]
            raise ArgumentError(
                f"from_frame: the frame's column {column!r} is named like the dataset's ground "
                f"truth ({prefix}<model>), which it makes from {keyword}=; "
                f"{use.format(model=model)}, pass {keyword}={{{model!r}: {column!r}}}, "
                "else rename it (or drop it)"
            )


def _group_column(
    group: object,
    columns: Sequence[Any],
    out: pd.DataFrame,
    role_of: Mapping[str, str],
    quality: Mapping[str, str],
    output_tokens: Mapping[str, str],
) -> str | None:
    """The dataset's column holding the values of ``group``: the frame's column of that name
    (under the name the dataset gives it: ``prompt``, ``id``, ``quality:<model>``, …), or else
    one of the dataset's own columns."""
    if group is None:
        return None
    if not isinstance(group, str):
        raise ArgumentTypeError(f"group must be a column name (str), got {type(group).__name__}")
    if group in columns:
        if group in role_of:
            return role_of[group]
        for prefix, mapping in ((QUALITY_PREFIX, quality), (OUTPUT_PREFIX, output_tokens)):
            for model, column in mapping.items():
                if column == group:
                    return prefix + model
        return group
    if group in out.columns:
        return group
    raise ArgumentError(
        f"group must name a column of the frame, got {group!r}; the frame's columns are: "
        f"{', '.join(map(str, columns))}"
    )


def _mapping(value: object, what: str) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ArgumentTypeError(
            f"{what} must be a dict of model name → column name, got {type(value).__name__}"
        )
    for model in value:
        if not isinstance(model, str) or not model:
            raise ArgumentTypeError(f"{what}: model names must be non-empty strings, got {model!r}")
    return dict(value)


def _scores(series: pd.Series, column: str, model: str) -> pd.Series:
    if series.dtype == bool:
        return series.astype(float)
    numeric = pd.to_numeric(series, errors="coerce")
    bad = numeric.isna() & series.notna()
    if bad.any():
        first = series[bad].iloc[0]
        raise ArgumentError(
            f"from_frame: quality column {column!r} (model {model!r}) must be numeric, "
            f"got {first!r}"
        )
    numeric = numeric.astype(float)
    outside = (numeric < 0) | (numeric > 1)
    if outside.any():
        raise ArgumentError(
            f"from_frame: quality column {column!r} (model {model!r}) must lie in [0, 1], got "
            f"{float(numeric[outside].iloc[0])!r}; divide grades by their maximum"
        )
    return numeric


def _token_counts(series: pd.Series, role: str) -> pd.Series:
    numeric = pd.to_numeric(series, errors="coerce")
    bad = (numeric.isna() & series.notna()) | (numeric < 0) | (numeric.notna() & (numeric % 1 != 0))
    if bad.any():
        raise ArgumentError(
            f"from_frame: {role} column {series.name!r} must hold whole numbers ≥ 0, "
            f"got {plain(series[bad].iloc[0])!r}"
        )
    return numeric.astype("Int64")


def _image_list(value: Any, column: str) -> tuple[str, ...]:
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return ()
    if isinstance(value, str):
        return (value,)
    if isinstance(value, list | tuple | np.ndarray) and all(isinstance(v, str) for v in value):
        return tuple(value)
    raise ArgumentError(
        f"from_frame: images column {column!r} must hold an image URL or a list of them, "
        f"got {value!r}"
    )
