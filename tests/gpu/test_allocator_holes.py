"""The allocator's hole list (gpu/memory.py ``_Block``): alignment padding leaves no sliver holes, frees merge
with both neighbours, and a block that is only filled keeps one hole (an allocation's cost does not grow with
the buffers already placed). Pure bookkeeping: no Vulkan."""

from __future__ import annotations

import numpy as np

from vkmorph.gpu.memory import _Block


def bare_block(size: int) -> _Block:
    b = _Block.__new__(_Block)        # the bookkeeping only: no VkDeviceMemory
    b.size = size
    b.free, b._spans, b.used = [[0, size]], {}, 0
    return b


def test_padding_leaves_no_slivers_and_frees_merge():
    b = bare_block(1 << 20)
    rng = np.random.default_rng(3)
    starts = []
    for _ in range(500):
        size, align = int(rng.integers(1, 3000)), int(2 ** rng.integers(2, 9))
        s = b.take(size, align)
        assert s is not None and s % align == 0
        starts.append((s, size))
        assert len(b.free) == 1                  # only filled: one hole, whatever the count and alignments
    spans = sorted(b._spans.items())
    for (_s0, (o0, n0)), (_s1, (o1, _n1)) in zip(spans, spans[1:]):
        assert o0 + n0 == o1                     # spans tile the block: padding belongs to a span
    for k in rng.permutation(len(starts)):
        b.give(*starts[k])
    assert b.free == [[0, 1 << 20]] and b.used == 0 and not b._spans
