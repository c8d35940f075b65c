"""The hand-written optimisers the learners fit with, in NumPy: L-BFGS (and the L2-regularised
logistic regression solved with it), Adam's moment estimates, and the logistic link they share.

Private numerics of :mod:`sykit.learn._learners`; the matrix products they multiply by are in
:mod:`sykit.learn._sparse`.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from sykit.learn._sparse import _products


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return np.exp(-np.logaddexp(0.0, -z))


def _logit_of_mean(quality: np.ndarray) -> np.ndarray:
    mean = np.clip(np.nanmean(quality, axis=0), 1e-3, 1 - 1e-3)
    return np.asarray(np.log(mean / (1 - mean)))


# -- L-BFGS ----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class _Optimum:
    """Where L-BFGS stopped: the point, the iterations used, whether it converged and the largest
    gradient entry there relative to the start's (how far from the optimum it stopped)."""

    x: np.ndarray
    iterations: int
    converged: bool
    gradient: float


def _lbfgs(
    objective: Callable[[np.ndarray], tuple[float, np.ndarray]],
    start: np.ndarray,
    max_iter: int,
    memory: int = 10,
    gtol: float = 1e-5,
    ftol: float = 1e-10,
) -> _Optimum:
    """Minimise a smooth convex function with L-BFGS and a backtracking (Armijo) line search.
    Converged: a tolerance met, or the line search stopped by rounding with the gradient below
    1e-3 of its start."""
    x = start
    f, g = objective(x)
    g_first = max(float(np.abs(g).max()), 1e-12)

    def stop(at: np.ndarray, grad: np.ndarray, iterations: int, converged: bool) -> _Optimum:
        return _Optimum(at, iterations, converged, float(np.abs(grad).max()) / g_first)

    steps: list[tuple[np.ndarray, np.ndarray, float]] = []
    for iteration in range(1, max_iter + 1):
        if float(np.abs(g).max()) <= gtol * g_first:
            return stop(x, g, iteration - 1, True)
        # two-loop recursion: d = -H g
        q = g.copy()
        alphas = []
        for s, y, rho in reversed(steps):
            a = rho * float(s @ q)
            alphas.append(a)
            q -= a * y
        if steps:
            s, y, _ = steps[-1]
            q *= float(s @ y) / float(y @ y)
        else:
            q /= max(float(np.linalg.norm(g)), 1.0)
        for (s, y, rho), a in zip(steps, reversed(alphas), strict=True):
            q += s * (a - rho * float(y @ q))
        direction = -q
        slope = float(g @ direction)
        if slope >= 0:  # not a descent direction (rounding): restart from the gradient
            steps.clear()
            direction = -g / max(float(np.linalg.norm(g)), 1.0)
            slope = float(g @ direction)
        t = 1.0
        while True:
            x_new = x + t * direction
            f_new, g_new = objective(x_new)
            if f_new <= f + 1e-4 * t * slope or t < 1e-10:
                break
            t *= 0.5
        if t < 1e-10 and f_new > f:
            # no further decrease within float precision: converged if the gradient is small
            return stop(x, g, iteration, float(np.abs(g).max()) <= 1e-3 * g_first)
        s_k = x_new - x
        y_k = g_new - g
        sy = float(s_k @ y_k)
        if sy > 1e-12:
            steps.append((s_k, y_k, 1.0 / sy))
            if len(steps) > memory:
                steps.pop(0)
        done = f - f_new <= ftol * max(abs(f), abs(f_new), 1.0)
        x, f, g = x_new, f_new, g_new
        if done:
            return stop(x, g, iteration, True)
    return stop(x, g, max_iter, False)


def _fit_logistic(
    x: np.ndarray, quality: np.ndarray, c: float, max_iter: int
) -> tuple[np.ndarray, np.ndarray, _Optimum]:
    """Weights ``(d, m)`` and biases ``(m,)`` of one L2-regularised logistic regression per model
    (``0.5 |w|² + C Σ cross-entropy``, grades as soft labels, ungraded rows weighted 0), all
    models solved together: the objective is a sum of independent ones."""
    d = x.shape[1]
    m = quality.shape[1]
    graded = np.isfinite(quality)
    y = np.where(graded, quality, 0.0)
    weight = graded * c
    product = _products(x, m)

    def objective(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w = theta[: d * m].reshape(d, m)
        b = theta[d * m :]
        z = product.dot(w) + b
        loss = float(np.sum(weight * (np.logaddexp(0.0, z) - y * z))) + 0.5 * float(np.sum(w * w))
        r = weight * (_sigmoid(z) - y)
        grad_w = product.tdot(r) + w
        return loss, np.concatenate([grad_w.ravel(), r.sum(axis=0)])

    start = np.concatenate([np.zeros(d * m), _logit_of_mean(quality)])
    optimum = _lbfgs(objective, start, max_iter)
    theta = optimum.x
    return theta[: d * m].reshape(d, m), theta[d * m :], optimum


# -- Adam ------------------------------------------------------------------------------------------
@dataclass
class _Adam:
    """Adam's moment estimates for one parameter array."""

    first: np.ndarray
    second: np.ndarray

    @classmethod
    def like(cls, param: np.ndarray) -> _Adam:
        return cls(np.zeros_like(param), np.zeros_like(param))

    def step(self, param: np.ndarray, grad: np.ndarray, lr: float, t: int) -> None:
        self.first *= 0.9
        self.first += 0.1 * grad
        self.second *= 0.999
        self.second += 0.001 * grad * grad
        scale = lr * math.sqrt(1 - 0.999**t) / (1 - 0.9**t)
        param -= scale * self.first / (np.sqrt(self.second) + 1e-8)
