"""A clip that scales the skinned mesh node to 0 and back: no LinAlgError anywhere, palettes stay exact."""

from __future__ import annotations

import numpy as np
import pytest

from tests.asset.gltf_build import skinned_morph_model, write_gltf
from vkmorph import load_scene
from vkmorph.anim.player import AnimationPlayer
from vkmorph.anim.skeleton import Skeleton, affine_inverse
from vkmorph.morph.state import SceneMorphPose


@pytest.fixture
def hidden_model(tmp_path):
    doc, binary = skinned_morph_model()  # clip 'move': mesh node scale 1 -> 0 at 0.5 s -> 1 at 1 s (STEP)
    return write_gltf(tmp_path / "hide.gltf", doc, binary)


def test_palettes_through_a_zero_scale(hidden_model):
    scene = load_scene(hidden_model)
    body = scene.node_index("body")
    skel = Skeleton(scene)
    player = AnimationPlayer(scene, SceneMorphPose(scene), skel)
    skin = scene.nodes[body].skin
    for t in (0.0, 0.25, 0.5, 0.75, 1.0):
        player.apply(t)
        world = skel.world_matrices()
        s = scene.skins[skin]
        expected_world = world[s.joints] @ s.inverse_bind_matrices  # by hand, nothing inverted
        np.testing.assert_allclose(skel.skin_matrices(skin), expected_world, atol=1e-6)
        local = skel.skin_matrices(skin, body)
        assert np.isfinite(local).all()
        det = np.linalg.det(world[body][:3, :3])
        if t in (0.5, 0.75):
            assert det == 0.0  # the node really is singular here (the file's STEP sampler holds 0 until 1 s)
        else:
            # exact again as soon as the scale comes back: mesh world x node-space palette = world palette
            np.testing.assert_allclose(world[body] @ local, expected_world, atol=1e-5)


def test_affine_inverse_regular_and_singular():
    m = np.array([[2.0, 0, 0, 1], [0, 3, 0, 2], [0, 0, 4, 3], [0, 0, 0, 1]])
    np.testing.assert_allclose(affine_inverse(m), np.linalg.inv(m), atol=1e-12)
    m[1, 1] = 0.0
    inv = affine_inverse(m)
    np.testing.assert_array_equal(inv[3], [0, 0, 0, 1])
    p = np.array([5.0, 7.0, 9.0, 1.0])  # a point on the collapsed plane maps back onto itself
    q = m @ p
    np.testing.assert_allclose(m @ (inv @ q), q, atol=1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("cmd", ["render", "morph"])
def test_cli_render_and_skinned_morph_at_zero_scale(hidden_model, tmp_path, cmd):
    from vkmorph.app.cli import main

    if cmd == "render":
        out = tmp_path / "r.png"
        argv = ["render", str(hidden_model), "--clip", "move", "--time", "0.5", "--size", "48x32", "--out", str(out)]
    else:
        out = tmp_path / "m.npz"
        argv = ["morph", str(hidden_model), "--clip", "move", "--time", "0.5", "--skinned", "--out", str(out)]
    assert main(argv) == 0
    if cmd == "morph":
        pos = np.load(out)["p0/position"]
        assert pos.shape == (4, 3) and np.isfinite(pos).all()
