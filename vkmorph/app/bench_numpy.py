"""The numpy baseline of the roofline rows: what a user would write (``vkmorph.bake.SparseMorph``), timed over
every morphing instance of a runtime."""

from __future__ import annotations

import time

NUMPY_REPEATS = 5


def numpy_morph_times(rt, scene, repeats: int = NUMPY_REPEATS) -> tuple[list[float], list]:
    """Seconds of ``repeats`` numpy morphs of every morphing instance at the runtime's current weights (sparse
    float32, ``vkmorph.bake.SparseMorph``, one per distinct primitive, built untimed), after one warm-up call;
    the last call's (positions, normals, tangents) per instance."""
    from ..bake import SparseMorph

    made: dict[int, SparseMorph] = {}
    jobs = []
    for inst in rt.morphing:
        sm = made.get(id(inst.prim)) or made.setdefault(id(inst.prim), SparseMorph(inst.prim))
        jobs.append((sm, rt.pose.flat[rt.pose.slice_of(inst.node)].copy()))
    out = [sm(w) for sm, w in jobs]
    secs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = [sm(w) for sm, w in jobs]
        secs.append(time.perf_counter() - t0)
    return secs, out
