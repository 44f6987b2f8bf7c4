"""Crowd primitives whose instances each have their own vertex range drawn instanced: compute-skinned ones
(glsl/crowd_pull.vert over the skinned output) and, on the vertex-shader path, morphing skinned ones
(glsl/crowd_skin_pull.vert over the morph output) and morphing rigid ones (crowd_pull.vert over the morph output):
one vkCmdDrawIndexed per run of consecutive visible instances and pass, instead of one per instance, and the image
bit-identical to the former per-instance draws (``CrowdFrame.pull_compute = False`` / ``pull_vertex = False``:
crowd_static.vert / crowd_skin.vert, binding 0 rebound per instance), with every instance visible and with part of
the crowd culled (several runs); under validation (the ctx fixture)."""

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


def _render(ctx, N, camera=None, skinning="compute"):
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.offscreen import OffscreenRenderer

    off = OffscreenRenderer(ctx, load_scene(None), 128, 96, samples=1, shadow_size=128, instances=N,
                            skinning=skinning)
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
        modes = [(c.mode, c.shared, c.pulled) for c in cf.items]
        return image, cf.draw_calls, modes, (list(cf.runs), dict(cf.pass_runs)), cf.visible.copy()
    finally:
        off.destroy()


def _expected_draws(modes, runs):
    """Per pass (its own visible set: the camera's frustum, the light's volume) and LOD level (one here)."""
    _, pass_runs = runs
    return sum(len(r) if shared or pulled else len(idx)
               for levels in pass_runs.values() for _, idx, r in levels for _, shared, pulled in modes)


def test_compute_skinned_crowd_is_one_draw_per_run_and_the_same_image(ctx, monkeypatch):
    from vkmorph.render.camera import OrbitCamera

    N = 6
    for camera in (None, OrbitCamera(target=(0.0, 0.5, 0.0), distance=3.0, yaw=0.0, pitch=0.2)):
        image, draws, modes, runs, visible = _render(ctx, N, camera)
        compute = sum(m == "compute" for m, *_ in modes)
        assert compute and all(p for m, _, p in modes if m == "compute"), modes
        if camera is None:
            assert visible.all() and runs[0] == [(0, N)]
            # one draw per compute-skinned (or other pulled / shared) primitive and pass for N instances (was N)
            assert draws == PASSES * len(modes)
        else:
            assert 0 < visible.sum() < N
        assert draws == _expected_draws(modes, runs)
        with monkeypatch.context() as mp:
            mp.setattr(CrowdFrame, "pull_compute", False)
            mp.setattr(CrowdFrame, "pull_vertex", False)
            ref, ref_draws, ref_modes, *_ = _render(ctx, N, camera)
        assert not any(p for *_, p in ref_modes)
        assert ref_draws == _expected_draws(ref_modes, runs)
        assert np.array_equal(image, ref)
        assert image.std() > 0


def test_morphing_vertex_path_crowd_is_one_draw_per_run_and_the_same_image(ctx, monkeypatch):
    """skinning="vertex": the morphing skinned primitives (crowd_skin_pull.vert) and morphing rigid ones
    (crowd_pull.vert) read their instances' morph output ranges from set 1: one draw per run and pass (the former
    code drew them once per visible instance), the image equal to the per-instance draws."""
    from vkmorph.render.camera import OrbitCamera

    N = 6
    for camera in (None, OrbitCamera(target=(0.0, 0.5, 0.0), distance=3.0, yaw=0.0, pitch=0.2)):
        image, draws, modes, runs, visible = _render(ctx, N, camera, skinning="vertex")
        assert not any(m == "compute" for m, *_ in modes), modes
        morphing_skinned = [p for m, shared, p in modes if m == "vertex" and not shared]
        assert morphing_skinned and all(morphing_skinned), modes
        assert all(p for _, shared, p in modes if not shared), modes
        if camera is None:
            assert visible.all() and runs[0] == [(0, N)]
            assert draws == PASSES * len(modes)          # every primitive: one draw per pass for N instances
        else:
            assert 0 < visible.sum() < N and len(runs[0]) >= 1
        assert draws == _expected_draws(modes, runs)
        with monkeypatch.context() as mp:
            mp.setattr(CrowdFrame, "pull_vertex", False)
            ref, ref_draws, ref_modes, *_ = _render(ctx, N, camera, skinning="vertex")
        assert not any(p for *_, p in ref_modes)
        assert ref_draws == _expected_draws(ref_modes, runs) > draws
        assert np.array_equal(image, ref)
        assert image.std() > 0
