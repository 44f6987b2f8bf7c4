"""GPU crowd animation (``render/crowd_anim.CrowdAnimation``, glsl/crowd_anim.comp): every instance's palette,
sampled on the GPU at its own clip, phase and speed, equals the numpy reference (``CrowdState.play`` +
``skin_matrices``, float64) within 2e-4 (float32 sampling and products over a 4-deep chain of unit-scale
matrices; RobotExpressive, whose palettes hold a 100x scale: 5e-5 of the largest entry); instances posed by hand
get their CPU values; rigid parts' model matrices likewise; a frame where nothing moved records nothing. Under
validation + synchronization validation (the ``ctx`` fixture fails on any message)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset
from tests.render.crowd_scenes import anim_scene
from tests.render.crowd_scenes import random_quats as _quats
from vkmorph.anim.crowd import CrowdState
from vkmorph.errors import UsageError
from vkmorph.gpu import barriers
from vkmorph.render.crowd_anim import CrowdAnimation
from vkmorph.render.morph_pass import MorphRuntime

TOL = 2e-4


def reference(rt, anim: CrowdAnimation, clock: float, hand: dict[int, tuple], model: bool = False) -> np.ndarray:
    """Palettes (or, ``model``, the rigid node's world matrices) by the CPU path: a fresh CrowdState with the same
    transforms, each clip's rows played at the times the GPU computes, hand-posed rows set as the host set
    them."""
    ref = CrowdState(rt.crowd.scene, rt.crowd.count, rt.pose)
    ref.set_transforms(rt.crowd.transforms)
    t = anim.times(clock)
    for ci, clip in enumerate(anim.clips):
        rows = np.flatnonzero((anim.clip_of == ci) & rt.crowd.gpu_posed)
        if len(rows):
            ref.play(clip, t[rows], rows=rows)
    for row, (node, path, value) in hand.items():
        ref[row].set_trs(node, path, value)
    return ref.world_matrices()[:, 6] if model else ref.skin_matrices(0)


def run(ctx, anim, slot, clock):
    out = []

    def rec(cb):
        out.append(anim.record(cb, slot, time=clock))
        barriers.record(cb, barriers.COMPUTE_AND_TRANSFER_TO_HOST)   # palettes read back by the test
    ctx.submit_and_wait(rec)
    return out[0]


def test_gpu_palettes_equal_the_numpy_reference_per_instance(ctx):
    rng = np.random.default_rng(11)
    scene = anim_scene(rng)
    N = 9
    with MorphRuntime(ctx, scene, instances=N, slots=2) as rt, CrowdAnimation(rt) as anim:
        tf = np.repeat(np.eye(4)[None], N, 0)
        tf[:, :3, 3] = rng.normal(size=(N, 3)) * 5
        rt.crowd.set_transforms(tf)
        anim.play("a", phase=rng.random(4) * 2, speed=0.5 + rng.random(4), rows=[0, 1, 2, 3])
        anim.play(1, phase=rng.random(4), speed=[1.0, 2.0, -0.7, 0.3], rows=[4, 5, 6, 7])
        hand = {8: (3, "translation", [0.2, 0.8, 0.1])}      # instance 8 never plays: posed by hand
        rt.crowd[8].set_trs(*hand[8])
        first, J = anim.palette_first(0), 4
        for slot, clock in ((0, 0.37), (1, 1.91), (0, 5.123), (1, 5.123)):
            assert run(ctx, anim, slot, clock) == 8
            gpu = anim.palette_view(slot)[:, first:first + J]
            np.testing.assert_allclose(gpu, reference(rt, anim, clock, hand), atol=TOL, rtol=0)
            np.testing.assert_allclose(anim.palette_view(slot)[:, anim.model_column(6)],
                                       reference(rt, anim, clock, hand, model=True), atol=TOL, rtol=0)
        # a frame where nothing moved (same clock, no setter) records nothing at all; nor one where only
        # weights moved (the palettes do not depend on them)
        assert run(ctx, anim, 1, 5.123) == 0
        rt.crowd[0].set_weights("mesh", [0.5, 0.0, 0.25])
        assert run(ctx, anim, 1, 5.123) == 0
        # instance 2 posed by hand: from now on its CPU values, the others stay on the GPU
        hand[2] = (4, "rotation", list(_quats(rng, 1)[0]))
        pre = anim.times(6.0)
        rt.crowd[2].set_trs(*hand[2])
        assert not rt.crowd.gpu_posed[2]
        assert run(ctx, anim, 0, 6.0) == 7
        ref = reference(rt, anim, 6.0, hand)
        gpu = anim.palette_view(0)[:, first:first + J]
        np.testing.assert_allclose(gpu, ref, atol=TOL, rtol=0)
        np.testing.assert_allclose(anim.palette_view(0)[:, anim.model_column(6)],   # the host wrote row 2's
                                   reference(rt, anim, 6.0, hand, model=True), atol=TOL, rtol=0)
        # a transform change reaches the GPU-posed instances too
        tf[5, :3, 3] += 1.0
        rt.crowd.set_transforms(tf)
        run(ctx, anim, 0, 6.0)
        np.testing.assert_allclose(anim.palette_view(0)[:, first:first + J], reference(rt, anim, 6.0, hand),
                                   atol=TOL, rtol=0)
        assert np.array_equal(anim.times(6.0)[[0, 1, 3]], pre[[0, 1, 3]])


def test_robot_expressive_clips_on_the_gpu_equal_the_cpu(ctx):
    from vkmorph import load_scene

    scene = load_scene(str(asset("RobotExpressive", "RobotExpressive.glb")))
    rng = np.random.default_rng(3)
    N = 24
    with MorphRuntime(ctx, scene, instances=N) as rt, CrowdAnimation(rt) as anim:
        for k in range(N):   # every instance its own clip, phase and speed
            anim.play(k % len(anim.clips), phase=rng.random() * 3, speed=0.5 + rng.random(), rows=[k])
        for clock in (0.0, 1.234, 17.5):
            anim.sample_weights(clock)     # the clips' weight channels, on the CPU
            assert run(ctx, anim, 0, clock) == N
            ref = CrowdState(scene, N, rt.pose)
            t = anim.times(clock)
            for ci, clip in enumerate(anim.clips):
                rows = np.flatnonzero(anim.clip_of == ci)
                if len(rows):
                    ref.play(clip, t[rows], rows=rows)
            np.testing.assert_array_equal(rt.crowd.weights, ref.weights)
            rigid = sorted({inst.node for inst in rt.instances if not inst.prim.is_skinned})
            assert rigid        # the robot's rigid parts: their model matrices come from the same pass
            want = ref.world_matrices()[:, rigid]
            got = anim.palette_view(0)[:, [anim.model_column(n) for n in rigid]]
            np.testing.assert_allclose(got, want, atol=5e-5 * np.abs(want).max(), rtol=0)
            for skin in {p.skin for m in scene.meshes for p in m.primitives if p.is_skinned}:
                first, J = anim.palette_first(skin), len(scene.skins[skin].joints)
                want = ref.skin_matrices(skin)   # float32 through up to 8 levels: 5e-5 of the largest entry
                np.testing.assert_allclose(anim.palette_view(0)[:, first:first + J], want,
                                           atol=5e-5 * np.abs(want).max(), rtol=0)


def test_bad_clip_is_one_usage_error(ctx):
    scene = anim_scene(np.random.default_rng(2))
    with MorphRuntime(ctx, scene, instances=2) as rt, CrowdAnimation(rt) as anim:
        with pytest.raises(UsageError, match="no clip named 'walk'"):
            anim.play("walk")
        with pytest.raises(UsageError, match="out of range"):
            anim.play(5)
        with pytest.raises(UsageError, match="speed must be finite"):
            anim.play(0, speed=float("nan"))
        with pytest.raises(UsageError, match="phase must be one value or one per row: 2 rows, 3 values"):
            anim.play(0, phase=[0.0, 1.0, 2.0])
        with pytest.raises(UsageError, match="node 0 has no rigid primitive"):
            anim.model_column(0)
        with pytest.raises(UsageError, match="time must be finite"):
            ctx.submit_and_wait(lambda cb: anim.record(cb, time=float("inf")))
    with MorphRuntime(ctx, scene) as rt, pytest.raises(UsageError, match="crowd runtime"):
        CrowdAnimation(rt)


def test_compute_skinning_reads_the_gpu_palettes(ctx):
    """CrowdSkinning(animation=...) skins every GPU-posed instance with the animation pass's palettes, each
    frame the clock moves: its vertices equal CPU-posed skinning at the same times (the reference runtime)."""
    from vkmorph.gpu import memory as M
    from vkmorph.render.crowd_skin import CrowdSkinning

    rng = np.random.default_rng(8)
    scene = anim_scene(rng)
    N = 6
    with MorphRuntime(ctx, scene, instances=N) as rt, CrowdAnimation(rt) as anim, \
            MorphRuntime(ctx, scene, instances=N) as ref:
        skin = CrowdSkinning(rt, passes=3, path="compute", animation=anim)
        ref_skin = CrowdSkinning(ref, passes=3, path="compute")
        try:
            tf = np.repeat(np.eye(4)[None], N, 0)
            tf[:, :3, 3] = rng.normal(size=(N, 3))
            rt.crowd.set_transforms(tf)
            ref.crowd.set_transforms(tf)
            anim.play(0, phase=rng.random(3), speed=[1.0, 0.5, 2.0], rows=[0, 2, 4])
            anim.play(1, phase=rng.random(2), speed=1.3, rows=[1, 3])   # instance 5: rest pose on the CPU
            for clock in (0.25, 1.7):
                got = []

                def frame(cb, clock=clock, got=got):
                    rt.record(cb, consumer="compute")
                    anim.record(cb, time=clock, consumer="compute")
                    got.append(skin.record(cb))
                ctx.submit_and_wait(frame)
                assert got[0] == (N if clock == 0.25 else 5)    # later frames: only the GPU-posed ones
                t = anim.times(clock)
                for ci, clip in enumerate(anim.clips):
                    rows = np.flatnonzero((anim.clip_of == ci) & rt.crowd.gpu_posed)
                    ref.crowd.play(clip, t[rows], rows=rows)
                ctx.submit_and_wait(lambda cb: (ref.record(cb, consumer="compute"), ref_skin.record(cb)))
                a = M.readback(ctx, skin.outputs[0], np.float32)
                b = M.readback(ctx, ref_skin.outputs[0], np.float32)
                np.testing.assert_allclose(a, b, atol=5e-4, rtol=0)
        finally:
            skin.destroy()
            ref_skin.destroy()
