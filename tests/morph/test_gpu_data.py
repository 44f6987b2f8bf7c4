"""CSR morph data against dense morphing, bounds, layouts."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.helpers import random_prim
from vkmorph.morph.gpu_data import CHUNK, build_chunked_batch, build_gpu_morph_data, count_deltas


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



def emulate_chunked(b, weights):
    """What the kernels compute from a ChunkedBatch, in numpy (float64): per batch vertex the weighted sums of
    position, normal and tangent deltas. Independent of build_chunked_batch's own loops: it decodes the masks
    bit by bit and the deltas from their raw words."""
    acc = np.zeros((len(b.base), 9))
    for fv, _count, first, end in b.chunks[:, :4].astype(np.int64):
        for e in range(first, end):
            slot, d0 = b.table[e]
            if weights[slot] == 0:
                continue
            lanes = np.flatnonzero(np.unpackbits(b.masks[e].view(np.uint8), bitorder="little"))
            d = d0 + np.arange(len(lanes))
            if b.delta_format == "full":
                pay = np.concatenate([b.delta_a[d].astype(np.float64), b.delta_b[d, None]], axis=1)
            else:
                q = np.concatenate([b.delta_a[d].view(np.int16).reshape(len(d), 8),
                                    b.delta_b.view(np.int16)[d][:, None]], axis=1) / 32767.0
                pay = q * np.repeat(b.scales[slot, :3].astype(np.float64), 3)[None]
            acc[fv + lanes] += weights[slot] * pay
    return acc


@pytest.mark.parametrize("fmt", ["full", "compact"])
def test_chunked_batch_equals_dense(fmt):
    """Instances share a layout; chunks never straddle primitives; every (chunk, target) block, mask bit and
    delta lands where the kernel looks for it; compact stays within scale / 65534 per component."""
    rng = np.random.default_rng(2)
    a, b, c = random_prim(rng, 517, 5, 0.3), random_prim(rng, 3, 2, 1.0), random_prim(rng, 300, 40, 0.05)
    prims, offsets = [a, b, a, c], [0, 5, 7, 12]
    batch = build_chunked_batch(prims, offsets, [0, 10_000, 20_000, 30_000], delta_format=fmt)
    W = rng.random(52)
    W[rng.random(52) < 0.3] = 0.0
    acc = emulate_chunked(batch, W)
    assert batch.delta_count == 2 * count_deltas(a) + count_deltas(b) + count_deltas(c)
    first = 0
    for prim, off, s in zip(prims, offsets, batch.slots):
        V = prim.vertex_count
        assert (s.first_vertex, s.chunk_count) == (first, -(-V // CHUNK))
        first += V
        dense = np.zeros((V, 9))
        bound = np.zeros(3)
        for k, t in enumerate(prim.morph_targets):
            for j, d in enumerate((t.position_deltas, t.normal_deltas, t.tangent_deltas)):
                dense[:, 3 * j:3 * j + 3] += W[off + k] * d
                bound[j] += W[off + k] * np.abs(d).max() / 65534
        got = acc[s.first_vertex:s.first_vertex + V]
        if fmt == "full":
            np.testing.assert_allclose(got, dense, atol=1e-6)
        else:
            assert (np.abs(got - dense) <= np.repeat(bound, 3)[None] + 1e-7).all()
        np.testing.assert_array_equal(batch.base[s.first_vertex:s.first_vertex + V].view(np.uint8),
                                      prim.vertices.view(np.uint8).reshape(V, -1)[:, :48])
        ch = batch.chunks[s.first_chunk:s.first_chunk + s.chunk_count]
        assert (ch[:, 1] <= CHUNK).all() and ch[:, 1].sum() == V and (ch[:, 0] >= s.first_vertex).all()
    assert not np.any(batch.delta_a[0]) and not np.any(batch.delta_b.view(np.uint16)[0])   # the zero delta


def test_vertex_major_form_for_the_per_vertex_kernel():
    """CPU devices' form: every vertex's deltas contiguous (targets ascending) after a record (first delta, target
    bitmask); chunks carry the record word, weight offset and mask width; no block table. Picking each vertex's
    deltas of the active targets as the kernel does (first + popcount of the mask bits below the target)
    reproduces the dense morph."""
    rng = np.random.default_rng(4)
    a, b = random_prim(rng, 300, 40, 0.4), random_prim(rng, 40, 3, 0.9)
    prims, offsets = [a, b, a], [0, 40, 43]
    batch = build_chunked_batch(prims, offsets, [0, 5000, 9000], vertex_lists=True)
    rec, ch = batch.vertex_records.astype(np.int64), batch.chunks.astype(np.int64)
    assert batch.delta_count == 2 * count_deltas(a) + count_deltas(b) and not ch[:, 3].any()
    W = rng.random(83)
    W[rng.random(83) < 0.5] = 0.0
    seen = 0
    for prim, off, s in zip(prims, offsets, batch.slots):
        T = len(prim.morph_targets)
        for c in range(s.first_chunk, s.first_chunk + s.chunk_count):
            assert ch[c, 6] == off and ch[c, 7] == (T + 31) // 32
            for lane in range(ch[c, 1]):
                r = ch[c, 2] + lane * (ch[c, 7] + 1)
                d, words = rec[r], rec[r + 1:r + 1 + ch[c, 7]]
                mask = sum(int(w) << (32 * k) for k, w in enumerate(words))
                v = ch[c, 0] - s.first_vertex + lane
                got, want = np.zeros(3), np.zeros(3)
                for t in range(T):
                    want += W[off + t] * prim.morph_targets[t].position_deltas[v]
                    if mask >> t & 1:
                        got += W[off + t] * batch.delta_a[d + bin(mask & ((1 << t) - 1)).count("1"), :3]
                        seen += 1
                np.testing.assert_allclose(got, want, atol=1e-6)
    assert seen == batch.delta_count



def test_vertex_major_form_without_numpy_bitwise_count(monkeypatch):
    """numpy < 2 has no bitwise_count: the byte-table popcount builds the same per-vertex layout (three mask
    words, strided record columns) as the built-in one."""
    from vkmorph.morph.gpu_data import _popcount32, layout_primitive

    rng = np.random.default_rng(8)
    prim = random_prim(rng, 700, 70, 0.2)
    x = rng.integers(0, 2**32, (50, 3), dtype=np.uint64).astype(np.uint32)
    want = [bin(int(v)).count("1") for v in x[:, 1]]
    built_in = [layout_primitive(prim, fmt, vertex_lists=True) for fmt in ("full", "compact")]
    monkeypatch.delattr(np, "bitwise_count", raising=False)
    assert _popcount32(x[:, 1]).tolist() == want and _popcount32(x[:0, 1]).tolist() == []
    for fmt, ref in zip(("full", "compact"), built_in):
        got = layout_primitive(prim, fmt, vertex_lists=True)
        for field in ("delta_a", "delta_b", "vertex_records", "conservative_bounds"):
            np.testing.assert_array_equal(getattr(got, field), getattr(ref, field))
