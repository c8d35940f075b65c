"""The bulk engine's draws of many attempts at once equal the simulated host's draws of one
attempt at a time, bit for bit, whatever the seed, the request ids (ints or text) and the
attempt numbers."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from sykit._base.rng import uniforms
from sykit._run.engines.bulk._draws import attempt_units

ids = st.one_of(st.integers(-(2**63), 2**63 - 1), st.text(max_size=20))


@settings(max_examples=200, deadline=None)
@given(
    seed=st.integers(0, 2**64),
    keys=st.lists(st.tuples(ids, st.integers(0, 12)), max_size=30),
    model=st.text(min_size=1, max_size=12),
)
def test_attempt_units_equal_the_scalar_draws(seed, keys, model):
    request_ids = [k for k, _ in keys]
    ns = [n for _, n in keys]
    units = attempt_units(seed, request_ids, model, ns)
    assert units.shape == (len(keys), 8)
    for row, (request_id, n) in zip(units, keys, strict=True):
        assert np.array_equal(row, np.asarray(uniforms(seed, request_id, model, n)))
