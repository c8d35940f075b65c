"""A wrong argument to sykit.learn is refused with a sykit error that says what to change, before
any fit where it can be known; and the first fit of a process computes what every later one does."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pandas as pd
import pytest
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LinearRegression, LogisticRegression
from sklearn.model_selection import GridSearchCV
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import FunctionTransformer

import sykit as sy
from sykit import ArgumentError, ArgumentTypeError, learn

pytestmark = pytest.mark.filterwarnings("ignore:the price catalogue does not know:UserWarning")

WEAK, STRONG = "small", "large"


def table(n: int = 40, seed: int = 0, weak: object = None, strong: object = None, **columns):
    """Prompts with "hard" in them are solved by the large model only; ``weak``/``strong``
    replace the grades (NaN: ungraded); ``columns`` become metadata."""
    rng = np.random.default_rng(seed)
    hard = rng.uniform(size=n) < 0.5
    frame = pd.DataFrame(
        {
            "prompt": [
                ("hard " if h else "easy ") + f"task number {i}" for i, h in enumerate(hard)
            ],
            "weak_ok": np.where(hard, 0.0, 1.0) if weak is None else weak,
            "strong_ok": np.ones(n) if strong is None else strong,
            **columns,
        }
    )
    return sy.datasets.from_frame(
        frame,
        prompt="prompt",
        quality={WEAK: "weak_ok", STRONG: "strong_ok"},
        metadata=list(columns) or None,
    )


def hard_word(train: sy.datasets.Dataset):
    return lambda request: float("hard" in learn.prompt_text(request))


def priced() -> sy.datasets.Dataset:
    """Three models the price catalogue knows."""
    rng = np.random.default_rng(0)
    names = ["gpt-4o", "gpt-4o-mini", "claude-3-haiku"]
    frame = pd.DataFrame({"prompt": [f"task {i}" for i in range(30)]})
    for name in names:
        frame[name] = rng.uniform(size=30)
    return sy.datasets.from_frame(frame, prompt="prompt", quality={m: m for m in names})


# -- seeds -----------------------------------------------------------------------------------------
EVALUATIONS = {
    "cross_fit": lambda seed: learn.cross_fit(hard_word, table(), seed=seed, resamples=100),
    "transfer": lambda seed: learn.transfer(
        hard_word, train=table(), test=table(seed=1), seed=seed, resamples=100
    ),
    "cross_fit_costs": lambda seed: learn.cross_fit_costs(learn.Knn(), priced(), seed=seed),
}


@pytest.mark.parametrize("evaluation", list(EVALUATIONS))
def test_a_seed_numpy_cannot_take_is_refused_up_front(evaluation):
    run = EVALUATIONS[evaluation]
    for seed in (-1, 2**63, 2**70):
        with pytest.raises(ArgumentError, match=r"seed must be an int from 0 to 2\*\*63 - 1"):
            run(seed)
    with pytest.raises(ArgumentTypeError, match=r"seed must be an int .*got bool True"):
        run(True)


def test_the_largest_seed_is_taken_and_a_learners_seed_fits_scikit_learns_range():
    cv = learn.cross_fit(hard_word, table(), seed=2**63 - 1, resamples=100)
    assert cv.apgr.value > cv.random.value + 0.1
    for learner in (learn.Knn, learn.MatrixFactorization):
        with pytest.raises(ArgumentError, match=r"seed must be an int from 0 to 2\*\*32 - 1"):
            learner(seed=2**32)
    learn.Knn(seed=2**32 - 1).fit(table())


# -- the first fit of a process --------------------------------------------------------------------
FIRST_FIT = """
import warnings

import numpy as np
import pandas as pd

import sykit as sy

warnings.simplefilter("ignore")
rng = np.random.default_rng(0)
words = [f"w{i}" for i in range(300)]
n = 60
weak = rng.integers(0, 2, n).astype(float)
frame = pd.DataFrame(
    {
        "prompt": [" ".join(rng.choice(words, 12)) for _ in range(n)],
        "a": weak,
        "b": np.clip(weak + rng.integers(0, 2, n), 0, 1),
    }
)
data = sy.datasets.from_frame(frame, prompt="prompt", quality={"weak": "a", "strong": "b"})
first, second = (
    sy.learn.cross_fit(sy.learn.MatrixFactorization(max_iter=50), data, resamples=100)
    for _ in range(2)
)
pd.testing.assert_frame_equal(
    first.comparison.requests, second.comparison.requests, check_exact=True
)
"""


def test_the_first_matrix_factorisation_of_a_process_is_computed_as_every_later_one():
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FIRST_FIT)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr[-2000:]


# -- transfer --------------------------------------------------------------------------------------
def test_transfer_refuses_a_group_column_test_does_not_have():
    with pytest.raises(ArgumentError, match=r"transfer's test: group column 'nope' is not in"):
        learn.transfer(hard_word, train=table(), test=table(seed=1), group="nope")


def test_transfer_names_the_table_and_the_model_without_grades_before_fitting():
    fitted: list[object] = []

    def fit(train: sy.datasets.Dataset):
        fitted.append(train)
        return hard_word(train)

    ungraded = np.full(20, np.nan)
    with pytest.raises(ArgumentError, match=r"^test has no grades for 'small':.*\['large'\]"):
        learn.transfer(fit, train=table(), test=table(20, weak=ungraded), weak=WEAK, strong=STRONG)
    with pytest.raises(ArgumentError, match=r"^train has no grades for 'large'"):
        learn.transfer(
            fit, train=table(20, strong=ungraded), test=table(), weak=WEAK, strong=STRONG
        )
    apart = table(
        20, weak=np.r_[np.ones(10), ungraded[:10]], strong=np.r_[ungraded[:10], np.ones(10)]
    )
    with pytest.raises(ArgumentError, match=r"no request of test is graded for both 'small' and"):
        learn.transfer(fit, train=table(), test=apart, weak=WEAK, strong=STRONG)
    assert not fitted


# -- cross_fit_costs -------------------------------------------------------------------------------
def test_cross_fit_costs_refuses_models_and_lambdas_it_cannot_read():
    data = priced()
    with pytest.raises(ArgumentTypeError, match=r"list of two or more model names, got the one"):
        learn.cross_fit_costs(learn.Knn(), data, models="gpt-4o")
    with pytest.raises(ArgumentTypeError, match=r"models must be a list of model names, got int"):
        learn.cross_fit_costs(learn.Knn(), data, models=5)  # type: ignore[arg-type]
    with pytest.raises(ArgumentTypeError, match=r"model names must be non-empty strings"):
        learn.cross_fit_costs(learn.Knn(), data, models=["gpt-4o", None])  # type: ignore[list-item]
    for lambdas in (None, "0.1", 0.5):
        with pytest.raises(ArgumentTypeError, match=r"lambdas must be a list of numbers ≥ 0"):
            learn.cross_fit_costs(learn.Knn(), data, lambdas=lambdas)  # type: ignore[arg-type]


# -- the learner -----------------------------------------------------------------------------------
def test_a_learners_class_is_refused_with_how_to_make_one():
    message = r"^Knn is a class: pass Knn\(\) \(an instance\)$"
    with pytest.raises(ArgumentTypeError, match=message):
        learn.cross_fit(learn.Knn, table())
    with pytest.raises(ArgumentTypeError, match=message):
        learn.transfer(learn.Knn, train=table(), test=table(seed=1))
    with pytest.raises(ArgumentTypeError, match=message):
        learn.cross_fit_costs(learn.Knn, priced())


def test_a_text_vectoriser_inside_a_meta_estimator_gets_the_prompt_texts():
    search = GridSearchCV(
        make_pipeline(TfidfVectorizer(), LogisticRegression()),
        {"logisticregression__C": [0.1, 1.0]},
        cv=2,
    )
    router = learn.Estimator(search).fit(table())
    assert router.details["features"] == "text"
    assert router.score(WEAK, STRONG)(sy.Request("hard task")) > 0.5


def test_a_fit_on_feature_rows_that_fails_in_a_text_vectoriser_says_use_text():
    later = make_pipeline(FunctionTransformer(), TfidfVectorizer(), LinearRegression())
    given = make_pipeline(TfidfVectorizer(), LinearRegression())
    for estimator, features in ((later, None), (given, learn.TfIdf())):
        with pytest.raises(ArgumentError, match=r"fit failed .*use features='text'"):
            learn.Estimator(estimator, "quality", features).fit(table())
    with pytest.raises(ArgumentError, match=r"fit failed") as refused:
        learn.Estimator(LogisticRegression(C=-1.0)).fit(table())
    assert "features='text'" not in str(refused.value)  # no vectoriser: no such advice


class Relabelled(BaseEstimator, ClassifierMixin):
    """Fits nothing; its classes are its own words, not the labels it was given."""

    def fit(self, x, y):
        self.classes_ = np.array(["lose", "win"])
        return self

    def predict_proba(self, x):
        return np.tile([0.3, 0.7], (x.shape[0], 1))


class OneColumn(Relabelled):
    """``predict_proba`` gives one number per row, not one per class."""

    def fit(self, x, y):
        self.classes_ = np.array([0, 1])
        return self

    def predict_proba(self, x):
        return np.full(x.shape[0], 0.5)


def test_a_wins_classifier_that_relabels_its_classes_or_gives_one_column_is_named():
    with pytest.raises(ArgumentError, match=r"classes_ are \['lose', 'win'\], without the label 1"):
        learn.Estimator(Relabelled()).fit(table())
    router = learn.Estimator(OneColumn()).fit(table())
    with pytest.raises(ArgumentError, match=r"predict_proba gave shape \(2,\) for 2 request"):
        router.predict([sy.Request("a"), sy.Request("b")])


def test_a_nan_score_is_named_with_its_request():
    def fit(train: sy.datasets.Dataset):
        return lambda request: float("nan") if "hard" in learn.prompt_text(request) else 0.0

    with pytest.raises(ArgumentError, match=r"the router's score is NaN for held-out request \d+"):
        learn.cross_fit(fit, table(), resamples=100)


# -- features --------------------------------------------------------------------------------------
def test_column_says_a_cell_is_empty_and_refuses_one_number_however_written():
    vectors = ["[1, 2]"] * 10
    for empty in (None, np.nan):
        data = table(10, v=[empty, *vectors[1:]])
        with pytest.raises(ArgumentError, match=r"request 0's 'v' cell is empty \((None|nan)\)"):
            learn.Knn(features=learn.Column("v")).fit(data)
    for one in ("3", 3.0, 3, "[3]", [3.0]):
        with pytest.raises(ArgumentError, match=r"holds one number .*two or more numbers"):
            learn.Column("v").fit([sy.Request("?", metadata={"v": one})])
    learn.Column("v").fit([sy.Request("?", metadata={"v": "3 4"})])


def test_tfidf_takes_numpy_integers_as_ngrams():
    assert learn.TfIdf(ngrams=(np.int64(1), np.int32(2))).ngrams == (1, 2)
    with pytest.raises(ArgumentError, match="ngrams must be a pair"):
        learn.TfIdf(ngrams=(np.float64(1.0), 2))  # type: ignore[arg-type]
