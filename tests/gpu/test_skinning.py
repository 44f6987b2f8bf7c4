"""Skinned positions captured from the GPU (skin.comp = skin.vert's skinning code) with the joint palettes of
rt.draws() equal the numpy reference (inverse(mesh node world) x joint world x inverse bind)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset
from vkmorph import load_scene
from vkmorph.anim.player import AnimationPlayer
from vkmorph.morph.reference import morph_reference, skin_reference

pytestmark = pytest.mark.gpu

SKINNED = [("SimpleSkin", "SimpleSkin.gltf"), ("assimp_simple_skin", "simple_skin.gltf"),
           ("assimp_simple_skin", "quad_skin.glb"), ("FBX_huesitos", "huesitos.fbx"),
           ("RobotExpressive", "RobotExpressive.glb"), (None, None)]


@pytest.mark.parametrize("folder,name", SKINNED, ids=[n or "default_scene" for _, n in SKINNED])
def test_gpu_skinning_matches_reference(ctx, folder, name):
    from vkmorph.render.morph_pass import MorphRuntime
    from vkmorph.render.skin_capture import SkinCapture

    scene = load_scene(asset(folder, name) if folder else None)
    with MorphRuntime(ctx, scene) as rt:
        skel = rt.skeleton
        player = AnimationPlayer(scene, rt.pose, skel)
        cap = SkinCapture(ctx, max_runs=4 * len(scene.primitives))
        clip = scene.animations[0] if scene.animations else None
        times = (0.0, clip.duration * 0.37, clip.duration * 0.8) if clip else (0.0,)
        for t in times:
            if clip:
                player.clip = clip
                player.apply(t)
            ctx.submit_and_wait(rt.record)
            seen = set()
            for d in rt.draws():  # the first node drawing each skinned primitive, with its joint palette
                inst = rt.instance(d.node, d.primitive)
                prim, node = inst.prim, d.node
                if not prim.is_skinned or id(prim) in seen:
                    assert d.joint_palette is None or prim.is_skinned
                    continue
                seen.add(id(prim))
                mats = d.joint_palette
                gp, gn, gt = cap.run(inst.vertex_buffer, inst.vertex_offset, prim.vertices.dtype, prim.vertex_count,
                                     mats)
                if prim.morph_targets:
                    p, n, tg = morph_reference(prim, rt.pose.weights(node)[: len(prim.morph_targets)])
                else:
                    v = prim.vertices
                    p, n, tg = v["position"], v["normal"], v["tangent"]
                rp, rn, rt_ = skin_reference(p, n, tg, prim.vertices["joints"], prim.vertices["weights"], mats)
                size = float(np.ptp(rp, axis=0).max()) or 1.0
                assert np.abs(gp - rp).max() <= 1e-5 * size, (t, d.node, d.primitive)
                assert np.abs(gn - rn).max() <= 1e-4
                assert np.abs(gt - rt_[:, :3]).max() <= 1e-4
        cap.destroy()
