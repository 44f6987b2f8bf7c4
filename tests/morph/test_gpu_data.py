"""CSR morph data against dense morphing, bounds, layouts."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import random_prim
from vkmorph.morph.gpu_data import build_gpu_morph_data


def csr_morph(data, weights):
    """Apply the CSR data the way the shader does, in numpy (positions only)."""
    p = data.base_vertices["position"][:, :3].astype(np.float64).copy()
    for v in range(data.vertex_count):
        for i in range(data.vertex_offsets[v], data.vertex_offsets[v + 1]):
            d = data.deltas[i]
            p[v] += weights[d["metadata"][0]] * d["position"][:3]
    return p


@settings(max_examples=40, deadline=None)
@given(V=st.integers(1, 40), T=st.integers(0, 6), density=st.sampled_from([0.0, 0.1, 0.5, 1.0]),
       seed=st.integers(0, 2**16))
def test_csr_equals_dense_and_stays_in_bounds(V, T, density, seed):
    rng = np.random.default_rng(seed)
    prim = random_prim(rng, V, T, density)
    data = build_gpu_morph_data(prim)
    assert data.vertex_offsets[0] == 0 and data.vertex_offsets[-1] == data.delta_count
    assert (np.diff(data.vertex_offsets.astype(np.int64)) >= 0).all()
    expected_pairs = sum(int(np.any(t.position_deltas != 0, axis=1).sum()) for t in prim.morph_targets)
    assert data.delta_count == expected_pairs  # all-zero pairs omitted
    for _ in range(4):
        w = rng.random(T)
        w[rng.random(T) < 0.3] = 0.0
        dense = prim.vertices["position"].astype(np.float64) + sum(
            (w[k] * t.position_deltas for k, t in enumerate(prim.morph_targets)), np.zeros((V, 3)))
        np.testing.assert_allclose(csr_morph(data, w), dense, atol=1e-5)
        lo, hi = data.conservative_bounds
        assert (dense >= lo - 1e-5).all() and (dense <= hi + 1e-5).all()
    # corners of the weight cube are the extremes
    for w in (np.zeros(T), np.ones(T)):
        dense = csr_morph(data, w)
        assert (dense >= data.conservative_bounds[0] - 1e-5).all()
        assert (dense <= data.conservative_bounds[1] + 1e-5).all()


def test_metadata_and_ordering():
    rng = np.random.default_rng(3)
    prim = random_prim(rng, 10, 4, 0.6)
    data = build_gpu_morph_data(prim)
    for v in range(10):
        tgts = data.deltas["metadata"][data.vertex_offsets[v]:data.vertex_offsets[v + 1], 0]
        assert list(tgts) == sorted(tgts)
        for t in tgts:
            np.testing.assert_array_equal(data.deltas["position"][data.vertex_offsets[v] + list(tgts).index(t), :3],
                                          prim.morph_targets[t].position_deltas[v])

