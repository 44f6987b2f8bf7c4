"""Crowds (``MorphRuntime(..., instances=N)``): every instance exact against the numpy reference at its own
weights, unchanged instances neither uploaded nor dispatched, palettes per instance against a plain Skeleton;
under validation + synchronization validation (the ``ctx`` fixture fails on any message)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.render.crowd_scenes import crowd_scene
from vkmorph.anim.crowd import CrowdState
from vkmorph.anim.skeleton import Skeleton
from vkmorph.asset.model import SKINNED_VERTEX, STATIC_VERTEX
from vkmorph.errors import UsageError
from vkmorph.morph.reference import morph_reference
from vkmorph.morph.state import SceneMorphPose
from vkmorph.render.morph_pass import MorphRuntime


def weights_of(rt, row, inst):
    return rt.crowd.weights[row][rt.pose.slice_of(inst.node)][:inst.target_count]


@pytest.mark.parametrize("delta_format", ["full", "compact"])
def test_instances_exact_and_only_changed_ones_dispatched(ctx, delta_format):
    rng = np.random.default_rng(5)
    scene = crowd_scene(rng)
    N = 5
    with MorphRuntime(ctx, scene, instances=N, delta_format=delta_format) as rt:
        S = rt.crowd.weights.shape[1]
        rt.crowd.set_all_weights(rng.random((N, S)) * (rng.random((N, S)) < 0.5))
        rt.crowd[3].set_weights("a", np.zeros(5))            # one instance all zero
        c = []
        ctx.submit_and_wait(lambda cb: c.append(rt.record(cb)))
        assert c[0].instances_dispatched == N and c[0].dispatched == N * len(rt.morphing)
        tol = {"full": 1, "compact": 200}[delta_format]     # compact: snorm16 error (the runtime's docstring)
        for i in range(N):
            for inst in rt.morphing:
                check_tol(rt, inst, i, weights_of(rt, i, inst), tol)
        # one instance changes: only it is uploaded and dispatched, the others keep their exact outputs
        before = [rt.read_vertices(inst, instance=i) for i in range(N) for inst in rt.morphing]
        rt.crowd[2].set_weight("b", 7, 0.9)
        ctx.submit_and_wait(lambda cb: c.append(rt.record(cb)))
        assert (c[1].instances_dispatched, c[1].dispatch_calls, c[1].skipped) == (1, 1, (N - 1) * 2)
        assert c[1].groups == c[0].groups // N
        after = [rt.read_vertices(inst, instance=i) for i in range(N) for inst in rt.morphing]
        P = len(rt.morphing)
        for k, (x, y) in enumerate(zip(before, after)):     # prim a of instance 2 is recomputed, to equal values
            assert np.array_equal(x, y) == (k != 2 * P + 1)
        for inst in rt.morphing:
            check_tol(rt, inst, 2, weights_of(rt, 2, inst), tol)
        # nothing changed: nothing recorded; a pose-only change records no morph work either
        ctx.submit_and_wait(lambda cb: c.append(rt.record(cb)))
        assert c[2].pose_skipped and c[2].barriers == 0
        rt.crowd[1].set_trs(3, "rotation", [0, 0, np.sin(0.3), np.cos(0.3)])
        ctx.submit_and_wait(lambda cb: c.append(rt.record(cb)))
        assert c[3].instances_dispatched == 0 and c[3].barriers == 0


def test_outputs_bound_in_groups_that_fit_the_storage_range(ctx, monkeypatch):
    """A crowd whose output exceeds maxStorageBufferRange binds it in groups of instances (here 2 per group, by
    a smaller limit): dispatch runs split at group boundaries, every instance exact."""
    rng = np.random.default_rng(9)
    scene = crowd_scene(rng)
    out_bytes = 70656                        # the two morphing primitives, each at a 256-byte aligned offset
    monkeypatch.setitem(ctx.info.limits, "maxStorageBufferRange", 2 * out_bytes + 100)
    N = 5
    with MorphRuntime(ctx, scene, instances=N, slots=2) as rt:
        assert rt.batch.instance_stride == out_bytes and rt.batch.group_instances == 2
        S = rt.crowd.weights.shape[1]
        rt.crowd.set_all_weights(rng.random((N, S)))
        c = []
        ctx.submit_and_wait(lambda cb: c.append(rt.record(cb, slot=1)))
        assert c[0].dispatch_calls == 3          # instances 0-1, 2-3, 4
        for i in range(N):
            for inst in rt.morphing:
                check_tol(rt, inst, i, weights_of(rt, i, inst), 1)


def check_tol(rt, inst, instance, weights, tol):
    out = rt.read_vertices(inst, instance=instance, slot=slot_of(rt))
    p, _n, _t = morph_reference(inst.prim, weights)
    size = float(np.ptp(inst.prim.vertices["position"], axis=0).max()) or 1.0
    assert np.abs(out["position"] - p).max() <= tol * 1e-5 * size, f"instance {instance}"
    assert np.array_equal(out["texcoord"], inst.prim.vertices["texcoord"])


def slot_of(rt) -> int:
    return rt.last_counters.slot


def test_crowd_draws_follow_each_instance(ctx):
    rng = np.random.default_rng(8)
    scene = crowd_scene(rng)
    N = 4
    with MorphRuntime(ctx, scene, instances=N, slots=2) as rt:
        crowd = rt.crowd
        T, R, S = (np.array(a) for a in crowd.local)
        ang = rng.random((N, 6)) * 2
        R[:] = np.stack([np.zeros_like(ang), np.zeros_like(ang), np.sin(ang / 2), np.cos(ang / 2)], -1)
        crowd.set_local(rotation=R)
        M = np.repeat(np.eye(4)[None], N, 0)
        M[:, 0, 3] = np.arange(N) * 3.0
        crowd.set_transforms(M)
        dl = rt.crowd_draws(1)
        assert len(dl) == 3
        by_node = {d.node: d for d in dl}
        for i in range(N):
            sk = Skeleton(scene)
            sk.set_local(T[i], R[i], S[i])
            world = M[i] @ sk.world_matrices()
            assert np.allclose(by_node[0].world[i], world[0], atol=1e-6)
            ref_pal = world[scene.skins[0].joints] @ scene.skins[0].inverse_bind_matrices
            assert np.allclose(by_node[1].joint_palette[i], ref_pal, atol=1e-5)
            assert np.allclose(by_node[1].world[i], np.eye(4))
        # offsets: morphing primitives per instance and slot, the static one shared
        a = by_node[0]
        assert a.instance_stride > 0 and a.offset_of(2) == rt._offset(rt.instance("a"), 1, 2)
        assert by_node[2].instance_stride == 0
        assert dl.refresh() == 0                    # nothing moved: one compare
        crowd[2].set_transform(np.eye(4))
        assert dl.refresh() == 1
        # one node of one instance: only its local matrix is re-evaluated, every instance still exact
        crowd[1].set_trs(4, "translation", [0.5, 2.0, 0.0])
        assert dl.refresh() == 1
        M[2] = np.eye(4)
        T, R, S = (np.array(a) for a in crowd.local)
        for i in range(N):
            sk = Skeleton(scene)
            sk.set_local(T[i], R[i], S[i])
            world = M[i] @ sk.world_matrices()
            ref_pal = world[scene.skins[0].joints] @ scene.skins[0].inverse_bind_matrices
            assert np.allclose(by_node[1].joint_palette[i], ref_pal, atol=1e-5), i
            assert np.allclose(crowd.world_matrices()[i], world, atol=1e-9), i
        with pytest.raises(UsageError):
            rt.draws()
        with pytest.raises(UsageError):
            rt.set_weights("a", np.zeros(5))


def test_play_vectorized_matches_per_instance_sampling():
    """``CrowdState.play`` (one vectorized sampling over instances) equals sampling each instance alone."""
    from vkmorph.anim.player import AnimationPlayer
    from vkmorph.asset.model import AnimationClip, MorphWeightChannel, NodeChannel

    rng = np.random.default_rng(2)
    scene = crowd_scene(rng)
    times = np.array([0.0, 0.5, 1.0])
    scene.animations.append(AnimationClip("c", 1.0, morph_channels=[
        MorphWeightChannel(0, times, rng.random((3, 5)))], node_channels=[
        NodeChannel(4, "rotation", times, np.array([[0, 0, 0, 1], [0, 0, 0.3826834, 0.9238795], [0, 0, 1, 0]]))]))
    pose = SceneMorphPose(scene)
    crowd = CrowdState(scene, 6, pose)
    t = rng.random(6)
    assert crowd.play(scene.animations[0], t) == 6
    for i in range(6):
        p, sk = SceneMorphPose(scene), Skeleton(scene)
        player = AnimationPlayer(scene, p, sk)
        player.play(0)
        player.apply(float(t[i]))
        assert np.allclose(crowd.weights[i], p.flat, atol=1e-6)
        assert np.allclose(crowd.world_matrices()[i], sk.world_matrices(), atol=1e-9)
    assert crowd.play(scene.animations[0], t) == 0     # the same times: nothing changes, nothing stamped


def test_replicated_upload_and_one_submission_per_build(ctx, monkeypatch):
    from vkmorph.gpu import memory as M

    data = np.arange(37, dtype=np.uint32)
    buf = M.device_buffer(ctx, None, M.STORAGE, size=data.nbytes * 5 + 8, name="replicated")
    try:
        M.upload_replicated(ctx, buf, data, 5, offset=8)     # 1 -> 2 -> 4 -> 5 copies
        got = M.readback(ctx, buf, np.uint32, count=37 * 5, offset=8)
        assert np.array_equal(got, np.tile(data, 5))
    finally:
        buf.destroy()
    submits = []
    real = ctx.submit
    monkeypatch.setattr(ctx, "submit", lambda *a, **k: (submits.append(1), real(*a, **k))[1])
    with MorphRuntime(ctx, crowd_scene(np.random.default_rng(1)), instances=50, slots=2) as rt:
        assert len(submits) == 1              # every buffer of the build in one submission
        inst = rt.morphing[0]
        for slot, i in ((0, 0), (1, 49), (1, 17)):   # every slot and instance starts as the file's vertices
            out = rt.read_vertices(inst, slot=slot, instance=i)
            assert np.array_equal(out.view(np.uint8), inst.prim.vertices.view(np.uint8))


def test_compute_skinning_once_per_frame_exact_per_instance(ctx):
    """Skin once, draw many: each instance's skinned vertices (morphed, then skinned by its own palette) equal
    numpy's morph_reference -> skin_reference; unchanged instances are not skinned again."""
    from vkmorph.gpu import memory as M
    from vkmorph.morph.reference import skin_reference
    from vkmorph.render.crowd_skin import CrowdSkinning, choose_path, skinning_cost

    assert choose_path(80, 1) == "vertex" and choose_path(80, 3) == "compute"
    assert skinning_cost(80, 3)["compute"] < skinning_cost(80, 3)["vertex"]
    rng = np.random.default_rng(21)
    scene = crowd_scene(rng)
    c = scene.meshes[2].primitives[0]                 # the static primitive, skinned too: a shared source
    v = np.zeros(len(c.vertices), SKINNED_VERTEX)
    for f in c.vertices.dtype.names:
        v[f] = c.vertices[f]
    v["joints"] = rng.integers(0, 3, (len(v), 4))
    v["weights"] = rng.dirichlet(np.ones(4), len(v))
    c.vertices, c.skin, scene.nodes[2].skin = v, 0, 0
    N = 4
    with MorphRuntime(ctx, scene, instances=N) as rt:
        skin = CrowdSkinning(rt, passes=3)
        try:
            assert [(i.node, i.prim_index) for i in skin.items] == [(1, 0), (2, 0)]
            forced = CrowdSkinning(rt, passes=3, path="vertex")
            assert forced.items == [] and set(forced.paths.values()) == {"vertex"}
            forced.destroy()
            crowd = rt.crowd
            crowd.set_all_weights(rng.random(crowd.weights.shape))
            T, R, S = (np.array(a) for a in crowd.local)
            ang = rng.random((N, 6))
            R[:] = np.stack([np.zeros_like(ang), np.sin(ang / 2), np.zeros_like(ang), np.cos(ang / 2)], -1)
            crowd.set_local(rotation=R)
            n = []
            ctx.submit_and_wait(lambda cb: (rt.record(cb, consumer="compute"), n.append(skin.record(cb))))
            assert n == [N]

            def check_all():
                for d, inst in zip(skin.draws(0), skin.items):
                    for i in range(N):
                        raw = M.readback(ctx, skin.outputs[0], np.uint8, count=48 * d.vertex_count,
                                         offset=d.offset_of(i))
                        out = raw.view(STATIC_VERTEX)
                        w = weights_of(rt, i, inst) if inst.is_morphing else np.zeros(0)
                        p, nn, t = morph_reference(inst.prim, w) if inst.is_morphing else (
                            inst.prim.vertices["position"], inst.prim.vertices["normal"],
                            inst.prim.vertices["tangent"])
                        vv = inst.prim.vertices
                        ep, en, _et = skin_reference(p, nn, np.asarray(t), vv["joints"], vv["weights"],
                                                     crowd.skin_matrices(0)[i])
                        assert np.abs(out["position"] - ep).max() <= 1e-4, (inst.node, i)
                        assert np.abs(out["normal"] - en).max() <= 1e-3, (inst.node, i)
                        assert np.array_equal(out["texcoord"], vv["texcoord"])
            check_all()
            crowd[3].set_trs(4, "rotation", [0, 0, np.sin(0.4), np.cos(0.4)])
            ctx.submit_and_wait(lambda cb: (rt.record(cb, consumer="compute"), n.append(skin.record(cb))))
            ctx.submit_and_wait(lambda cb: (rt.record(cb, consumer="compute"), n.append(skin.record(cb))))
            assert n[1:] == [1, 0]                     # only the moved instance; then nothing
            check_all()
        finally:
            skin.destroy()
