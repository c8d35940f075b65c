"""Bulk evaluation: runs whose requests do not depend on one another, evaluated column-wise."""

from sykit._run.engines.bulk._run import evaluate, is_static, refusal

__all__ = ["evaluate", "is_static", "refusal"]
