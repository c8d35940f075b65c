"""TF-IDF is scikit-learn's ``TfidfVectorizer`` with the documented settings (words as runs of
``\\w``), each distinct prompt tokenised once however many fits read it."""

from __future__ import annotations

import pickle

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sklearn.feature_extraction.text import TfidfVectorizer

import sykit as sy
from sykit.learn import _features
from sykit.learn._features import TfIdf, prompt_text

words = st.sampled_from(["a", "B", "ç", "straße", "日本", "x1", "_", "the", "THE", "9", "?!"])
texts = st.lists(words, min_size=1, max_size=12).map(" ".join) | st.text(min_size=1, max_size=30)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    train=st.lists(texts, min_size=1, max_size=8),
    test=st.lists(texts, max_size=5),
    max_features=st.integers(1, 12),
    ngrams=st.sampled_from([(1, 1), (1, 2), (2, 3)]),
    min_df=st.integers(1, 2),
    sublinear_tf=st.booleans(),
    lowercase=st.booleans(),
)
def test_tfidf_equals_scikit_learns_vectorizer_with_the_documented_settings(
    train, test, max_features, ngrams, min_df, sublinear_tf, lowercase
):
    plain = TfidfVectorizer(
        token_pattern=r"(?u)\w+",
        ngram_range=ngrams,
        max_features=max_features,
        min_df=min_df,
        sublinear_tf=sublinear_tf,
        lowercase=lowercase,
        dtype=np.float32,
    )
    features = TfIdf(max_features, ngrams, sublinear_tf, min_df, lowercase)
    try:
        plain.fit(train)
    except ValueError:  # no term kept: ours refuses too, with its own message
        with pytest.raises(sy.ArgumentError, match="no term"):
            features.fit([sy.Request(t) for t in train])
        return
    features.fit([sy.Request(t) for t in train])
    assert features.vocabulary == {t: int(i) for t, i in sorted(plain.vocabulary_.items())}
    assert np.array_equal(features.idf, plain.idf_.astype(np.float32))
    if test:
        rows = features.transform([sy.Request(t) for t in test])
        assert rows.dtype == np.float32
        assert np.array_equal(rows.toarray(), plain.transform(test).toarray())


def test_each_distinct_prompt_is_tokenised_once_across_fits_and_transforms():
    _features._terms.cache_clear()
    _features._CORPORA.clear()
    requests = [sy.Request(f"word{i} shared words here") for i in range(50)]
    TfIdf().fit(requests)
    TfIdf(max_features=10).fit(requests[:40])  # a second fit, as another fold's or learner's
    features = TfIdf()
    features.fit(requests + requests)
    features.transform(requests[:10])
    assert _features._terms.cache_info().misses == 50
    assert _features._terms.cache_info().hits == 0  # counted once: the counts are read again
    TfIdf(ngrams=(1, 1)).fit(requests)  # other settings: other terms
    assert _features._terms.cache_info().misses == 100


def test_a_corpus_started_again_gives_the_same_rows(monkeypatch):
    """Past its bound the corpus of counts starts again; features fitted on the old one keep
    transforming as the vectoriser does (through it while it is small, else the vectoriser)."""
    monkeypatch.setattr(_features, "_CORPUS_TERMS", 60)
    _features._CORPORA.clear()
    texts = [f"alpha{i % 7} beta{i % 3} gamma {i}" for i in range(40)]
    plain = TfidfVectorizer(
        token_pattern=r"(?u)\w+", ngram_range=(1, 2), sublinear_tf=True, dtype=np.float32
    )
    plain.fit(texts[:30])
    features = TfIdf()
    features.fit([sy.Request(t) for t in texts[:30]])
    for batch in (texts[30:], texts[:5], [f"new {i} alpha1" for i in range(30)]):
        rows = features.transform([sy.Request(t) for t in batch])
        assert np.array_equal(rows.toarray(), plain.transform(batch).toarray())
    other = TfIdf()
    other.fit([sy.Request(t) for t in texts[10:]])  # a new corpus: the old one passed its bound
    assert other._fitted_on is not None and other._fitted_on[0] is not features._fitted_on[0]


def test_a_pickled_tfidf_transforms_as_before():
    features = TfIdf()
    requests = [sy.Request(f"word{i} shared") for i in range(200)]
    features.fit(requests)
    before = features.transform(requests[:5]).toarray()
    restored = pickle.loads(pickle.dumps(features))
    assert np.array_equal(restored.transform(requests[:5]).toarray(), before)
    assert [prompt_text(r) for r in requests[:1]] == ["word0 shared"]
    with pytest.raises(sy.ArgumentError, match="before fit"):
        TfIdf().transform(requests[:1])


def test_fits_in_threads_count_each_term_once():
    """Fits in threads (a grid's) share the corpus of counts: each term gets one column, and each
    fit gives what it gives alone."""
    from concurrent.futures import ThreadPoolExecutor

    texts = [f"w{i % 97} v{i % 89} u{i} shared words" for i in range(600)]
    splits = [texts[k::4] for k in range(4)] * 3

    def fitted(part: list[str]) -> tuple[dict[str, int], np.ndarray]:
        features = TfIdf(max_features=50)
        rows = features.fit_transform([sy.Request(t) for t in part])
        return features.vocabulary, rows.toarray()

    _features._CORPORA.clear()
    with ThreadPoolExecutor(4) as pool:
        together = list(pool.map(fitted, splits))
    corpus = _features._corpus(True, (1, 2))
    assert len(corpus.names) == len(set(corpus.names)) == len(corpus.index)
    _features._CORPORA.clear()
    _features._FITTED.clear()
    for (vocabulary, rows), part in zip(together, splits, strict=True):
        alone_vocabulary, alone_rows = fitted(part)
        assert vocabulary == alone_vocabulary and np.array_equal(rows, alone_rows)
