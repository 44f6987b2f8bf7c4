"""Crowds drawn, culled and with motion vectors: compute-skinned vertices of several instances at different
poses against numpy (morph_reference -> skin_reference), previous positions (motion vectors) of frame k+1
equal to frame k's, culled instances neither morphed nor skinned and exact once visible again, posed bounds
that contain every vertex, and SceneRenderer drawing a crowd by either skinning path; all under validation +
synchronization validation (the ``ctx`` fixture fails on any message)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.render.crowd_scenes import SlotFrames, crowd_scene, expected_world, pose_randomly, skinned_positions
from vkmorph.gpu import memory as M
from vkmorph.morph.reference import morph_reference
from vkmorph.render.crowd_cull import CrowdCuller, frustum_planes
from vkmorph.render.crowd_skin import CrowdSkinning
from vkmorph.render.morph_pass import MorphRuntime


def previous_positions(ctx, skin, slot, d, i):
    raw = M.readback(ctx, skin.previous[slot], np.float32, count=4 * d.vertex_count, offset=d.previous_offset_of(i))
    return raw.reshape(-1, 4)


def frame(ctx, rt, skin, slot, visible=None):
    out = {}

    def rec(cb):
        out["morph"] = rt.record(cb, slot=slot, visible=visible)
        out["skinned"] = skin.record(cb, slot, visible=visible)

    ctx.submit_and_wait(rec)
    return out


@pytest.mark.parametrize("slots", [1, 2])
def test_motion_vectors_previous_is_last_frames_positions(ctx, slots):
    """prev of frame k+1 == positions of frame k (numpy), frame 0: prev == current, an instance unchanged
    since the last frame: prev == current; frames use the slots in turn."""
    rng = np.random.default_rng(31)
    N = 4
    with MorphRuntime(ctx, crowd_scene(rng), instances=N, slots=slots) as rt:
        skin = CrowdSkinning(rt, passes=2, path="compute", motion_vectors=True)
        try:
            history = []
            for k in range(4):
                if k < 3:
                    pose_randomly(rt, rng, rows=[0, 1, 2] if k else None)   # instance 3 stops after frame 0
                slot = k % slots
                frame(ctx, rt, skin, slot)
                d = skin.draws(slot)[0]
                inst = skin.items[0]
                cur = [skinned_positions(ctx, skin, slot, d, i) for i in range(N)]
                prev = [previous_positions(ctx, skin, slot, d, i) for i in range(N)]
                for i in range(N):
                    ep, _, _ = expected_world(rt, inst, i)
                    assert np.abs(cur[i] - ep).max() <= 1e-4, (k, i)
                    want = cur[i] if k == 0 else history[-1][i]
                    assert np.abs(prev[i][:, :3] - want).max() <= 1e-6, (k, i)
                    assert np.all(prev[i][:, 3] == 1.0)
                if k == 3:     # nothing moved since frame 2: previous == current for everyone
                    assert all(np.abs(p[:, :3] - c).max() <= 1e-6 for p, c in zip(prev, cur))
                history.append(cur)
        finally:
            skin.destroy()


def test_culled_instances_do_no_work_and_come_back_exact(ctx):
    rng = np.random.default_rng(32)
    N = 6
    with MorphRuntime(ctx, crowd_scene(rng), instances=N) as rt:
        skin = CrowdSkinning(rt, passes=2, path="compute")
        try:
            pose_randomly(rt, rng)
            frame(ctx, rt, skin, 0)
            visible = np.array([True, False, True, False, True, True])
            pose_randomly(rt, rng)                     # every instance changes, two of them are culled
            out = frame(ctx, rt, skin, 0, visible)
            m = out["morph"]
            assert (m.instances_dispatched, m.instances_culled, out["skinned"], skin.culled) == (4, 2, 4, 2)
            assert m.dispatched == 4 * len(rt.morphing)
            # still culled, nothing else moved: no morph, no skin work at all
            out = frame(ctx, rt, skin, 0, visible)
            assert (out["morph"].instances_dispatched, out["morph"].groups, out["skinned"]) == (0, 0, 0)
            assert out["morph"].instances_culled == 2
            d, inst = skin.draws(0)[0], skin.items[0]
            stale = skinned_positions(ctx, skin, 0, d, 1)
            assert np.abs(stale - expected_world(rt, inst, 1)[0]).max() > 1e-3   # not deformed while culled
            # visible again with no new change: their pending versions are applied now, exact
            out = frame(ctx, rt, skin, 0, np.ones(N, bool))
            assert (out["morph"].instances_dispatched, out["skinned"]) == (2, 2)
            for d, inst in zip(skin.draws(0), skin.items):
                for i in range(N):
                    ep = expected_world(rt, inst, i)[0]
                    assert np.abs(skinned_positions(ctx, skin, 0, d, i) - ep).max() <= 1e-4, (inst.node, i)
            for inst in rt.morphing:                    # and the morph output itself, every instance
                for i in range(N):
                    w = rt.crowd.weights[i][rt.pose.slice_of(inst.node)][:inst.target_count]
                    got = rt.read_vertices(inst, instance=i)["position"]
                    assert np.abs(got - morph_reference(inst.prim, w)[0]).max() <= 1e-4
        finally:
            skin.destroy()


def test_posed_bounds_contain_every_vertex_and_cull_conservatively(ctx):
    rng = np.random.default_rng(33)
    N = 8
    with MorphRuntime(ctx, crowd_scene(rng), instances=N) as rt:
        crowd = rt.crowd
        pose_randomly(rt, rng)
        M4 = np.repeat(np.eye(4)[None], N, 0)
        M4[:, 0, 3] = np.arange(N) * 10.0
        crowd.set_transforms(M4)
        cull = CrowdCuller(rt)
        boxes = cull.boxes()
        world = crowd.world_matrices()
        for i in range(N):
            pts = []
            for inst in rt.instances:
                if inst.prim.is_skinned:
                    pts.append(expected_world(rt, inst, i)[0])
                else:
                    p = inst.prim.vertices["position"]
                    if inst.is_morphing:
                        w = crowd.weights[i][rt.pose.slice_of(inst.node)][:inst.target_count]
                        p = morph_reference(inst.prim, w)[0]
                    m = world[i, inst.node]
                    pts.append(p @ m[:3, :3].T + m[:3, 3])
            pts = np.concatenate(pts)
            assert (pts >= boxes[i, 0] - 1e-5).all() and (pts <= boxes[i, 1] + 1e-5).all(), i
        # an orthographic view of x in [-5, 25]: instances 0..2 (x = 0, 10, 20 plus their size) in, the rest out
        vp = np.eye(4)
        vp[0, 0], vp[0, 3] = 1 / 15, -10 / 15
        vp[1, 1] = 1 / 100
        vp[2, 2], vp[2, 3] = 1 / 200, 0.5
        inside = (boxes[:, 1, 0] >= -5) & (boxes[:, 0, 0] <= 25)
        assert inside[:3].all() and not inside[4:].any()
        assert np.array_equal(cull.visible(vp), inside)
        assert frustum_planes(vp).shape == (6, 4)
        # a pose change moves the box: only that instance is recomputed
        crowd[5].set_transform(np.eye(4))
        assert cull.visible(vp)[5]


@pytest.mark.parametrize("paths", [("compute", "vertex")])
def test_renderer_draws_a_crowd_by_either_skinning_path(ctx, paths):
    """The same crowd through compute skinning and vertex-shader skinning renders the same image, and it
    shows every instance (differs from one instance's); the camera turned away culls them all."""
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.camera import OrbitCamera
    from vkmorph.render.offscreen import OffscreenRenderer

    scene = load_scene(None)
    N = 6
    images = {}
    for path in paths + ("one",):
        off = OffscreenRenderer(ctx, scene, 160, 120, samples=1, shadow_size=256,
                                instances=1 if path == "one" else N, skinning="auto" if path == "one" else path)
        try:
            r = off.renderer
            crowd = r.runtime.crowd
            T = np.repeat(np.eye(4)[None], crowd.count, 0)
            T[:, 0, 3] = np.arange(crowd.count) % 3 * 4.0
            T[:, 2, 3] = np.arange(crowd.count) // 3 * 4.0
            crowd.set_transforms(T)
            crowd.set_all_weights(np.random.default_rng(2).random((crowd.count, crowd.weights.shape[1])))
            r.frame_camera()
            if path == "one":
                r.bounds = images["bounds"]         # the same framing as the crowd's
                r.camera = images["camera"]
            images[path] = off.render()
            modes = {c.mode for c in r.crowd_frame.items}
            if path != "one":
                assert path in modes and r.crowd_frame.visible.all()
                images["bounds"], images["camera"] = r.bounds, r.camera
                # look away: far down -z, the crowd (around the origin) behind the camera, and the light's volume
                # (around r.bounds) there too: no pass draws an instance
                r.camera = OrbitCamera(target=(0.0, 1.0, -1000.0), distance=5.0, yaw=0.0, pitch=0.0)
                r.bounds = (np.array([-1.0, 0.0, -1001.0]), np.array([1.0, 2.0, -999.0]))
                crowd.set_all_weights(np.zeros((crowd.count, crowd.weights.shape[1])))
                off.render()
                c = off.last_counters
                assert not r.crowd_frame.visible.any() and not r.crowd_frame.shadow_visible.any()
                assert c.instances_dispatched == 0 and c.instances_culled == N
                assert r.crowd_frame.skinned_last == 0
        finally:
            off.destroy()
    a, b = images["compute"].astype(int), images["vertex"].astype(int)
    assert (np.abs(a - b).max(axis=-1) > 6).mean() < 0.002
    assert (np.abs(a - images["one"].astype(int)).max(axis=-1) > 6).mean() > 0.02


def test_renderer_crowd_frames_in_flight_without_host_waits(ctx):
    """Two frames in flight, submitted back to back (the host waits only for the frame that last used a slot,
    as the demo does), poses changing every frame and the camera culling a different part of the crowd in
    turn, motion vectors on: 0 validation messages with synchronization validation across submissions (the
    ctx fixture), and the last frame's skinned vertices of every drawn instance exact against numpy."""
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.offscreen import OffscreenRenderer

    N = 8
    off = OffscreenRenderer(ctx, load_scene(None), 96, 72, samples=1, shadow_size=128, frames_in_flight=2,
                            instances=N, skinning="compute", motion_vectors=True)
    frames = SlotFrames(ctx)
    rng = np.random.default_rng(40)
    try:
        r = off.renderer
        rt, cf = r.runtime, r.crowd_frame
        T = np.repeat(np.eye(4)[None], N, 0)
        T[:, 0, 3] = np.arange(N) * 3.0
        rt.crowd.set_transforms(T)
        r.frame_camera()
        wide = r.camera
        seen = []
        for f in range(6):
            slot = f % 2
            frames.wait(slot)                  # before this frame's host writes to the slot
            pose_randomly(rt, rng, rows=np.flatnonzero(rng.random(N) < 0.6) if f else None)
            r.camera = wide
            if f % 3 == 1:       # the left half only: the right instances culled this frame
                from vkmorph.render.camera import OrbitCamera

                r.camera = OrbitCamera(target=(0.0, 0.5, 0.0), distance=3.0, yaw=0.0, pitch=0.2)
            r.update(slot, 96 / 72, 96, 72)
            seen.append(cf.visible.copy())
            frames.submit(slot, lambda cb, slot=slot: r.record(cb, slot, off.targets.framebuffers[0], 96, 72))
        ctx.wait_idle()
        assert any(not v.all() for v in seen) and seen[-1].all()
        slot = 5 % 2
        for d, inst in zip(cf.skin.draws(slot), cf.skin.items):
            for i in range(N):
                got = skinned_positions(ctx, cf.skin, slot, d, i)
                assert np.abs(got - expected_world(rt, inst, i)[0]).max() <= 1e-4, (inst.node, i)
    finally:
        frames.destroy()
        off.destroy()


def test_two_frames_of_one_slot_in_one_command_buffer(ctx):
    """A host (or the benchmark) that records two frames of one slot into one command buffer: the second frame's
    skinning rewrites vertices the first frame's draws read, with no morph pass between them (a pose-only
    change, and the visibility changed); MORPH_AND_DRAWS_TO_SKIN orders it (the ctx fixture fails on a hazard:
    with COMPUTE_TO_COMPUTE in its place this test fails)."""
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.camera import OrbitCamera
    from vkmorph.render.offscreen import OffscreenRenderer

    N = 4
    off = OffscreenRenderer(ctx, load_scene(None), 64, 48, samples=1, shadow_size=64, instances=N,
                            skinning="compute")
    try:
        r = off.renderer
        rt, cf = r.runtime, r.crowd_frame
        T = np.repeat(np.eye(4)[None], N, 0)
        T[:, 0, 3] = np.arange(N) * 3.0
        rt.crowd.set_transforms(T)
        rng = np.random.default_rng(41)
        pose_randomly(rt, rng)
        r.frame_camera()
        wide = r.camera
        off.render()                      # weights applied everywhere: the frames below record no morph pass
        R = np.array(rt.crowd.local[1])
        ang = rng.random(R.shape[:2])
        R[:] = np.stack([np.zeros_like(ang), np.sin(ang / 2), np.zeros_like(ang), np.cos(ang / 2)], -1)
        rt.crowd.set_local(rotation=R)    # a pose-only change

        wide_bounds = r.bounds

        def two(cb):
            r.camera = OrbitCamera(target=(0.0, 0.5, 0.0), distance=3.0, yaw=0.0, pitch=0.2)
            r.bounds = (np.array([-1.0, 0.0, -1.0]), np.array([1.0, 2.0, 1.0]))   # the light's volume: near 0 too
            r.update(0, 64 / 48, 64, 48)
            first = cf.deform_visible.copy()          # the camera's and the light's: what is skinned
            r.record(cb, 0, off.targets.framebuffers[0], 64, 48)
            r.camera, r.bounds = wide, wide_bounds
            r.update(0, 64 / 48, 64, 48)
            c = r.record(cb, 0, off.targets.framebuffers[0], 64, 48)
            assert not first.all() and cf.visible.all() and cf.skinned_last == int((~first).sum())
            assert c.instances_dispatched == 0 and c.barriers == 0     # no morph pass, no morph barrier

        ctx.submit_and_wait(two)
        for d, inst in zip(cf.skin.draws(0), cf.skin.items):
            for i in range(N):
                got = skinned_positions(ctx, cf.skin, 0, d, i)
                assert np.abs(got - expected_world(rt, inst, i)[0]).max() <= 1e-4, (inst.node, i)
    finally:
        off.destroy()
