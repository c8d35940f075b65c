"""Routers you could deploy, trained and judged honestly: cross-fitting, learned routers, intervals.

    ds = sy.datasets.load("routellm").filter(benchmark="gsm8k", contaminated=False)
    cv = sy.learn.cross_fit(sy.learn.Knn(), ds)   # fitted on 4 folds, judged on the 5th, 5 times
    cv.apgr                                       # 0.61 [0.57, 0.65]: pooled held-out APGR, 95 % CI
    cv.random                                     # the random router: 0.500 ± its spread
    cv.comparison.summary()                       # the usual frames, every request routed once

Learners (``Knn``, ``Logistic``, ``CategoryPrior``, ``MatrixFactorization``) are fitted on a
dataset and predict each model's quality for a request from its prompt (TF-IDF features by default,
or any ``Embed(fn)``) or its metadata: thin adapters over scikit-learn (``TfidfVectorizer``,
``NearestNeighbors``, ``LogisticRegression``) and SciPy. ``Estimator(your_pipeline,
target="wins")`` makes any scikit-learn estimator or pipeline a learner. :func:`cross_fit` judges a router on a
weak/strong pair (APGR, AIQ, the random baseline), :func:`transfer` the same router fitted on one
table and judged on another (out of distribution); :func:`cross_fit_costs` over n models with a
cost–quality trade-off (AIQ and the non-dominated frontier). docs/evaluating-routers.md explains
how not to fool yourself.

May import: :mod:`sykit._base`, :mod:`sykit._results`, :mod:`sykit._world`, :mod:`sykit._hosts`,
:mod:`sykit.datasets`, :mod:`sykit._run`, :mod:`sykit.strategies`, :mod:`sykit._grid`,
:mod:`sykit.profiles`.
"""

from sykit._results.curve_stats import Estimate, random_apgr
from sykit.learn._costs import DEFAULT_LAMBDAS, CostCrossFit, cost_router, cross_fit_costs
from sykit.learn._crossfit import CrossFit, cross_fit, evaluation_host
from sykit.learn._estimator import Estimator
from sykit.learn._features import Column, Embed, Features, TfIdf, prompt_text
from sykit.learn._learners import CategoryPrior, Knn, Logistic, MatrixFactorization
from sykit.learn._routers import Router, from_scores
from sykit.learn._transfer import Transfer, transfer

__all__ = [
    "DEFAULT_LAMBDAS",
    "CategoryPrior",
    "Column",
    "CostCrossFit",
    "CrossFit",
    "Embed",
    "Estimate",
    "Estimator",
    "Features",
    "Knn",
    "Logistic",
    "MatrixFactorization",
    "Router",
    "TfIdf",
    "Transfer",
    "cost_router",
    "cross_fit",
    "cross_fit_costs",
    "evaluation_host",
    "from_scores",
    "prompt_text",
    "random_apgr",
    "transfer",
]

for _name in __all__:
    _obj = globals()[_name]
    if hasattr(_obj, "__module__") and not isinstance(_obj, tuple):
        _obj.__module__ = __name__
del _name, _obj
