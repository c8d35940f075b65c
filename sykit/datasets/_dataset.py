"""The Dataset: requests with hidden per-model ground truth, backed by one table.

A dataset is a pandas table (one row per request) plus the few facts needed to turn a row into a
:class:`sykit.Request`: which columns are descriptive metadata and which models have a quality (and
maybe an output length) column. Filtering and sampling make new datasets over the same rows; the
requests built for a row are cached and shared between them, so a sample of a loaded dataset costs
nothing to iterate twice.
"""

from __future__ import annotations

import html
import math
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, overload

import numpy as np
import pandas as pd

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.models import TOKEN_LIMIT, GroundTruth, Request, truth_of
from sykit.datasets._random import seeded_rng
from sykit.datasets._splits import (
    DATASET_GROUP,
    DatasetGroup,
    GroupBy,
    fold_labels,
    group_codes,
    is_missing,
    naming_missing_columns,
    split_mask,
    strata_codes,
)

if TYPE_CHECKING:
    from sykit.datasets._items import DatasetItems, RowValues

__all__ = ["OUTPUT_PREFIX", "QUALITY_PREFIX", "Dataset"]

#: Column name prefixes of the per-model ground truth in :attr:`Dataset.frame`.
QUALITY_PREFIX = "quality:"
OUTPUT_PREFIX = "output_tokens:"
#: Rows up to which a dataset keeps the requests it builds (a few kB each): enough for any
#: evaluation table; a larger dataset builds each block of a run anew and keeps none.
KEPT_ROWS = 50_000


def _native(value: Any) -> Any:
    """A metadata value the results table can hold: Python scalars, missing values as None."""
    if value is None or value is pd.NA or (isinstance(value, float) and math.isnan(value)):
        return None
    if isinstance(value, np.generic):
        return value.item()
    return value


def _natives(series: pd.Series) -> list[Any]:
    """A column's values as :func:`_native` makes each (a column of integers, booleans or strings
    with nothing missing comes out of ``tolist`` as Python values already)."""
    values = series.tolist()
    plain = series.dtype.kind in "iub" or isinstance(series.dtype, pd.StringDtype)
    if plain and not series.isna().any():
        return values
    return [_native(v) for v in values]


def _truth(
    quality: dict[str, float], output_tokens: dict[str, int], columns: dict[str, Any]
) -> GroundTruth:
    """A row's :class:`GroundTruth` from values already checked (the dataset's own columns), made
    without the dataclass's checks: one is made for every row a run reads."""
    for model, tokens in output_tokens.items():
        if tokens > TOKEN_LIMIT:
            GroundTruth(output_tokens={model: tokens})  # raises the checked error
    truth = object.__new__(GroundTruth)
    fields = truth.__dict__
    fields["quality"] = MappingProxyType(quality)
    fields["output_tokens"] = MappingProxyType(output_tokens)
    fields["columns"] = MappingProxyType(columns)
    return truth


class Dataset:
    """Requests with hidden per-model ground truth, and the table they came from.

        ds = sy.datasets.load("routellm")
        len(ds), ds.models                     # 3759, ('gpt-4-1106-preview', 'mixtral-8x7b-instruct-v0.1')
        ds.filter(benchmark="gsm8k", contaminated=False).sample(200, seed=0, stratify="category")
        ds.frame                               # one row per request, with quality:<model> columns
        train, test = ds.split(0.2, seed=0)    # grouped: MT-Bench's two turns stay together
        sy.run(algorithm, ds, host=host)       # iterating yields sy.Request objects

    Each request carries the columns named as metadata (:attr:`metadata_columns`), which the
    algorithm sees, and hidden from the algorithm its ground truth (``quality`` and, where known,
    ``output_tokens`` per model) and the table's other descriptive columns
    (:attr:`analysis_columns`). The runner hands the truth to the simulated host; metadata and
    analysis columns both become columns of ``result.requests``.

    Datasets are immutable: every method returns a new dataset over a subset of the rows. Build one
    with :func:`sykit.datasets.load`, :func:`sykit.datasets.from_frame` or
    :func:`sykit.datasets.synthetic`.
    """

    __slots__ = (
        "_cache",
        "_frame",
        "_group",
        "_info",
        "_memo",
        "_metadata",
        "_models",
        "_name",
        "_row_values",
    )

    def __init__(
        self,
        frame: pd.DataFrame,
        *,
        name: str,
        models: Sequence[str],
        metadata: Sequence[str],
        info: Mapping[str, str] | None = None,
        group_column: str | None = None,
        _cache: dict[Any, Request] | None = None,
    ) -> None:
        # Internal: the frame must already be in canonical form (see from_frame).
        if group_column is not None and group_column not in frame.columns:
            raise ArgumentError(f"group column {group_column!r} is not in the dataset")
        self._frame = frame
        self._group = group_column
        self._name = name
        self._models = tuple(models)
        self._metadata = tuple(metadata)
        self._info = MappingProxyType(dict(info or {}))
        self._cache: dict[Any, Request] = {} if _cache is None else _cache
        self._row_values: RowValues | None = None
        self._memo: dict[str, Any] = {}  # what runs made of its requests (see DatasetItems)

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        """Pickled as its table and settings (for worker processes); the requests it built are
        not sent: the copy builds its own."""
        return (
            _unpickle,
            (self._frame, self._name, self._models, self._metadata, dict(self._info), self._group),
        )

    # -- what it is ----------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self._name

    @property
    def models(self) -> tuple[str, ...]:
        """Models with ground truth: the names to give a ``SimHost``."""
        return self._models

    @property
    def metadata_columns(self) -> tuple[str, ...]:
        """Columns copied into each request's ``metadata`` (and so into run results)."""
        return self._metadata

    @property
    def analysis_columns(self) -> tuple[str, ...]:
        """The table's other descriptive columns: they reach ``result.requests`` for analysis but
        not the algorithm (only :attr:`metadata_columns` do)."""
        made = {"id", "prompt", "input_tokens", "images", *self._metadata}
        return tuple(
            c
            for c in self._frame.columns
            if c not in made and not str(c).startswith((QUALITY_PREFIX, OUTPUT_PREFIX))
        )

    @property
    def group_column(self) -> str | None:
        """The column whose equal values must stay on one side of :meth:`split` and
        :meth:`folds` (routellm: ``question``, so MT-Bench's two turns of a question stay
        together); None when every row stands alone."""
        return self._group

    @property
    def info(self) -> Mapping[str, str]:
        """Description, source and licence of a shipped dataset (empty for your own tables)."""
        return self._info

    @property
    def frame(self) -> pd.DataFrame:
        """The table, one row per request: ``id``, ``prompt``, ``input_tokens``, the descriptive
        columns, then ``quality:<model>`` and ``output_tokens:<model>``. A copy: edit it freely."""
        return self._frame.reset_index(drop=True)

    @property
    def quality(self) -> pd.DataFrame:
        """Quality per request (rows, indexed by id) and model (columns); NaN where unknown."""
        return self._truth_table(QUALITY_PREFIX)

    @property
    def output_tokens(self) -> pd.DataFrame:
        """Output tokens per request and model; missing where the dataset does not know them."""
        return self._truth_table(OUTPUT_PREFIX)

    def _truth_table(self, prefix: str) -> pd.DataFrame:
        columns = {m: prefix + m for m in self._models if prefix + m in self._frame.columns}
        table = self._frame[list(columns.values())].copy()
        table.columns = pd.Index(list(columns), name="model")
        table.index = pd.Index(self._frame["id"].tolist(), name="id")
        return table

    def summary(self) -> pd.DataFrame:
        """Per model: how many requests have ground truth, mean quality and mean output tokens."""
        rows = []
        for model in self._models:
            quality = self._frame[QUALITY_PREFIX + model]
            out = self._frame.get(OUTPUT_PREFIX + model)
            rows.append(
                {
                    "model": model,
                    "requests": int(quality.notna().sum()),
                    "mean_quality": float(quality.mean()) if quality.notna().any() else math.nan,
                    "with_output_tokens": 0 if out is None else int(out.notna().sum()),
                    "mean_output_tokens": (
                        float(out.mean()) if out is not None and out.notna().any() else math.nan
                    ),
                }
            )
        columns = ["requests", "mean_quality", "with_output_tokens", "mean_output_tokens"]
        if not rows:
            return pd.DataFrame(columns=columns, index=pd.Index([], name="model"))
        return pd.DataFrame(rows).set_index("model")[columns]

    # -- sequence protocol ---------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self._frame)

    def __iter__(self) -> Iterator[Request]:
        return iter(self._requests(self._frame.index))

    @overload
    def __getitem__(self, key: int) -> Request: ...
    @overload
    def __getitem__(self, key: slice) -> Dataset: ...
    def __getitem__(self, key: int | slice) -> Request | Dataset:
        if isinstance(key, slice):
            return self._derive(self._frame.iloc[_positions(key)])
        key = check_int(key, "dataset index", expected="an int or slice")
        n = len(self._frame)
        if not -n <= key < n:
            raise IndexError(f"dataset index {key} out of range for {n} requests")
        return self._requests([self._frame.index[key]])[0]

    # -- subsets -------------------------------------------------------------------------------
    def head(self, n: int = 5) -> Dataset:
        """The first ``n`` requests."""
        return self._derive(self._frame.iloc[: _count(n, "n")])

    def filter(
        self, predicate: Callable[[pd.DataFrame], Any] | None = None, /, **equals: Any
    ) -> Dataset:
        """The requests whose columns equal the given values (a list/tuple/set means "one of").

        ds.filter(benchmark="mmlu")
        ds.filter(category=["math", "physics"], contaminated=False)
        ds.filter(category=None)                          # the rows without a category
        ds.filter(lambda f: f["input_tokens"] > 500)      # any boolean mask over .frame

        None or NaN (``pd.NA`` too) stands for a missing value, also in a list. A predicate
        that reads a column the dataset does not have (a model's grades are
        ``quality:<model>``, whatever the table called them) gets an error listing its columns.
        """
        frame = self._frame
        mask = pd.Series(True, index=frame.index)
        for column, value in equals.items():
            if column not in frame.columns:
                raise ArgumentError(
                    f"filter: no column {column!r}; columns are: {', '.join(map(str, frame.columns))}"
                )
            series = frame[column]
            if isinstance(value, list | tuple | set | frozenset):
                present = [v for v in value if not is_missing(v)]
                one_of = series.isin(present)
                mask &= one_of | series.isna() if len(present) < len(value) else one_of
            elif is_missing(value):
                mask &= series.isna()
            else:
                mask &= series == value
        if predicate is not None:
            if not callable(predicate):
                raise ArgumentTypeError(
                    "filter's positional argument must be a function of the frame returning a "
                    f"boolean mask, got {type(predicate).__name__}"
                )
            view = frame.reset_index(drop=True)
            with naming_missing_columns(frame.columns, "filter's predicate"):
                result = predicate(view)
            values = np.asarray(result)
            if values.dtype != bool or values.shape != (len(frame),):
                raise ArgumentError(
                    f"filter's predicate must return one boolean per request ({len(frame)}), "
                    f"got {type(result).__name__} of shape {values.shape} and dtype {values.dtype}"
                )
            mask &= pd.Series(values, index=frame.index)
        return self._derive(frame[mask.to_numpy(dtype=bool)])

    def sample(self, n: int, *, seed: int = 0, stratify: str | None = None) -> Dataset:
        """``n`` requests drawn without replacement, the same ones for the same seed.

        With ``stratify=column`` each value of the column keeps its share of the dataset (largest
        remainders decide the rounding). The sample keeps the dataset's order.
        """
        n = _count(n, "n")
        rng = seeded_rng(seed)
        total = len(self._frame)
        if n > total:
            raise ArgumentError(f"sample: n={n} is more than the {total} requests in the dataset")
        if stratify is None:
            picked = np.sort(rng.choice(total, size=n, replace=False))
            return self._derive(self._frame.iloc[picked])
        if not isinstance(stratify, str):
            raise ArgumentTypeError(
                f"sample: stratify must be a column name or None, got {type(stratify).__name__}"
            )
        if stratify not in self._frame.columns:
            raise ArgumentError(
                f"sample: stratify column {stratify!r} is not in the dataset; columns are: "
                f"{', '.join(map(str, self._frame.columns))}"
            )
        positions = pd.Series(np.arange(total))
        groups = positions.groupby(self._frame[stratify].to_numpy(), sort=True, dropna=False)
        members = [np.asarray(g) for _, g in groups]
        sizes = np.array([len(m) for m in members])
        exact = n * sizes / total
        counts = np.floor(exact).astype(int)
        short = n - int(counts.sum())
        if short:
            order = np.argsort(-(exact - counts), kind="stable")
            counts[order[:short]] += 1
        picked = np.sort(
            np.concatenate(
                [rng.choice(m, size=k, replace=False) for m, k in zip(members, counts, strict=True)]
            )
        )
        return self._derive(self._frame.iloc[picked])

    def rename_models(self, names: Mapping[str, str]) -> Dataset:
        """The same requests with models renamed, e.g. to the names of your ``SimHost``:
        ``ds.rename_models({"gpt-4-1106-preview": "strong", "mixtral-8x7b-instruct-v0.1": "weak"})``."""
        if not isinstance(names, Mapping):
            raise ArgumentTypeError("rename_models takes a dict of old model name → new name")
        unknown = [old for old in names if old not in self._models]
        if unknown:
            raise ArgumentError(
                f"rename_models: {', '.join(map(repr, unknown))} not among the dataset's models "
                f"{list(self._models)}"
            )
        _check_new_names(names)
        models = [names.get(m, m) for m in self._models]
        if len(set(models)) != len(models):
            raise ArgumentError(f"rename_models would give two models the same name: {models}")
        columns = {}
        for old, new in names.items():
            columns[QUALITY_PREFIX + old] = QUALITY_PREFIX + new
            columns[OUTPUT_PREFIX + old] = OUTPUT_PREFIX + new
        frame = self._frame.rename(columns=columns)
        return Dataset(
            frame,
            name=self._name,
            models=models,
            metadata=self._metadata,
            info=self._info,
            group_column=self._group,
        )

    def _derive(self, frame: pd.DataFrame, *, same_rows: bool = True) -> Dataset:
        """A dataset like this one over ``frame``; ``same_rows=False`` when the rows' values
        changed, so no request built from the old ones is reused."""
        return Dataset(
            frame,
            name=self._name,
            models=self._models,
            metadata=self._metadata,
            info=self._info,
            group_column=self._group,
            _cache=self._cache if same_rows else None,
        )

    # -- train/test ----------------------------------------------------------------------------
    def split(
        self,
        test: float = 0.2,
        *,
        seed: int = 0,
        group: GroupBy | DatasetGroup = DATASET_GROUP,
        stratify: str | None = None,
    ) -> tuple[Dataset, Dataset]:
        """``(train, test)``: whole groups on each side, so a router fitted on ``train`` never saw
        a row related to one it is judged on.

            train, test = ds.split(0.2, seed=0)               # about 20 % of the rows held out
            train, test = ds.split(500, stratify="benchmark")  # about 500, each benchmark its share

        ``test`` is a fraction in (0, 1) of the rows or a count; groups are whole, so the test side
        comes as close to it as they allow. ``group`` is a column name, a function of the row (a
        dict of column → value) returning a key, or None (every row alone); by default the
        dataset's :attr:`group_column`. A missing key makes a row a group of its own. With
        ``stratify=column`` each value of the column gets its share of the test side (a group
        spanning values counts under its most frequent one). The same seed gives the same split;
        both sides keep the dataset's order.
        """
        groups = self._group_codes(group, "split")
        strata = strata_codes(self._frame, stratify, "split")
        in_test = split_mask(groups, strata, test, seed)
        self._build_all()
        return self._rows(~in_test), self._rows(in_test)

    def folds(
        self,
        k: int = 5,
        *,
        seed: int = 0,
        group: GroupBy | DatasetGroup = DATASET_GROUP,
        stratify: str | None = None,
    ) -> list[tuple[Dataset, Dataset]]:
        """``k`` ``(train, test)`` pairs for cross-fitting: every row is in exactly one test fold,
        and a group is never split between folds.

            for train, test in ds.folds(5, seed=0):
                router = fit(train)          # never saw a grade of test (nor of a related row)

        Groups, largest first after a shuffle by ``seed``, each go to the fold that is smallest at
        the time, so fold sizes are as even as the groups allow. ``group`` is as in :meth:`split`;
        ``stratify=column`` balances each value of the column across the folds instead (then the
        total). ``k`` must be between 2 and the number of groups.
        """
        groups = self._group_codes(group, "folds")
        strata = strata_codes(self._frame, stratify, "folds")
        labels = fold_labels(groups, strata, k, seed)
        self._build_all()
        return [(self._rows(labels != f), self._rows(labels == f)) for f in range(int(k))]

    def _group_codes(self, group: GroupBy | DatasetGroup, where: str) -> np.ndarray:
        return group_codes(self._frame, self._group if group is DATASET_GROUP else group, where)

    def _rows(self, mask: np.ndarray) -> Dataset:
        return self._derive(self._frame.iloc[np.flatnonzero(mask)])._detached()

    def _build_all(self) -> None:
        """Build every row's request now (a dataset of at most :data:`KEPT_ROWS` rows), so the
        sides of a split or of folds, which each keep only their own rows, start with them."""
        if len(self._frame) <= KEPT_ROWS:
            self._requests(self._frame.index)

    def _detached(self) -> Dataset:
        """This dataset on its own: its cache holds only its own rows' requests (those already
        built are kept), so nothing reachable from a train side holds a row of its test side."""
        cache = self._cache
        own = {label: cache[label] for label in self._frame.index if label in cache}
        return Dataset(
            self._frame,
            name=self._name,
            models=self._models,
            metadata=self._metadata,
            info=self._info,
            group_column=self._group,
            _cache=own,
        )

    # -- rows to requests ----------------------------------------------------------------------
    def _requests(self, labels: Iterable[Any]) -> list[Request]:
        labels = list(labels)
        cache = self._cache
        missing = [label for label in labels if label not in cache]
        if missing:
            built = [
                request if truth is None else request.with_truth(truth)
                for request, truth in self._build(self._frame.loc[missing])
            ]
            cache.update(zip(missing, built, strict=True))
        return [cache[label] for label in labels]

    def _run_items(self) -> DatasetItems:
        """The requests as a run takes them, built a block at a time as the run reaches them.
        A dataset of at most :data:`KEPT_ROWS` rows keeps what it builds (shared with its row
        subsets), so a comparison's strategies, a sweep's points and a cross-fit's folds build
        each request once; a larger one keeps nothing: a run over a million rows never holds a
        million requests."""
        from sykit.datasets._items import DatasetItems

        frame = self._frame
        ids = frame["id"]
        if len(frame) <= KEPT_ROWS:
            labels = frame.index
            # each row's request as a run reads it (its truth apart), split once per dataset
            split: dict[Any, tuple[Request, GroundTruth | None]] = self._memo.setdefault(
                "items", {}
            )

            def build(start: int, stop: int) -> list[tuple[Request, GroundTruth | None]]:
                own = labels[start:stop]
                missing = [label for label in own if label not in split]
                if missing:
                    # requests already built with their truths are split; the others are built
                    # from the table as the run reads them (request and truth apart)
                    cache = self._cache
                    cached = [label for label in missing if label in cache]
                    split.update(
                        (label, (cache[label].without_truth(), truth_of(cache[label])))
                        for label in cached
                    )
                    if len(cached) < len(missing):
                        fresh = [label for label in missing if label not in cache]
                        whole = len(fresh) == stop - start  # (a slice: cheaper than labels)
                        built = self._build(frame.iloc[start:stop] if whole else frame.loc[fresh])
                        split.update(zip(fresh, built, strict=True))
                        # kept with their truths too, for whoever iterates the dataset or its
                        # folds next: each row is built once
                        cache.update(
                            (label, request if truth is None else request.with_truth(truth))
                            for label, (request, truth) in zip(fresh, built, strict=True)
                        )
                return [split[label] for label in own]

        else:

            def build(start: int, stop: int) -> list[tuple[Request, GroundTruth | None]]:
                return self._build(frame.iloc[start:stop])

        return DatasetItems(
            ids.to_numpy(dtype=np.int64) if ids.dtype.kind == "i" else ids.tolist(),
            build,
            has_truth=bool(self._models) or bool(self.analysis_columns),
            has_columns=bool(self.analysis_columns),
            has_metadata=bool(self._metadata),
            grades=self._grade_matrix,
            row_values=self._columns_by_row(),
            memo=self._memo if len(frame) <= KEPT_ROWS else None,
        )

    def _columns_by_row(self) -> RowValues | None:
        """The metadata and analysis columns as a run's records read them (made once per
        dataset, so every run over it shares what its records make of them)."""
        if self._row_values is None and (self._metadata or self.analysis_columns):
            from sykit.datasets._items import RowValues

            frame = self._frame
            self._row_values = RowValues(
                self._metadata,
                self.analysis_columns,
                lambda column: _natives(frame[column]),
                len(frame),
                keep=len(frame) <= KEPT_ROWS,
            )
        return self._row_values

    def _grade_matrix(self) -> tuple[dict[str, int], np.ndarray]:
        """Each model's grades as a column (NaN: no grade), in the order of the rows: what a
        run grades answers from, read from the table without building the requests."""
        frame = self._frame
        matrix = (
            np.column_stack(
                [
                    frame[QUALITY_PREFIX + m].to_numpy(dtype=float, na_value=np.nan)
                    for m in self._models
                ]
            )
            if self._models
            else np.zeros((len(frame), 0))
        )
        return {m: j for j, m in enumerate(self._models)}, matrix

    def _build(self, rows: pd.DataFrame) -> list[tuple[Request, GroundTruth | None]]:
        """Each row's request, as the algorithm sees it, and its hidden truth (None: none).

        The columns are read once each (missing values as None, NumPy scalars as Python ones),
        then each row's objects are made from them: a run over a dataset builds its requests a
        block at a time, so this is on its way."""
        ids = rows["id"].tolist()
        prompts = rows["prompt"].tolist()
        tokens = _natives(rows["input_tokens"])
        images = rows["images"].tolist() if "images" in rows.columns else None
        meta = [(c, _natives(rows[c])) for c in self._metadata]
        hidden = [(c, _natives(rows[c])) for c in self.analysis_columns]
        quality = [
            (m, rows[QUALITY_PREFIX + m].to_numpy(dtype=float, na_value=np.nan).tolist())
            for m in self._models
        ]
        out = [
            (m, _natives(rows[OUTPUT_PREFIX + m]))
            for m in self._models
            if OUTPUT_PREFIX + m in rows.columns
        ]
        built: list[tuple[Request, GroundTruth | None]] = []
        for i, prompt in enumerate(prompts):
            n = tokens[i]
            request = Request(
                prompt,
                id=ids[i],
                input_tokens=None if n is None else int(n),
                images=() if images is None or images[i] is None else tuple(images[i]),
                metadata={column: values[i] for column, values in meta} if meta else None,
            )
            truth = None
            if quality or hidden:
                truth = _truth(
                    # NaN kept: the dataset covers the model but has no grade for this request
                    {m: q[i] for m, q in quality},
                    {m: int(v) for m, o in out if (v := o[i]) is not None},
                    {c: values[i] for c, values in hidden},
                )
            built.append((request, truth))
        return built

    # -- display -------------------------------------------------------------------------------
    def __repr__(self) -> str:
        shown = self._models if len(self._models) <= 4 else (*self._models[:3], "…")
        models = ", ".join(shown) if self._models else "no ground truth"
        if len(self._models) > 4:
            models += f" ({len(self._models)})"
        return f"<Dataset {self._name!r}: {len(self)} requests; models: {models}>"

    def _repr_html_(self) -> str:
        title = html.escape(repr(self))
        parts = [f"<p><b>{title}</b></p>"]
        if self._info.get("description"):
            parts.append(f"<p>{html.escape(self._info['description'])}</p>")
        if self._info.get("license"):
            parts.append(f"<p>Licence: {html.escape(self._info['license'])}</p>")
        if self._models:
            parts.append(self.summary().to_html(float_format=lambda x: f"{x:.3g}"))
        preview = self._frame.head(5).reset_index(drop=True).copy()
        preview["prompt"] = preview["prompt"].map(lambda s: s if len(s) <= 60 else s[:57] + "...")
        parts.append(preview.to_html(max_cols=12))
        return "\n".join(parts)


def _check_new_names(names: Mapping[str, object]) -> None:
    """Model names are text: a host, a profile and a results column are keyed by them."""
    for model, new in names.items():
        if not isinstance(new, str) or not new:
            raise ArgumentTypeError(
                f"rename_models: the new name of {model!r} must be a non-empty string, got "
                f"{type(new).__name__} {new!r:.60}"
            )


def _positions(key: slice) -> slice:
    """``key`` with int (or None) bounds and a step other than 0, as positions take them."""
    start, stop, step = (
        None
        if part is None
        else check_int(part, f"dataset slice {role}", expected="an int or None")
        for part, role in ((key.start, "start"), (key.stop, "stop"), (key.step, "step"))
    )
    if step == 0:
        raise ArgumentError("dataset slice step must not be 0")
    return slice(start, stop, step)


def _count(n: object, name: str) -> int:
    return check_int(n, name, low=0, expected="≥ 0")


def _unpickle(
    frame: pd.DataFrame,
    name: str,
    models: Sequence[str],
    metadata: Sequence[str],
    info: Mapping[str, str],
    group: str | None,
) -> Dataset:
    return Dataset(
        frame, name=name, models=models, metadata=metadata, info=info, group_column=group
    )
