"""Motion vectors of a crowd animated on the GPU (``CrowdSkinning(motion_vectors=True, animation=)``,
``SceneRenderer(motion_vectors=True, animation="gpu")``): every drawn instance's previous positions are bit for
bit the skinned positions the previous frame drew, and within tolerance the numpy reference of the previous
frame (the clip sampled by ``CrowdState.play`` at times computed here, morphed and skinned by
``morph_reference`` / ``skin_reference``); previous == current on the first frame, for an instance that did not
move (speed 0, the same clock, a CPU-posed one left alone) and for one culled on the previous frame; across a
clip's loop; a CPU-posed instance and a weight change in the same crowd; one and two slots, and two frames in
flight submitted back to back. All under validation + synchronization validation (the ``ctx`` fixture fails on
any message)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.render.crowd_scenes import SlotFrames, anim_scene, crowd_scene, random_quats
from vkmorph.anim.crowd import CrowdState
from vkmorph.asset.model import STATIC_VERTEX
from vkmorph.gpu import memory as M
from vkmorph.morph.reference import morph_reference, skin_reference
from vkmorph.render.crowd_anim import CrowdAnimation
from vkmorph.render.crowd_skin import CrowdSkinning
from vkmorph.render.morph_pass import MorphRuntime

TOL = 1e-3     # float32 GPU sampling (palettes within 2e-4, test_crowd_anim.py) through a few units of positions


def clip_times(clip, phase, speed, clock):
    """numpy: phase + speed x clock (the clock as float32, as the push constant), wrapped by the duration."""
    t = np.asarray(phase, np.float64) + np.asarray(speed, np.float64) * float(np.float32(clock))
    return t - clip.duration * np.floor(t / clip.duration)


def world_positions(rt, inst, weights, palette):
    """numpy: one instance's primitive morphed at ``weights`` (the crowd's row), skinned by ``palette``."""
    v = inst.prim.vertices
    if inst.is_morphing:
        p, n, t = morph_reference(inst.prim, weights[rt.pose.slice_of(inst.node)][:inst.target_count])
    else:
        p, n, t = v["position"], v["normal"], v["tangent"]
    return skin_reference(p, n, np.asarray(t), v["joints"], v["weights"], palette)[0]


def skinned(ctx, skin, slot, d, i):
    raw = M.readback(ctx, skin.outputs[slot], np.uint8, count=48 * d.vertex_count, offset=d.offset_of(i))
    return raw.view(STATIC_VERTEX)["position"].copy()


def previous(ctx, skin, slot, d, i):
    raw = M.readback(ctx, skin.previous[slot], np.float32, count=4 * d.vertex_count, offset=d.previous_offset_of(i))
    return raw.reshape(-1, 4)


@pytest.mark.parametrize("slots", [1, 2])
def test_gpu_animated_previous_positions_are_what_the_last_frame_drew(ctx, slots):
    rng = np.random.default_rng(51)
    scene = anim_scene(rng)
    N = 7
    clip_a, clip_b = scene.animations
    # instances 0-2 play "a", 3 plays it at speed 0 (never moves), 4-5 play "b" (5 loops between frames 4
    # and 5), 6 is posed on the CPU (rest pose, then by hand on frame 3)
    plays = {0: (clip_a, 0.1, 1.0), 1: (clip_a, 0.7, 0.8), 2: (clip_a, 1.3, 1.2), 3: (clip_a, 0.4, 0.0),
             4: (clip_b, 0.2, 0.9), 5: (clip_b, 1.4, 1.0)}
    clocks = [0.2, 0.5, 0.5, 1.1, 1.4, 2.0]
    culled = {2: [1], 4: [4]}                 # frame -> instances culled (each comes back the next frame)
    hand = (3, "translation", [0.2, 0.8, 0.1])
    with MorphRuntime(ctx, scene, instances=N, slots=slots) as rt, CrowdAnimation(rt) as anim:
        skin = CrowdSkinning(rt, passes=2, path="compute", motion_vectors=True, animation=anim)
        try:
            crowd = rt.crowd
            tf = np.repeat(np.eye(4)[None], N, 0)
            tf[:, 0, 3] = np.arange(N) * 3.0
            crowd.set_transforms(tf)
            crowd.set_all_weights(rng.random((N, crowd.weights.shape[1])))
            for i, (clip, ph, sp) in plays.items():
                anim.play(clip.name, phase=ph, speed=sp, rows=[i])
            (d,), (inst,) = skin.draws(0), skin.items
            drawn, expect, times = [], [], []
            for f, clock in enumerate(clocks):
                slot = f % slots
                if f == 3:
                    crowd[6].set_trs(*hand)
                if f == 4:
                    w = np.array(crowd.weights[3])
                    w[:3] = [0.9, 0.1, 0.5]
                    crowd.set_all_weights(w[None], rows=[3])    # a GPU-posed instance's weights move
                vis = np.ones(N, bool)
                vis[culled.get(f, [])] = False

                def rec(cb, slot=slot, clock=clock, vis=vis):
                    rt.record(cb, slot=slot, consumer="compute", visible=vis)
                    anim.record(cb, slot, time=clock, consumer="compute")
                    skin.record(cb, slot, visible=vis)
                ctx.submit_and_wait(rec)
                # the numpy reference of this frame: a fresh crowd posed on the CPU at the times computed here
                ref = CrowdState(scene, N, rt.pose)
                ref.set_transforms(tf)
                t = {i: float(clip_times(clip, ph, sp, clock)) for i, (clip, ph, sp) in plays.items()}
                for i, (clip, _, _) in plays.items():
                    ref.play(clip, [t[i]], rows=[i])
                if f >= 3:
                    ref[6].set_trs(*hand)
                pal = ref.skin_matrices(inst.prim.skin)
                expect.append([world_positions(rt, inst, crowd.weights[i], pal[i]) for i in range(N)])
                drawn.append({i: skinned(ctx, skin, slot, d, i) for i in range(N) if vis[i]})
                times.append(t)
                for i in drawn[f]:
                    cur, prev = drawn[f][i], previous(ctx, skin, slot, d, i)
                    assert np.abs(cur - expect[f][i]).max() <= TOL, (f, i)
                    assert np.all(prev[:, 3] == 1.0), (f, i)
                    if f == 0 or i not in drawn[f - 1]:    # no previous frame drew it: previous == current
                        assert np.array_equal(prev[:, :3], cur), (f, i)
                        continue
                    assert np.array_equal(prev[:, :3], drawn[f - 1][i]), (f, i)     # bit for bit what it drew
                    assert np.abs(prev[:, :3] - expect[f - 1][i]).max() <= TOL, (f, i)
                    still = (i == 3 and f != 4) or (i == 6 and f != 3) or clock == clocks[f - 1]
                    motion = np.abs(prev[:, :3] - cur).max()
                    assert (motion == 0.0) if still else (motion > 1e-2), (f, i, motion)
            assert times[5][5] < times[4][5]          # instance 5's clip looped between frames 4 and 5
        finally:
            skin.destroy()


def test_renderer_gpu_animation_motion_vectors_frames_in_flight(ctx):
    """SceneRenderer(animation="gpu", motion_vectors=True), two frames in flight submitted back to back (the host
    waits only for the frame that last used a slot), the clock moving every frame, part of the crowd culled in
    turn, one instance handed to the CPU midway, the weights held for the last two frames (only the GPU-sampled
    bones move, no crowd version does): the last frame's previous positions are the frame before's
    skinned vertices (bit for bit, and the numpy reference at that frame's clock), previous == current for the
    instances culled on the frame before."""
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.camera import OrbitCamera
    from vkmorph.render.offscreen import OffscreenRenderer

    N = 6
    scene = load_scene(None)       # "Wave": bone rotations and morph weights
    off = OffscreenRenderer(ctx, scene, 96, 72, samples=1, shadow_size=128, frames_in_flight=2, instances=N,
                            skinning="compute", motion_vectors=True, animation="gpu")
    frames = SlotFrames(ctx)
    try:
        r = off.renderer
        rt, cf, anim = r.runtime, r.crowd_frame, r.animation
        T = np.repeat(np.eye(4)[None], N, 0)
        T[:, 0, 3] = np.arange(N) * 3.0
        rt.crowd.set_transforms(T)
        phase, speed = np.arange(N) * 0.5, 1.0 + 0.1 * np.arange(N)
        anim.play(0, phase=phase, speed=speed)
        r.frame_camera()
        wide, seen, clocks = r.camera, [], [0.3 * f for f in range(6)]
        for f, clock in enumerate(clocks):
            slot = f % 2
            frames.wait(slot)                  # before this frame's host writes to the slot
            if f == 3:
                rt.crowd[0].set_trs(3, "translation", [0.0, 0.5, 0.0])    # instance 0 back on the CPU
            r.animation_time = clock
            if f < 4:                  # frames 4 and 5: the bones move, the weights (no crowd version) do not
                anim.sample_weights(clock)
            r.camera = wide if f % 3 != 1 else OrbitCamera(target=(8.0, 0.5, 0.0), distance=3.0, yaw=0.0,
                                                           pitch=0.2)
            r.update(slot, 96 / 72, 96, 72)
            seen.append(cf.deform_visible.copy())      # morphed and skinned: seen by the camera or casting into it
            frames.submit(slot, lambda cb, slot=slot: r.record(cb, slot, off.targets.framebuffers[0], 96, 72))
        ctx.wait_idle()
        assert not seen[4].all() and seen[4].any() and seen[5].all()
        clip = scene.animations[0]
        refs = []
        for clock in clocks[4:]:       # frames 4 and 5 by numpy (the weights: the host's, sampled on frame 3)
            ref = CrowdState(scene, N, rt.pose)
            ref.set_transforms(T)
            ref.play(clip, clip_times(clip, phase, speed, clock))
            refs.append(ref)
        skin, checked = cf.skin, 0
        for d4, d5, inst in zip(skin.draws(0), skin.draws(1), skin.items):
            for i in range(N):
                cur4, cur5 = skinned(ctx, skin, 0, d4, i), skinned(ctx, skin, 1, d5, i)
                prev = previous(ctx, skin, 1, d5, i)
                for ref, cur in zip(refs, (cur4, cur5)):
                    pal = (rt.crowd if i == 0 else ref).skin_matrices(inst.prim.skin)[i]   # 0: the CPU's since 3
                    want = world_positions(rt, inst, rt.crowd.weights[i], pal)
                    if cur is cur5 or seen[4][i]:
                        assert np.abs(cur - want).max() <= TOL, (inst.node, i)
                if seen[4][i]:
                    assert np.array_equal(prev[:, :3], cur4), (inst.node, i)
                    if i:
                        assert np.abs(prev[:, :3] - cur5).max() > 1e-3, (inst.node, i)   # it moved
                    checked += 1
                else:                  # culled on frame 4: previous == current
                    assert np.array_equal(prev[:, :3], cur5), (inst.node, i)
        assert checked
    finally:
        frames.destroy()
        off.destroy()


def test_one_slot_scattered_changes_cpu_posed(ctx):
    """One output slot, host-posed crowd, changes in scattered instances (several dispatch runs per primitive):
    ``last`` is ``output``'s own range, so the runs are ordered by SKIN_RUN_TO_NEXT_RUN (without it: a
    SYNC-HAZARD-READ-AFTER-WRITE); previous == the last frame's vertices bit for bit."""
    rng = np.random.default_rng(52)
    N = 6
    with MorphRuntime(ctx, crowd_scene(rng), instances=N, slots=1) as rt:
        skin = CrowdSkinning(rt, passes=2, path="compute", motion_vectors=True)
        try:
            (d,) = skin.draws(0)
            last = None
            for rows in (np.arange(N), [0, 2, 5], [1, 4]):
                crowd = rt.crowd
                crowd.set_all_weights(rng.random((len(rows), crowd.weights.shape[1])), rows=rows)
                R = np.array(crowd.local[1])[rows]
                R[:] = random_quats(rng, R.shape[0] * R.shape[1]).reshape(R.shape)
                crowd.set_local(rotation=R, rows=rows)
                ctx.submit_and_wait(lambda cb: (rt.record(cb, consumer="compute"), skin.record(cb, 0)))
                cur = [skinned(ctx, skin, 0, d, i) for i in range(N)]
                for i in range(N):
                    prev = previous(ctx, skin, 0, d, i)[:, :3]
                    assert np.array_equal(prev, cur[i] if last is None else last[i]), (rows, i)
                last = cur
        finally:
            skin.destroy()
