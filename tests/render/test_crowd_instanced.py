"""Compute-skinned crowd primitives drawn instanced (glsl/crowd_pull.vert): one vkCmdDrawIndexed per run of
consecutive visible instances and pass, instead of one per instance, and the image bit-identical to the former
per-instance draws (``CrowdFrame.pull_compute = False``: crowd_static.vert, binding 0 rebound per instance), with
every instance visible and with part of the crowd culled (several runs); under validation (the ctx fixture)."""

from __future__ import annotations

import numpy as np

from vkmorph.render.crowd_render import CrowdFrame

PASSES = 2     # shadow + forward (no selection: no outline)


def pose_randomly(rt, rng):
    """Every instance at its own weights and joint rotations (about y)."""
    crowd = rt.crowd
    crowd.set_all_weights(rng.random((crowd.count, crowd.weights.shape[1])))
    R = np.array(crowd.local[1])
    ang = rng.random(R.shape[:2]) * 1.5
    R[:] = np.stack([np.zeros_like(ang), np.sin(ang / 2), np.zeros_like(ang), np.cos(ang / 2)], -1)
    crowd.set_local(rotation=R)


def _render(ctx, N, camera=None):
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.offscreen import OffscreenRenderer

    off = OffscreenRenderer(ctx, load_scene(None), 128, 96, samples=1, shadow_size=128, instances=N,
                            skinning="compute")
    try:
        r = off.renderer
        crowd = r.runtime.crowd
        T = np.repeat(np.eye(4)[None], N, 0)
        T[:, 0, 3] = np.arange(N) * 3.0
        crowd.set_transforms(T)
        pose_randomly(r.runtime, np.random.default_rng(7))
        r.frame_camera()
        if camera is not None:
            r.camera = camera
        image = off.render()
        cf = r.crowd_frame
        modes = [(c.mode, c.shared) for c in cf.items]
        return image, cf.draw_calls, modes, list(cf.runs), cf.visible.copy()
    finally:
        off.destroy()


def _expected_draws(modes, runs, visible, pulled):
    per_pass = sum(len(runs) if shared or (pulled and m == "compute") else int(visible.sum()) for m, shared in modes)
    return PASSES * per_pass


def test_compute_skinned_crowd_is_one_draw_per_run_and_the_same_image(ctx, monkeypatch):
    from vkmorph.render.camera import OrbitCamera

    N = 6
    for camera in (None, OrbitCamera(target=(0.0, 0.5, 0.0), distance=3.0, yaw=0.0, pitch=0.2)):
        image, draws, modes, runs, visible = _render(ctx, N, camera)
        compute = sum(m == "compute" for m, _ in modes)
        assert compute, modes
        if camera is None:
            assert visible.all() and runs == [(0, N)]
            # one draw per compute-skinned primitive and pass for N instances (was N)
            others = sum(1 if shared else N for m, shared in modes if m != "compute")
            assert draws == PASSES * (compute + others)
        else:
            assert 0 < visible.sum() < N
        assert draws == _expected_draws(modes, runs, visible, pulled=True)
        with monkeypatch.context() as mp:
            mp.setattr(CrowdFrame, "pull_compute", False)
            ref, ref_draws, *_ = _render(ctx, N, camera)
        assert ref_draws == _expected_draws(modes, runs, visible, pulled=False)
        assert np.array_equal(image, ref)
        assert image.std() > 0
