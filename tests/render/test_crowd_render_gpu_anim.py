"""SceneRenderer drawing a crowd animated on the GPU (``animation="gpu"``): the image equals the one of the same
crowd posed on the CPU at the same clip times, by both skinning paths, over frames in flight; the clip boxes
that cull GPU-posed instances contain every posed vertex (its motion vectors: test_crowd_motion_gpu_anim.py). All
under validation + synchronization validation (the ``ctx`` fixture fails on any message)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.render.crowd_scenes import SlotFrames
from vkmorph.errors import UsageError

N = 6


def _layout(crowd):
    T = np.repeat(np.eye(4)[None], crowd.count, 0)
    T[:, 0, 3] = np.arange(crowd.count) % 3 * 4.0
    T[:, 2, 3] = np.arange(crowd.count) // 3 * 4.0
    crowd.set_transforms(T)


def _renders(ctx, scene, animation, skinning, clocks, phase, speed, frames_in_flight=1, view=None):
    """Images at ``clocks``: GPU-animated (``animation="gpu"``), or posed on the CPU at the same clip times."""
    from vkmorph.render.offscreen import OffscreenRenderer

    off = OffscreenRenderer(ctx, scene, 160, 120, samples=1, shadow_size=256, instances=N, skinning=skinning,
                            animation=animation, frames_in_flight=frames_in_flight)
    images = []
    try:
        r = off.renderer
        crowd = r.runtime.crowd
        _layout(crowd)
        clip = scene.animations[0]
        if animation == "gpu":
            r.animation.play(0, phase=phase, speed=speed)
        for f, t in enumerate(clocks):
            if animation == "gpu":
                r.animation_time = t
                r.animation.sample_weights(t)
            else:
                tt = phase + speed * float(np.float32(t))
                crowd.play(clip, tt - clip.duration * np.floor(tt / clip.duration))
            if view is None:
                r.frame_camera()
                view = {"bounds": r.bounds, "camera": r.camera,
                        "ground": [it.push[0]["model"].copy() for it in r.items if it.ground]}
            r.bounds, r.camera = view["bounds"], view["camera"]      # one framing for both renders
            for it, m in zip([it for it in r.items if it.ground], view["ground"]):
                for arr in it.push:
                    arr["model"] = m
            images.append(off.render(slot=f % frames_in_flight))
            assert r.crowd_frame.visible.all()
        modes = {c.mode for c in r.crowd_frame.items}
        assert skinning in modes, modes
    finally:
        off.destroy()
    return images, view


@pytest.mark.parametrize("skinning", ["compute", "vertex"])
def test_gpu_animated_crowd_renders_as_the_cpu_posed_one(ctx, skinning):
    from vkmorph.asset.importer import load_scene

    scene = load_scene(None)       # "Wave": bone rotations and morph weights
    rng = np.random.default_rng(7)
    phase, speed = rng.random(N) * 4.0, 0.5 + rng.random(N)
    clocks = [0.0, 0.7, 1.9]
    cpu, view = _renders(ctx, scene, "cpu", skinning, clocks, phase, speed)
    gpu, _ = _renders(ctx, scene, "gpu", skinning, clocks, phase, speed, frames_in_flight=2, view=view)
    for k, (a, b) in enumerate(zip(cpu, gpu)):
        a, b = a.astype(int), b.astype(int)
        assert (np.abs(a - b).max(axis=-1) > 6).mean() < 0.002, k
    assert (np.abs(cpu[0].astype(int) - cpu[2].astype(int)).max(axis=-1) > 6).mean() > 0.01   # it moves


def test_clip_boxes_contain_every_gpu_posed_vertex(ctx):
    from vkmorph.anim.pose_batch import PoseBatch
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.crowd_anim import CrowdAnimation
    from vkmorph.render.crowd_cull import CrowdCuller
    from vkmorph.render.morph_pass import MorphRuntime

    scene = load_scene(None)
    with MorphRuntime(ctx, scene, instances=N) as rt:
        _layout(rt.crowd)
        with CrowdAnimation(rt) as anim:
            anim.play(0, phase=np.linspace(0, 3, N))
            cull = CrowdCuller(rt, animation=anim)
            boxes = cull.boxes().copy()
            clip, batch = scene.animations[0], PoseBatch(scene)
            t = np.linspace(0, clip.duration, 97)
            world = batch.world_matrices(*batch.sample(clip, t))
            for inst in rt.instances:     # every vertex at every weight extreme (0 / 1 per target) and time
                p = inst.prim.vertices["position"].astype(np.float64)
                pts = [p] + ([p + tg.position_deltas for tg in inst.prim.morph_targets] if inst.is_morphing else [])
                pts = np.concatenate(pts)
                if inst.prim.is_skinned:
                    s = scene.skins[inst.prim.skin]
                    m = world[:, s.joints] @ s.inverse_bind_matrices           # (F, J, 4, 4): per joint, a bound
                    m = m.reshape(-1, 4, 4)
                else:
                    m = world[:, inst.node]
                posed = np.einsum("fij,vj->fvi", m[:, :3, :3], pts) + m[:, None, :3, 3]
                for i in range(N):
                    T = rt.crowd.transforms[i]
                    w = posed.reshape(-1, 3) @ T[:3, :3].T + T[:3, 3]
                    assert (w >= boxes[i, 0] - 1e-5).all() and (w <= boxes[i, 1] + 1e-5).all(), (inst.node, i)
            # a moved instance's box moves with it; stopping the animation hands it back to the posed boxes
            M = np.array(rt.crowd.transforms[2])
            M[0, 3] += 100.0
            rt.crowd[2].set_transform(M)
            assert cull.boxes()[2, 0, 0] > boxes[2, 0, 0] + 99
            anim.stop([3])
            assert not np.array_equal(cull.boxes()[3], boxes[3])


def test_bad_animation_option_is_one_usage_error(ctx):
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.offscreen import OffscreenRenderer

    with pytest.raises(UsageError, match="animation must be"):
        OffscreenRenderer(ctx, load_scene(None), 32, 32, samples=1, instances=2, animation="gpus")
    with pytest.raises(UsageError, match="for crowds"):
        OffscreenRenderer(ctx, load_scene(None), 32, 32, samples=1, animation="gpu")


@pytest.mark.parametrize("skinning", ["compute", "vertex"])
def test_gpu_animated_crowd_frames_in_flight_without_host_waits(ctx, skinning):
    """Two frames in flight submitted back to back (the host waits only for the frame that last used a slot), the
    clock moving every frame, part of the crowd culled in turn and one instance handed to the CPU midway: 0
    validation messages with synchronization validation across submissions (the ctx fixture); the last slot's
    palettes equal CrowdState.play at the animation's times."""
    from vkmorph.anim.crowd import CrowdState
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.camera import OrbitCamera
    from vkmorph.render.offscreen import OffscreenRenderer

    scene = load_scene(None)
    off = OffscreenRenderer(ctx, scene, 96, 72, samples=1, shadow_size=128, frames_in_flight=2, instances=N,
                            skinning=skinning, animation="gpu")
    frames = SlotFrames(ctx)
    try:
        r = off.renderer
        rt, cf, anim = r.runtime, r.crowd_frame, r.animation
        T = np.repeat(np.eye(4)[None], N, 0)
        T[:, 0, 3] = np.arange(N) * 3.0
        rt.crowd.set_transforms(T)
        anim.play(0, phase=np.arange(N) * 0.5, speed=1.0 + 0.1 * np.arange(N))
        r.frame_camera()
        wide, seen = r.camera, []
        for f in range(6):
            slot = f % 2
            frames.wait(slot)                  # before this frame's host writes to the slot
            if f == 3:
                rt.crowd[4].set_trs(3, "translation", [0.0, 0.5, 0.0])    # instance 4 back on the CPU
            clock = 0.3 * f
            r.animation_time = clock
            anim.sample_weights(clock)
            r.camera = wide if f % 3 != 1 else OrbitCamera(target=(0.0, 0.5, 0.0), distance=3.0, yaw=0.0,
                                                           pitch=0.2)
            r.update(slot, 96 / 72, 96, 72)
            seen.append(cf.visible.copy())
            frames.submit(slot, lambda cb, slot=slot: r.record(cb, slot, off.targets.framebuffers[0], 96, 72))
        ctx.wait_idle()
        assert any(not v.all() for v in seen) and seen[-1].all()
        ref = CrowdState(scene, N, rt.pose)
        ref.set_transforms(T)
        times = anim.times(0.3 * 5)
        ref.play(scene.animations[0], times)
        pal = anim.palette_view(5 % 2)
        for s in range(len(scene.skins)):
            a = pal[:, anim.palette_first(s):anim.palette_first(s) + len(scene.skins[s].joints)]
            gpu_rows = [i for i in range(N) if i != 4]
            assert np.abs(a[gpu_rows] - ref.skin_matrices(s)[gpu_rows]).max() <= 2e-4, s
            assert np.abs(a[4] - rt.crowd.skin_matrices(s)[4]).max() <= 1e-5       # the host's palette
    finally:
        frames.destroy()
        off.destroy()


def test_a_host_crowd_animation_passed_in(ctx):
    """``animation=`` a CrowdAnimation of the runtime passed in: drawn from it, not destroyed by the renderer; one
    of another runtime is refused."""
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.crowd_anim import CrowdAnimation
    from vkmorph.render.morph_pass import MorphRuntime
    from vkmorph.render.offscreen import OffscreenRenderer

    scene = load_scene(None)
    with MorphRuntime(ctx, scene, instances=2) as rt, MorphRuntime(ctx, scene, instances=2) as other:
        with CrowdAnimation(rt) as anim, CrowdAnimation(other) as foreign:
            with pytest.raises(UsageError, match="renderer's runtime"):
                OffscreenRenderer(ctx, scene, 32, 32, samples=1, runtime=rt, animation=foreign)
            anim.play(0, phase=[0.0, 1.0])
            off = OffscreenRenderer(ctx, scene, 48, 32, samples=1, shadow_size=64, runtime=rt, animation=anim)
            try:
                assert off.renderer.animation is anim
                off.renderer.animation_time = 0.5
                off.render()
                assert anim.dispatches[0] == 1
            finally:
                off.destroy()
            anim.palette_view(0)          # still alive: the host destroys it
