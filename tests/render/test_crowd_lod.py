"""Crowd levels of detail and per-pass visibility (render/crowd_lod.py, CrowdFrame): LOD forced to 0 draws the image
of no LOD; a coarser level draws fewer triangles; every instance's skinned vertices stay exact against numpy
whatever level it is drawn at, and when it comes back after a frame at another level or culled; an instance
outside the camera's frustum but inside the light's volume still casts its shadow. Under validation and
synchronization validation, with the ctx fixture's leak check."""

from __future__ import annotations

import numpy as np
import pytest

from tests.render.crowd_scenes import expected_world, pose_randomly, skinned_positions
from vkmorph.errors import UsageError
from vkmorph.render.crowd_lod import CrowdLod, projected_diameter


def _offscreen(ctx, N, *, lod, skinning="compute", size=(128, 96), shadow=128):
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.offscreen import OffscreenRenderer

    return OffscreenRenderer(ctx, load_scene(None), *size, samples=1, shadow_size=shadow, instances=N,
                             skinning=skinning, lod=lod)


def _line(r, N, step=3.0, axis=0):
    T = np.repeat(np.eye(4)[None], N, 0)
    T[:, axis, 3] = np.arange(N) * step
    r.runtime.crowd.set_transforms(T)


def _image(ctx, N, lod, skinning):
    off = _offscreen(ctx, N, lod=lod, skinning=skinning)
    try:
        r = off.renderer
        _line(r, N)
        pose_randomly(r.runtime, np.random.default_rng(3))
        r.frame_camera()
        image = off.render()
        cf = r.crowd_frame
        return image, dict(cf.pass_triangles), cf.level_counts("forward"), cf.level_counts("shadow")
    finally:
        off.destroy()


@pytest.mark.parametrize("skinning", ["compute", "vertex"])
def test_lod_zero_is_the_no_lod_image_and_coarser_levels_draw_fewer_triangles(ctx, skinning):
    N = 4
    ref, ref_tris, _, _ = _image(ctx, N, None, skinning)
    zero, zero_tris, fwd, shd = _image(ctx, N, 0, skinning)
    assert np.array_equal(zero, ref) and zero_tris == ref_tris
    assert fwd[0] == N and shd[0] == N and not any(fwd[1:])
    coarse, coarse_tris, fwd, _ = _image(ctx, N, CrowdLod(level=3), skinning)
    assert fwd[3] == N
    for p in ("forward", "shadow"):
        assert 0 < coarse_tris[p] < 0.5 * ref_tris[p], (p, coarse_tris, ref_tris)
    assert not np.array_equal(coarse, ref) and coarse.std() > 0


def _levels_spread(r, off):
    """Thresholds between the instances' projected sizes so that the levels differ along the line."""
    cf = r.crowd_frame
    w, h = off.width, off.height
    d = projected_diameter(cf.culler.boxes(), r.camera.view_proj(w / h), h)
    q = np.quantile(d[np.isfinite(d)], [0.8, 0.55, 0.3])
    cf.lod = CrowdLod(thresholds=tuple(q))


def _check_exact(ctx, r, slot=0):
    cf, rt = r.crowd_frame, r.runtime
    for d, inst in zip(cf.skin.draws(slot), cf.skin.items):
        for i in range(rt.crowd.count):
            got = skinned_positions(ctx, cf.skin, slot, d, i)
            assert np.abs(got - expected_world(rt, inst, i)[0]).max() <= 1e-4, (inst.node, i)


def test_vertices_exact_at_every_level_and_after_switching_level_and_visibility(ctx):
    """Instances along a line drawn at different levels: their skinned vertices exact; then a frame with new
    poses in which the camera and the light see only part of the crowd (the rest keeps its old vertices, not
    skinned) and the levels move; then back: every instance exact again."""
    from vkmorph.render.camera import OrbitCamera

    N = 8
    rng = np.random.default_rng(5)
    off = _offscreen(ctx, N, lod="on", size=(160, 120))
    try:
        r, cf = off.renderer, off.renderer.crowd_frame
        _line(r, N, axis=2, step=-4.0)             # away from the framing camera: shrinking on screen
        pose_randomly(r.runtime, rng)
        r.frame_camera()
        r.camera = OrbitCamera(target=r.camera.target, distance=r.camera.distance, yaw=0.0, pitch=0.2)
        wide, wide_bounds = r.camera, r.bounds
        _levels_spread(r, off)
        off.render()
        levels = cf.levels.copy()
        assert len(set(levels.tolist())) >= 3 and cf.visible.all(), levels
        assert sum(cf.level_counts("forward")) == N
        _check_exact(ctx, r)
        # part of the crowd in neither the camera's frustum nor the light's volume; the others' levels move
        pose_randomly(r.runtime, rng)
        r.camera = OrbitCamera(target=(0.0, 1.0, 0.0), distance=4.0, yaw=np.pi / 2, pitch=0.2)
        r.bounds = (np.array([-1.5, 0.0, -1.5]), np.array([1.5, 2.0, 1.5]))
        spread, cf.lod = cf.lod, CrowdLod(level=3)      # and the seen ones switch to the coarsest level
        off.render()
        seen = cf.deform_visible.copy()
        assert 0 < seen.sum() < N and cf.skinned_last == int(seen.sum())
        assert (cf.levels == 3).all() and (levels[seen] != 3).any()
        r.camera, r.bounds, cf.lod = wide, wide_bounds, spread
        off.render()
        assert cf.visible.all() and cf.skinned_last == int((~seen).sum())   # the culled ones, now caught up
        assert len(set(cf.levels.tolist())) >= 3        # new poses: about the same levels as before
        _check_exact(ctx, r)
    finally:
        off.destroy()


def test_instance_outside_the_camera_but_in_the_light_volume_casts_its_shadow(ctx):
    """Instance 1 out of the camera's frustum, inside the light's volume: the ground under the camera is darker
    with it there than with it moved out of both (the former frustum-only culling drew no shadow for it).
    Instance 2, in the light's volume too but on the side its shadow leaves the view, is culled from the shadow
    pass (its box swept along the light misses the camera's frustum): not deformed for nothing."""
    from vkmorph.render.camera import OrbitCamera, light_view_proj

    off = _offscreen(ctx, 3, lod=None, shadow=256)
    try:
        r, cf = off.renderer, off.renderer.crowd_frame
        crowd = r.runtime.crowd
        T = np.repeat(np.eye(4)[None], 3, 0)
        T[1, 0, 3], T[2, 0, 3] = 6.0, -30.0
        crowd.set_transforms(T)
        r.frame_camera()                          # ground, light volume (r.bounds): both instances
        r.light_dir = np.array([-1.0, -0.45, 0.0])   # low: instance 1's shadow falls far to its -x side
        box = cf.culler.boxes()[1]
        r.camera = OrbitCamera(target=(box[0, 0] - 2.5, r.ground_y, 0.0), distance=3.0, yaw=0.0, pitch=1.4)
        images = []
        for x in (6.0, 1000.0):
            T[1, 0, 3] = x
            crowd.set_transforms(T)
            images.append(off.render().astype(int))
            assert not cf.visible[1] and cf.shadow_visible[1] == (x == 6.0)
            lo, hi = r.bounds                    # the light's volume, as SceneRenderer.update makes it
            volume = light_view_proj(r.light_dir, (lo + hi) / 2, max(float(np.linalg.norm(hi - lo)) / 2, 1e-3) * 1.6)
            assert cf.culler.visible(volume)[2]
            assert not cf.visible[2] and not cf.shadow_visible[2] and not cf.deform_visible[2]
        darker = (images[1] - images[0]).max(axis=-1)
        assert (darker > 10).sum() > 200                   # its shadow, in view
        assert (darker < -10).sum() == 0                   # and nothing else changed
    finally:
        off.destroy()


def test_bad_lod_options_are_refused(ctx):
    from vkmorph.asset.importer import load_scene
    from vkmorph.render.offscreen import OffscreenRenderer

    with pytest.raises(UsageError, match="lod must be"):
        _offscreen(ctx, 2, lod="fast")
    with pytest.raises(UsageError, match="lod= is for crowds"):
        OffscreenRenderer(ctx, load_scene(None), 32, 32, samples=1, lod="on")
    with pytest.raises(UsageError, match="LOD level"):
        CrowdLod(level=9)
    with pytest.raises(UsageError, match="thresholds"):
        CrowdLod(thresholds=(10.0, 20.0, 5.0))
    for bad in ({"thresholds": "abc"}, {"thresholds": 5}, {"shadow_thresholds": 3}, {"ratios": 0.5}):
        with pytest.raises(UsageError, match="must be a list of numbers"):
            CrowdLod(**bad)
    with pytest.raises(UsageError, match="lod= is for crowds"):
        OffscreenRenderer(ctx, load_scene(None), 32, 32, samples=1, lod=0)     # level 0 forced is LOD too
