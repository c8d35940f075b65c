"""Learned routers on the shipped RouteLLM table: cross-fitted APGR per benchmark, with intervals.

Every router is fitted on 4 of 5 grouped folds and routes the 5th (MT-Bench's two turns of a
question stay in one fold), for RouteLLM's sweep of strong shares 0.1 … 0.9; APGR has a 95 %
cluster-bootstrap interval; the random router's APGR on the same requests is its expected value
± its standard deviation over random rankings. Printed: one line per router and benchmark, the
wall time of each cross-fit, and whether the interval clears the random spread (its low end above
random's mean + 2 sd).

    python benchmarks/learned_routers.py                  # RouteLLM's own rows (contaminated left out)
    python benchmarks/learned_routers.py --all-rows       # every row of the table
    python benchmarks/learned_routers.py --costs          # also: kNN cost router over MMLU-Pro's 29 models
"""

from __future__ import annotations

import argparse
import time

from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline

import sykit as sy
from sykit import learn


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all-rows", action="store_true", help="keep contaminated rows")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--costs", action="store_true", help="also the n-model cost router")
    args = parser.parse_args()
    data = sy.datasets.load("routellm")
    if not args.all_rows:
        data = data.filter(contaminated=False)
    learners = {
        "kNN": learn.Knn(),
        "logistic": learn.Logistic(),
        "category prior": learn.CategoryPrior(),
        "matrix factorisation": learn.MatrixFactorization(),
        # any scikit-learn pipeline of your own: a classifier of "the strong model wins"
        "sklearn pipeline": learn.Estimator(
            make_pipeline(TfidfVectorizer(), LogisticRegression()), target="wins"
        ),
    }
    rows = "every row" if args.all_rows else "contaminated rows left out"
    print(f"RouteLLM table ({rows}), 5 grouped folds, seed {args.seed}")
    for benchmark in ("mt_bench", "gsm8k", "mmlu"):
        subset = data.filter(benchmark=benchmark)
        for name, learner in learners.items():
            started = time.perf_counter()
            cv = learn.cross_fit(learner, subset, seed=args.seed)
            wall = time.perf_counter() - started
            clears = cv.apgr.low > cv.random.value + 2 * cv.random.sd
            print(
                f"  {benchmark:9s} {len(subset):5d} prompts  {name:21s} APGR {cv.apgr:.3f}  "
                f"random {cv.random.value:.3f} ± {cv.random.sd:.3f}  "
                f"{'clears random' if clears else 'within random spread':21s} {wall:5.1f} s"
            )
    if args.costs:
        mmlu = sy.datasets.load("mmlu_pro")
        started = time.perf_counter()
        cv = learn.cross_fit_costs(learn.Knn(), mmlu, seed=args.seed)
        print(
            f"\nMMLU-Pro, {len(mmlu.models)} models: {cv!r} in {time.perf_counter() - started:.1f} s"
        )
        print(
            cv.frontier[["strategy", "cost_per_request_usd", "mean_quality"]].to_string(index=False)
        )


if __name__ == "__main__":
    main()
