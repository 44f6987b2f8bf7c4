"""The range merge behind the morph pass's uploads and dispatches, against a plain per-element reference."""

from __future__ import annotations

import numpy as np

from vkmorph.render.morph_batch import merged_ranges


def reference(first, count, idx, gap):
    out = []
    for i in idx:
        s, e = int(first[i]), int(first[i] + count[i])
        if out and s - out[-1][1] <= gap:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return [(s, e - s) for s, e in out]


def test_merged_ranges_match_the_reference():
    rng = np.random.default_rng(7)
    for _ in range(200):
        n = int(rng.integers(1, 40))
        count = rng.integers(1, 9, n)
        first = np.concatenate([[0], np.cumsum(count)[:-1]])     # primitives laid out back to back
        idx = np.flatnonzero(rng.random(n) < rng.random())
        for gap in (0, 3, 256):
            starts, lengths = merged_ranges(first, count, idx, gap)
            assert list(zip(starts.tolist(), lengths.tolist())) == reference(first, count, idx, gap)
    s, c = merged_ranges(np.array([0, 5, 9]), np.array([5, 4, 2]), np.array([0, 2]))
    assert s.tolist() == [0, 9] and c.tolist() == [5, 2]            # not adjacent: two ranges
    s, c = merged_ranges(np.array([0, 5, 9]), np.array([5, 4, 2]), np.array([0, 1, 2]))
    assert s.tolist() == [0] and c.tolist() == [11]                 # all adjacent: one
