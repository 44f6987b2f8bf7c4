"""One scene state: what the apps animate (the renderer's skeleton, ``AnimationPlayer(scene, rt.state)``) is what
the runtime's draws and world-space bounds describe, without passing ``skeleton=``; the draw list is built once
and refreshed only where the skeleton moved."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset
from vkmorph import load_scene
from vkmorph.anim.player import AnimationPlayer
from vkmorph.anim.skeleton import Skeleton
from vkmorph.morph.bounds import ClusterBounds
from vkmorph.morph.state import SceneMorphPose

pytestmark = pytest.mark.gpu


def reference_palettes(scene, clip, t):
    """Palettes (joint world x inverse bind) of a separate skeleton animated by the same clip at ``t``."""
    sk = Skeleton(scene)
    AnimationPlayer(scene, SceneMorphPose(scene), sk).play(clip, time=t)
    return sk, {s: sk.skin_matrices(s) for s in range(len(scene.skins))}


def test_draws_and_world_bounds_follow_what_the_apps_animate(ctx):
    """The demo, `vkmorph render` and the soak animate ``renderer.skeleton``; the runtime's draws() and
    bounds(space="world") used to keep the rest pose (a second Skeleton) unless given ``skeleton=``."""
    from vkmorph.gpu.vk import vk
    from vkmorph.render.offscreen import COLOR_FORMAT
    from vkmorph.render.renderer import SceneRenderer

    scene = load_scene(asset("RobotExpressive", "RobotExpressive.glb"))
    r = SceneRenderer(ctx, scene, COLOR_FORMAT, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, ground=False)
    try:
        rt = r.runtime
        rest = {d.skin: d.joint_palette.copy() for d in rt.draws() if d.skin is not None}
        rest_bounds = [rt.bounds(i.node, i.prim_index, space="world") for i in rt.instances]
        player = AnimationPlayer(scene, rt.pose, r.skeleton)       # what app/demo.py and render_cmd.py do
        player.play("Dance", time=0.8)
        ref_skel, ref = reference_palettes(scene, "Dance", 0.8)
        draws = rt.draws()
        moved = 0
        for d, inst in zip(draws, rt.instances):
            if d.skin is not None:
                np.testing.assert_allclose(d.joint_palette, ref[d.skin], atol=1e-6)
                moved += not np.allclose(d.joint_palette, rest[d.skin], atol=1e-4)
                cb = ClusterBounds(inst.prim)
                w = rt.pose.weights(inst.node)[: inst.target_count] if inst.is_morphing else np.zeros(0)
                np.testing.assert_allclose(rt.bounds(inst.node, inst.prim_index, space="world"),
                                           cb.at(w, ref[d.skin]), atol=1e-5)
            else:
                np.testing.assert_allclose(d.node_world, ref_skel.world_matrices()[d.node], atol=1e-6)
        assert moved, "the clip should move the skinned palettes away from the rest pose"
        assert any(not np.allclose(rt.bounds(i.node, i.prim_index, space="world"), b, atol=1e-4)
                   for i, b in zip(rt.instances, rest_bounds))
        # the state's own player form drives the same skeleton
        AnimationPlayer(scene, rt.state).play("Dance", time=1.3)
        _, ref13 = reference_palettes(scene, "Dance", 1.3)
        for d in rt.draws():
            if d.skin is not None:
                np.testing.assert_allclose(d.joint_palette, ref13[d.skin], atol=1e-6)
    finally:
        r.destroy()


def test_draw_list_is_built_once_and_refreshed_where_versions_moved(ctx):
    from vkmorph.render.morph_pass import MorphRuntime

    scene = load_scene(asset("RobotExpressive", "RobotExpressive.glb"))
    with MorphRuntime(ctx, scene, slots=2) as rt:
        a0, a1 = rt.draws(0), rt.draws(1)
        assert rt.draws(0) is a0 and len(a0) == len(rt.instances) == len(a1)
        assert a0.refresh() == 0                                  # unchanged: nothing rewritten
        assert [d.vertex_offset for d in a1] == [rt.vertex_buffer_offset(i.node, i.prim_index, slot=1)
                                                 for i in rt.instances]
        with pytest.raises(ValueError):
            a0[0].node_world[0, 0] = 2.0                          # the list owns its matrices
        # move one leaf node that no skin uses as a joint: only the draws of that node change
        joints = {int(j) for s in scene.skins for j in s.joints}
        rigid = [d for d in a0 if d.skin is None and d.node not in joints
                 and not scene.nodes[d.node].children]
        if not rigid:
            pytest.skip("no rigid leaf draw in this asset")
        node = rigid[0].node
        t = np.array(rt.skeleton.translation[node]) + (0.0, 0.5, 0.0)
        rt.skeleton.set_trs(node, "translation", t)
        n = a0.refresh()
        assert n == sum(1 for d in a0 if d.node == node)
        np.testing.assert_allclose(rigid[0].node_world, rt.skeleton.world_matrices()[node], atol=1e-6)
        np.testing.assert_allclose(a1[a0.index(rigid[0])].world, rt.skeleton.world_matrices()[node], atol=1e-6)
        assert a0.refresh() == 0
