"""A crowd (``MorphRuntime(instances=N)``) on a host's own device (tests/gpu/rawvk.py; synchronization
validation across submissions): the build's uploads and replicated outputs are recorded into the host's command
buffer, two frames in flight with two output slots, a different set of instances changing every frame; every
instance of every frame equals the numpy morph of its own weights."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import random_prim
from vkmorph.asset.model import MeshAsset, NodeAsset, SceneAsset
from vkmorph.morph.reference import morph_reference

pytestmark = pytest.mark.gpu


def test_crowd_frames_in_flight_on_a_borrowed_context(user_device):
    from vkmorph.render.morph_pass import MorphRuntime

    user, ctx = user_device
    rng = np.random.default_rng(11)
    prims = [random_prim(rng, 400, 6, 0.5), random_prim(rng, 260, 33, 0.3)]
    scene = SceneAsset(nodes=[NodeAsset("a", mesh=0), NodeAsset("b", mesh=1)],
                       meshes=[MeshAsset("ma", [prims[0]]), MeshAsset("mb", [prims[1]])], skins=[], animations=[],
                       roots=[0, 1])
    N = 7
    rt = MorphRuntime(ctx, scene, instances=N, slots=2)
    assert ctx.has_pending                       # nothing submitted: the build waits for the host's buffer
    in_flight, done = [], []
    for f in range(6):
        rows = np.flatnonzero(rng.random(N) < 0.5) if f else np.arange(N)
        W = np.array(rt.crowd.weights)
        W[rows] = rng.random((len(rows), W.shape[1])) * (rng.random((len(rows), W.shape[1])) < 0.6)
        rt.crowd.set_all_weights(W)
        if len(in_flight) == 2:
            sub, w_old = in_flight.pop(0)
            user.wait(sub)
            ctx.completed(sub[2][0])
            done.append((sub[2][1], w_old))
        slot = f % 2

        def frame(cb, slot=slot):
            c = rt.record(cb, slot=slot, consumer="transfer")
            reads = [(i, k, rt.record_readback(cb, k, slot=slot, instance=i)) for i in range(N) for k in (0, 1)]
            return max(c.serial, *(r.serial for _, _, r in reads)), reads

        sub = user.submit(frame)
        in_flight.append((sub, np.array(rt.crowd.weights)))
    for sub, w in in_flight:
        user.wait(sub)
        done.append((sub[2][1], w))
    ctx.completed()
    for reads, W in done:
        for i, k, r in reads:
            sl = rt.pose.slice_of(k)
            p, _n, _t = morph_reference(prims[k], W[i, sl])
            out = r.vertices()
            size = float(np.ptp(prims[k].vertices["position"], axis=0).max())
            assert np.abs(out["position"] - p).max() <= 1e-5 * size, (i, k)
            assert np.array_equal(out["texcoord"], prims[k].vertices["texcoord"])
    rt.destroy()
    ctx.completed()
