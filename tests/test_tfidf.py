"""TF-IDF counted with NumPy over term ids: the same vocabulary, weights and rows as counting
each text's terms with a Counter (the plain definition below)."""

from __future__ import annotations

import pickle
from collections import Counter

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sykit as sy
from sykit.learn._features import TfIdf, prompt_text


def plain_fit_transform(features: TfIdf, train: list[str], test: list[str]):
    """The plain definition: Counters of terms, most frequent first (ties alphabetical)."""
    total: Counter[str] = Counter()
    df: Counter[str] = Counter()
    for text in train:
        counts = Counter(features._terms(text))
        total.update(counts)
        df.update(counts.keys())
    kept = [t for t in total if df[t] >= features.min_df]
    kept.sort(key=lambda t: (-total[t], t))
    kept = sorted(kept[: features.max_features])
    vocabulary = {t: i for i, t in enumerate(kept)}
    idf = (np.log((1 + len(train)) / (1 + np.array([df[t] for t in kept], float))) + 1).astype(
        np.float32
    )
    out = np.zeros((len(test), len(vocabulary)), dtype=np.float32)
    rows, cols, values = [], [], []
    for i, text in enumerate(test):
        counts = Counter(t for t in features._terms(text) if t in vocabulary)
        rows.extend([i] * len(counts))
        cols.extend(vocabulary[t] for t in counts)
        values.extend(counts.values())
    if rows:
        r, c = np.asarray(rows), np.asarray(cols)
        tf = np.asarray(values, dtype=np.float64)
        if features.sublinear_tf:
            tf = 1 + np.log(tf)
        weights = tf * idf[c]
        norms = np.sqrt(np.bincount(r, weights=weights * weights, minlength=len(test)))
        out[r, c] = weights / norms[r]
    return vocabulary, idf, out


words = st.sampled_from(["a", "B", "ç", "straße", "日本", "x1", "_", "the", "THE", "9", "?!"])
texts = st.lists(words, min_size=1, max_size=12).map(" ".join) | st.text(min_size=1, max_size=30)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    train=st.lists(texts, min_size=1, max_size=8),
    test=st.lists(texts, max_size=5),
    max_features=st.integers(1, 12),
    ngrams=st.sampled_from([(1, 1), (1, 2), (2, 3)]),
    min_df=st.integers(1, 2),
    sublinear_tf=st.booleans(),
    lowercase=st.booleans(),
)
def test_counting_with_term_ids_equals_the_plain_definition(
    train, test, max_features, ngrams, min_df, sublinear_tf, lowercase
):
    features = TfIdf(max_features, ngrams, sublinear_tf, min_df, lowercase)
    vocabulary, idf, out = plain_fit_transform(features, train, test)
    if not vocabulary:  # no term kept: the fit refuses
        with pytest.raises(sy.ArgumentError, match="no term"):
            features.fit([sy.Request(t) for t in train])
        return
    features.fit([sy.Request(t) for t in train])
    rows = features.transform([sy.Request(t) for t in test])
    assert list(features.vocabulary.items()) == list(vocabulary.items())
    assert features.idf.dtype == np.float32 and np.array_equal(features.idf, idf)
    assert rows.dtype == np.float32 and np.array_equal(rows, out)


def test_a_pickled_tfidf_transforms_as_before():
    features = TfIdf()
    requests = [sy.Request(f"word{i} shared") for i in range(200)]
    features.fit(requests)
    before = features.transform(requests[:5])
    restored = pickle.loads(pickle.dumps(features))
    assert np.array_equal(restored.transform(requests[:5]), before)
    assert [prompt_text(r) for r in requests[:1]] == ["word0 shared"]
