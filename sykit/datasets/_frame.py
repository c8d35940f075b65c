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
    no ground truth. ``input_tokens`` is estimated from the prompt when not given, ``id`` defaults
    to the row position, ``images`` names a column of image URLs (one URL or a list). A column
    named ``input_tokens``, ``id`` or ``images`` takes that role when the keyword is not given
    (the dataset makes columns of those names, so it could not be kept for analysis).

    ``metadata`` lists the columns the *algorithm* may read (``request.metadata``); none by default,
    and never a column used for quality or output tokens. Every other column still reaches
    ``result.requests`` for analysis, hidden from the algorithm: a raw grade column (e.g. the 1–10
    score you divided by 10) would otherwise let a router read the answer key.

    ``group`` names a column whose equal values mark related rows (the turns of one conversation,
    paraphrases of one question): the dataset's ``group_column``, which splits, folds and
    :func:`sykit.learn.cross_fit` keep together.
    """
    if not isinstance(frame, pd.DataFrame):
        raise ArgumentTypeError(f"from_frame needs a pandas DataFrame, got {type(frame).__name__}")
    if not isinstance(name, str) or not name:
        raise ArgumentTypeError(f"name must be a non-empty string, got {name!r}")
    columns = list(frame.columns)
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

    used = {prompt, input_tokens, id, images, *quality.values(), *output_tokens.values()}
    rest = [c for c in columns if c not in used]
    truth_columns = {*quality.values(), *output_tokens.values()}
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
    metadata = list(metadata)
    for column in metadata:
        if column in ("id", "prompt", "input_tokens", "images") or str(column).startswith(
            (QUALITY_PREFIX, OUTPUT_PREFIX)
        ):
            raise ArgumentError(
                f"from_frame: metadata column {column!r} clashes with a column the dataset makes"
            )
        values = frame[column]
        if values.dtype == object and not all(
            v is None or isinstance(v, _SCALARS) for v in values.tolist()
        ):
            raise ArgumentError(
                f"from_frame: metadata column {column!r} must hold scalars (text, numbers, bools)"
            )

    texts = [str(p) for p in prompts.tolist()]  # numpy strings become plain str
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
    extras = {c: frame[c].to_numpy() for c in rest if c not in out.columns}
    extras.update({c: s.to_numpy() for c, s in truth.items()})
    out = pd.concat([out, pd.DataFrame(extras, index=out.index)], axis=1)
    for column in truth:
        if column.startswith(OUTPUT_PREFIX):
            out[column] = out[column].astype("Int64")
    if group is not None and (not isinstance(group, str) or group not in out.columns):
        raise ArgumentError(
            f"group must name a column of the frame, got {group!r}; columns: {list(out.columns)}"
        )
    return Dataset(out, name=name, models=list(quality), metadata=metadata, group_column=group)


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
