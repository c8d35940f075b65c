"""Request features for learned routers: TF-IDF, any embedding function, or precomputed vectors.

A learned router compares prompts, so it needs each request as a vector. Features take
:class:`sykit.Request` objects (not bare texts) because some read metadata (:class:`Column`);
:class:`TfIdf` (scikit-learn's ``TfidfVectorizer``) and :class:`Embed` read the prompt text through
:func:`prompt_text`, the one definition of "the prompt" every router shares (``sy.Request(text)``
turns a text into a request). Rows are L2-normalised, so a dot product is a cosine similarity:
a float32 array, or a SciPy sparse matrix for TF-IDF. Nothing here downloads anything.

A learner fits a *shallow copy* of the features it was given, so one ``Embed`` (and its cache) can
serve many fits; a ``fit`` therefore rebinds its fitted attributes rather than mutating them.
"""

from __future__ import annotations

import functools
import json
import math
import numbers
import re
import threading
from collections import Counter
from collections.abc import Callable, Hashable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from sykit._base.checks import check_int
from sykit._base.errors import ArgumentError, ArgumentTypeError
from sykit._world.models import Request, _content_text, request_list

__all__ = ["Column", "Embed", "Features", "TfIdf", "feature_key", "prompt_text"]


@runtime_checkable
class Features(Protocol):
    """What a learner needs from features: learn from the training requests, then map requests to
    rows of unit length (zero rows allowed where a request has nothing to go on): a NumPy array or
    a SciPy sparse matrix. An optional ``fit_transform(requests)`` does both in one pass.

    A features object may also define ``key(request) -> Hashable``: what its row depends on, so a
    router can cache predictions per key (the prompt text by default, see :func:`feature_key`).
    """

    def fit(self, requests: Sequence[Request]) -> None: ...

    def transform(self, requests: Sequence[Request]) -> Any: ...


def prompt_text(request: Request) -> str:
    """The text a router reads: every message's text content, joined by newlines (a list of parts
    keeps its ``{"type": "text"}`` parts)."""
    if not isinstance(request, Request):
        raise ArgumentTypeError(
            f"expected a sykit.Request (sy.Request(text) makes one), got {type(request).__name__}"
        )
    messages = request.messages
    if len(messages) == 1:
        return _content_text(messages[0]["content"])
    return "\n".join(_content_text(m["content"]) for m in messages)


def feature_key(features: object) -> Callable[[Request], Hashable]:
    """The function giving what ``features``' row for a request depends on: its own ``key`` when it
    has one, else the prompt text."""
    key = getattr(features, "key", None)
    return key if callable(key) else prompt_text


def check_features(features: object, where: str) -> None:
    """Refuse an object that cannot be features, naming the learner it was given to."""
    if not (
        callable(getattr(features, "fit", None)) and callable(getattr(features, "transform", None))
    ):
        raise ArgumentTypeError(
            f"{where}: features must have fit(requests) and transform(requests) methods "
            f"(e.g. TfIdf(), Embed(fn), Column(name)), got {type(features).__name__}"
        )


def _texts(requests: object, where: str) -> list[str]:
    return [prompt_text(r) for r in request_list(requests, where)]


def _normalise(rows: np.ndarray) -> np.ndarray:
    """Rows scaled to unit L2 norm, then float32 (each divided by its largest value first, so
    huge finite values overflow neither the norm nor float32); all-zero rows stay zero."""
    from sklearn.preprocessing import normalize

    rows = np.asarray(rows, dtype=np.float64)
    peak = np.abs(rows).max(axis=1, keepdims=True)
    peak[peak == 0] = 1.0
    return np.asarray(normalize(rows / peak), dtype=np.float32)


@functools.lru_cache(maxsize=16)
def _analyser(lowercase: bool, ngrams: tuple[int, int]) -> Callable[[str], list[str]]:
    from sklearn.feature_extraction.text import TfidfVectorizer

    settings = TfidfVectorizer(lowercase=lowercase, ngram_range=ngrams, token_pattern=r"(?u)\w+")
    return settings.build_analyzer()


@functools.lru_cache(maxsize=4096)
def _terms(text: str, lowercase: bool, ngrams: tuple[int, int]) -> tuple[str, ...]:
    """A text's terms as scikit-learn's analyser gives them, kept for the latest 4,096 texts (the
    analyser of :attr:`TfIdf.vectorizer`, for prompts counted before its fit's corpus was reset)."""
    return tuple(_analyser(lowercase, ngrams)(text))


class _Corpus:
    """Every prompt counted so far under one setting of the analyser: its terms' counts over one
    index of every term seen. A fit or a transform reads counts made once, instead of tokenising
    and counting each prompt again for each fold and learner of a cross-fit (each prompt's
    Python-level counting is most of a TF-IDF fit's time)."""

    def __init__(self, lowercase: bool, ngrams: tuple[int, int]) -> None:
        self._analyse = functools.partial(_terms, lowercase=lowercase, ngrams=ngrams)
        self.index: dict[str, int] = {}  # term → its column among every term seen
        self.names: list[str] = []  # column → term
        self._rows: dict[str, tuple[np.ndarray, np.ndarray]] = {}  # text → (columns, counts)
        self._rank = np.zeros(0, dtype=np.int64)
        self._lock = threading.Lock()  # fits in threads (a grid's) add terms one at a time

    @property
    def full(self) -> bool:
        """Whether it holds more prompts or terms than a corpus keeps (see :func:`_corpus`)."""
        return len(self._rows) > _CORPUS_PROMPTS or len(self.names) > _CORPUS_TERMS

    def _row(self, text: str) -> tuple[np.ndarray, np.ndarray]:
        found = self._rows.get(text)
        if found is None:
            counts = Counter(self._analyse(text))
            index, names = self.index, self.names
            columns = []
            for term in counts:
                at = index.get(term)
                if at is None:
                    at = index[term] = len(names)
                    names.append(term)
                columns.append(at)
            found = self._rows[text] = (
                np.array(columns, dtype=np.int32),
                np.fromiter(counts.values(), dtype=np.float32, count=len(counts)),
            )
        return found

    def counts(self, texts: list[str]) -> Any:
        """The texts' term counts: a float32 CSR matrix over every term seen (as
        ``CountVectorizer`` makes one over its vocabulary)."""
        from scipy import sparse

        with self._lock:
            rows = [self._row(text) for text in texts]
            width = len(self.names)
        ends = np.cumsum([len(columns) for columns, _ in rows], dtype=np.int64)
        indptr = np.concatenate([np.zeros(1, dtype=np.int64), ends])
        columns = np.concatenate([np.zeros(0, dtype=np.int32), *(c for c, _ in rows)])
        values = np.concatenate([np.zeros(0, dtype=np.float32), *(v for _, v in rows)])
        return sparse.csr_matrix((values, columns, indptr), shape=(len(rows), width))

    def alphabetical(self, columns: np.ndarray) -> np.ndarray:
        """``columns`` in the alphabetical order of their terms (the order of a fitted
        vectoriser's vocabulary)."""
        with self._lock:
            if len(self._rank) < len(self.names):
                order = sorted(range(len(self.names)), key=self.names.__getitem__)
                rank = np.empty(len(order), dtype=np.int64)
                rank[order] = np.arange(len(order))
                self._rank = rank
            rank = self._rank
        return columns[np.argsort(rank[columns])]


#: A corpus per setting of the analyser (see :func:`_corpus`).
_CORPORA: dict[tuple[bool, tuple[int, int]], _Corpus] = {}
#: The prompts and the terms a corpus holds before it starts again: a prompt's counts take
#: about 1 kB (a RouteLLM prompt has ~100 distinct unigrams and bigrams), a term about 100
#: bytes, so a full corpus holds about 150 MB.
_CORPUS_PROMPTS = 50_000
_CORPUS_TERMS = 1_000_000


def _corpus(lowercase: bool, ngrams: tuple[int, int]) -> _Corpus:
    """The corpus of this setting of the analyser, started again once it is full (fitted
    features keep the one they were fitted on)."""
    key = (lowercase, ngrams)
    corpus = _CORPORA.get(key)
    if corpus is None or corpus.full:
        corpus = _CORPORA[key] = _Corpus(lowercase, ngrams)
    return corpus


#: The latest fits (settings and training texts → what the fit made): the learners of a
#: cross-fit fitted on the same folds (kNN, logistic regression, ...) share each fold's fit.
_FITTED: dict[tuple[str, tuple[str, ...]], tuple[Any, Any, Any]] = {}
_FITS_KEPT = 8


class TfIdf:
    """TF-IDF of word n-grams: scikit-learn's ``TfidfVectorizer`` (smooth idf
    ``ln((1+n)/(1+df)) + 1``, optional ``1 + ln(tf)``, rows L2-normalised), with words as runs of
    ``\\w`` (one-letter words and digits count) and ``transform`` giving a float32 SciPy CSR
    matrix. Each distinct prompt is tokenised and counted once across fits and transforms (the
    counts are kept per setting, for the latest 50,000 prompts or so).

    The vocabulary is the ``max_features`` most frequent terms (total count in the training
    texts) among those in at least ``min_df`` of them; :attr:`vectorizer` is the fitted
    ``TfidfVectorizer``, :attr:`vocabulary` and :attr:`idf` its vocabulary and weights.
    """

    def __init__(
        self,
        max_features: int = 4096,
        ngrams: tuple[int, int] = (1, 2),
        sublinear_tf: bool = True,
        min_df: int = 1,
        lowercase: bool = True,
    ) -> None:
        self.max_features = check_int(max_features, "TfIdf max_features", low=1)
        if (
            not isinstance(ngrams, tuple | list)
            or len(ngrams) != 2
            or not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in ngrams)
            or not 1 <= ngrams[0] <= ngrams[1]
        ):
            raise ArgumentError(
                f"TfIdf ngrams must be a pair (low, high) of ints with 1 ≤ low ≤ high, got {ngrams!r}"
            )
        self.ngrams = (int(ngrams[0]), int(ngrams[1]))
        if not isinstance(sublinear_tf, bool) or not isinstance(lowercase, bool):
            raise ArgumentTypeError("TfIdf sublinear_tf and lowercase must be True or False")
        self.sublinear_tf = sublinear_tf
        self.min_df = check_int(min_df, "TfIdf min_df", low=1)
        self.lowercase = lowercase
        self.vectorizer: Any = None
        # the corpus the fit read, the corpus's column of each of its terms, and the fitted weights
        self._fitted_on: tuple[_Corpus, np.ndarray, Any] | None = None

    def __repr__(self) -> str:
        return (
            f"TfIdf(max_features={self.max_features}, ngrams={self.ngrams}, "
            f"sublinear_tf={self.sublinear_tf}, min_df={self.min_df}, lowercase={self.lowercase})"
        )

    def __getstate__(self) -> dict[str, Any]:
        # the corpus stays in this process: a copy transforms with its vectorizer
        return {**self.__dict__, "_fitted_on": None}

    @property
    def vocabulary(self) -> dict[str, int]:
        """Each kept term's column (alphabetical order); empty before a fit."""
        found = {} if self.vectorizer is None else self.vectorizer.vocabulary_
        return {term: int(at) for term, at in sorted(found.items(), key=lambda item: item[1])}

    @property
    def idf(self) -> np.ndarray:
        """The idf weight of each column."""
        if self.vectorizer is None:
            return np.zeros(0, dtype=np.float32)
        return np.asarray(self.vectorizer.idf_, dtype=np.float32)

    def fit_transform(self, requests: Sequence[Request]) -> Any:
        """Learn the vocabulary and idf weights of the training prompts; their rows."""
        texts = _texts(requests, "TfIdf.fit")
        if not texts:
            raise ArgumentError("TfIdf.fit needs at least one request")
        key = (repr(self), tuple(texts))
        fitted = _FITTED.get(key)  # another learner's fit on the same fold, if any
        if fitted is None:
            fitted = _FITTED[key] = self._fit(texts)
            while len(_FITTED) > _FITS_KEPT:
                _FITTED.pop(next(iter(_FITTED)), None)
        self.vectorizer, self._fitted_on, rows = fitted
        return rows.copy()

    def _fit(self, texts: list[str]) -> tuple[Any, tuple[_Corpus, np.ndarray, Any], Any]:
        """What ``TfidfVectorizer(...).fit_transform(texts)`` learns and gives (the same
        vocabulary, weights and rows), from the corpus's counts."""
        from sklearn.feature_extraction.text import TfidfTransformer, TfidfVectorizer

        corpus = _corpus(self.lowercase, self.ngrams)
        counts = corpus.counts(texts)
        frequency = np.bincount(counts.indices, minlength=counts.shape[1])
        seen = corpus.alphabetical(np.flatnonzero(frequency))
        kept = frequency[seen] >= self.min_df
        if kept.sum() > self.max_features:  # the most frequent, as the vectoriser picks them
            totals = np.asarray(counts.sum(axis=0)).ravel()[seen]
            best = (-totals[kept]).argsort()[: self.max_features]
            chosen = np.zeros(len(seen), dtype=bool)
            chosen[np.flatnonzero(kept)[best]] = True
            kept = chosen
        terms = seen[kept]
        if not len(terms):
            raise ArgumentError(
                f"TfIdf.fit: no term of the {len(texts)} training prompt(s) is in at least "
                f"min_df={self.min_df} of them (or they hold no words at all)"
            )
        weights = TfidfTransformer(sublinear_tf=self.sublinear_tf)
        rows = weights.fit_transform(_columns(counts, terms))
        vectorizer = TfidfVectorizer(
            analyzer=functools.partial(_terms, lowercase=self.lowercase, ngrams=self.ngrams),
            max_features=self.max_features,
            min_df=self.min_df,
            sublinear_tf=self.sublinear_tf,
            dtype=np.float32,
        )
        vectorizer.vocabulary_ = {corpus.names[at]: j for j, at in enumerate(terms.tolist())}
        vectorizer.idf_ = weights.idf_
        return vectorizer, (corpus, terms, weights), rows

    def fit(self, requests: Sequence[Request]) -> None:
        """Learn the vocabulary and the idf weights of the training prompts."""
        self.fit_transform(requests)

    def transform(self, requests: Sequence[Request]) -> Any:
        """One unit-length float32 row per request, a SciPy CSR matrix (zero where no term is in
        the vocabulary)."""
        if self.vectorizer is None:
            raise ArgumentError("TfIdf.transform before fit: fit it on training requests first")
        texts = _texts(requests, "TfIdf.transform")
        if self._fitted_on is None or self._fitted_on[0].full:
            return self.vectorizer.transform(texts)  # a copy, or a corpus grown past its bound
        corpus, terms, weights = self._fitted_on
        return weights.transform(_columns(corpus.counts(texts), terms), copy=False)


def _columns(counts: Any, terms: np.ndarray) -> Any:
    """The counts of ``terms`` (columns of the corpus), indices sorted as ``CountVectorizer``
    sorts them."""
    selected = counts[:, terms]
    selected.sort_indices()
    return selected


class Embed:
    """Any embedding function as features: ``fn(list_of_texts) -> (n, d)`` array-like (a
    sentence-transformers ``model.encode``, a client for an embeddings endpoint).

    Each distinct prompt is embedded once, in batches of ``batch_size``, and kept in :attr:`cache`
    (shared by every router fitted with this object), so cross-fitting or scoring a request again
    costs no call. Rows are L2-normalised; nothing is learned from the training set.
    """

    def __init__(self, fn: Callable[[list[str]], Any], batch_size: int = 64) -> None:
        if not callable(fn):
            raise ArgumentTypeError(
                f"Embed needs a function list[str] -> (n, d) array, got {type(fn).__name__}"
            )
        self.fn = fn
        self.batch_size = check_int(batch_size, "Embed batch_size", low=1)
        self.cache: dict[str, np.ndarray] = {}
        self.dim: int | None = None

    def __repr__(self) -> str:
        name = getattr(self.fn, "__qualname__", type(self.fn).__name__)
        return f"Embed({name}, batch_size={self.batch_size})"

    def fit(self, requests: Sequence[Request]) -> None:
        """Embed the training prompts now (nothing to learn: the function is fixed)."""
        self.transform(requests)

    def _call(self, batch: list[str]) -> np.ndarray:
        what = f"Embed: fn({len(batch)} texts)"
        try:
            result = np.asarray(self.fn(batch), dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ArgumentError(f"{what} must return numbers shaped (n, d): {e}") from e
        if result.ndim != 2 or result.shape[0] != len(batch) or result.shape[1] == 0:
            raise ArgumentError(
                f"{what} returned an array of shape {result.shape}; expected ({len(batch)}, d) "
                "with d ≥ 1: one row per text"
            )
        if self.dim is not None and result.shape[1] != self.dim:
            raise ArgumentError(
                f"{what} returned rows of {result.shape[1]} numbers, earlier calls {self.dim}"
            )
        if not np.isfinite(result).all():
            bad = int((~np.isfinite(result)).any(axis=1).sum())
            raise ArgumentError(f"{what} returned NaN or infinite values in {bad} row(s)")
        self.dim = int(result.shape[1])
        return _normalise(result)

    def transform(self, requests: Sequence[Request]) -> np.ndarray:
        """The cached unit-length embedding of each request's prompt (new prompts embedded now)."""
        texts = _texts(requests, "Embed.transform")
        cache = self.cache
        new = list(dict.fromkeys(t for t in texts if t not in cache))
        for start in range(0, len(new), self.batch_size):
            batch = new[start : start + self.batch_size]
            cache.update(zip(batch, self._call(batch), strict=True))
        if not texts:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return np.stack([cache[t] for t in texts])


class Column:
    """Precomputed vectors in a metadata column (``request.metadata[name]``): each cell a list or
    array of floats, or a string of them (JSON ``"[0.1, 0.2]"`` or separated by spaces/commas,
    since :func:`sykit.datasets.from_frame` keeps metadata cells scalar), of two or more numbers
    (a row scaled to unit length keeps only the sign of one number, so one is refused). The
    column must be a *metadata* column: a router only sees a request's metadata when it routes."""

    def __init__(self, name: str) -> None:
        if not isinstance(name, str) or not name:
            raise ArgumentTypeError(f"Column needs a column name (str), got {name!r}")
        self.name = name
        self.dim: int | None = None

    def __repr__(self) -> str:
        return f"Column({self.name!r})"

    def key(self, request: Request) -> Hashable:
        """The cell itself (as a hashable value): the row depends on nothing else."""
        cell = self._cell(request)
        if isinstance(cell, str):
            return cell
        return tuple(np.asarray(cell, dtype=np.float64).ravel().tolist())

    def _cell(self, request: Request) -> Any:
        if not isinstance(request, Request):
            raise ArgumentTypeError(
                f"Column({self.name!r}) reads request.metadata: it needs sykit.Request objects, "
                f"got {type(request).__name__}"
            )
        metadata: Mapping[str, Any] = request.metadata
        if self.name not in metadata:
            raise ArgumentError(
                f"Column({self.name!r}): request {request.id!r} has no {self.name!r} metadata; "
                f"its metadata has: {', '.join(map(repr, metadata)) or 'nothing'} (the column "
                "must be one of the dataset's metadata_columns)"
            )
        cell = metadata[self.name]
        if _empty(cell):
            raise ArgumentError(
                f"Column({self.name!r}): request {request.id!r}'s {self.name!r} cell is empty "
                f"({cell!r}): every request needs a vector there (fill the cell, or leave the "
                "request out of the dataset)"
            )
        return cell

    def _vector(self, request: Request) -> np.ndarray:
        cell = self._cell(request)
        try:
            if isinstance(cell, str):
                text = cell.strip()
                values = (
                    json.loads(text)
                    if text.startswith("[")
                    else [float(v) for v in re.split(r"[\s,]+", text) if v]
                )
            else:
                values = cell
            vector = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError) as e:
            raise ArgumentError(
                f"Column({self.name!r}): request {request.id!r} holds {_short(cell)}, not a vector "
                f"of numbers ({e})"
            ) from e
        if vector.size == 1 and vector.ndim <= 1:
            raise ArgumentError(
                f"Column({self.name!r}): request {request.id!r} holds one number "
                f"({_short(cell)}), not a vector: rows are scaled to unit length, so one number "
                "would keep only its sign; give each request a vector of two or more numbers"
            )
        if vector.ndim != 1 or vector.size == 0:
            raise ArgumentError(
                f"Column({self.name!r}): request {request.id!r} holds an array of shape "
                f"{vector.shape}, not a non-empty vector"
            )
        if not np.isfinite(vector).all():
            raise ArgumentError(
                f"Column({self.name!r}): request {request.id!r} holds NaN or infinite values"
            )
        return vector

    def fit(self, requests: Sequence[Request]) -> None:
        """Record the vectors' length, so a request of another length is refused later."""
        self.dim = None
        self.dim = int(self.transform(requests).shape[1])

    def transform(self, requests: Sequence[Request]) -> np.ndarray:
        """Each request's vector, L2-normalised."""
        vectors = [self._vector(r) for r in request_list(requests, f"Column({self.name!r})")]
        dims = {len(v) for v in vectors}
        if self.dim is not None:
            dims.add(self.dim)
        if len(dims) > 1:
            raise ArgumentError(
                f"Column({self.name!r}) holds vectors of different lengths: {sorted(dims)}"
            )
        if not vectors:
            return np.zeros((0, self.dim or 0), dtype=np.float32)
        return _normalise(np.stack(vectors))


def _empty(cell: Any) -> bool:
    """Whether a metadata cell is missing: None, or a NaN a table holds where it has no value."""
    if cell is None:
        return True
    try:
        return isinstance(cell, numbers.Real) and math.isnan(cell)
    except (TypeError, ValueError, OverflowError):
        return False


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
