"""Exports that look like the source: a posed or baked .glb keeps UVs, COLOR_0, materials and textures, the node
hierarchy and names, passes the Khronos glTF-Validator, and renders (``vkmorph render``) like the source; .obj /
.ply of a bake write one file per frame."""

from __future__ import annotations

import numpy as np
import pytest
from PIL import Image

import vkmorph
import vkmorph.api
from tests.api.gltf_validator import errors, validate
from tests.helpers import asset
from tests.helpers import vkmorph as cli
from tests.render.gltf_gen import GltfBuilder, cube
from tests.render.scenes import CHANNEL_TOL, MATCH_FRACTION, MEAN_TOL, TRILINEAR, obj_textured_cube, orange_texture

pytestmark = pytest.mark.gpu

SIZE = "160x120"


def rig_scene(dir) -> object:
    """A root node "Rig" (moved and turned) with two children: "Box", an orange-textured cube with two morph
    targets (grow, lift), and "Stripes", a cube coloured per vertex (COLOR_0); clip "Wave" drives Box's weights,
    turns Rig and slides Stripes. Unskinned, so the source's posed bounds are the exported mesh's (same framing)."""
    b = GltfBuilder()
    pos, nor, uv, idx = cube(0.4)
    tex = b.texture(b.image(orange_texture()), TRILINEAR)
    orange = b.material(name="Orange", pbrMetallicRoughness={"baseColorTexture": {"index": tex},
                                                             "metallicFactor": 0.0, "roughnessFactor": 0.5})
    white = b.material(name="White", pbrMetallicRoughness={"metallicFactor": 0.0, "roughnessFactor": 0.6})
    grow, lift = pos * 0.6, np.tile(np.array([0.0, 0.5, 0.0], np.float32), (len(pos), 1))
    box = b.mesh(pos, nor, uv, idx, material=orange, translation=(-0.6, 0.0, 0.0), name="Box",
                 targets=[grow, lift], weights=(0.0, 0.0))
    t = (pos[:, 1] / 0.8 + 0.5)[:, None]
    colors = np.hstack([0.9 * t + 0.05, 0.2 + 0 * t, 0.9 * (1 - t) + 0.05]).astype(np.float32)
    stripes = b.mesh(pos, nor, uv, idx, material=white, colors=colors, translation=(0.6, 0.0, 0.0), name="Stripes")
    doc = b.doc
    doc["nodes"].append({"name": "Rig", "children": [box, stripes], "translation": [0.2, 0.1, 0.0],
                         "rotation": [0.0, float(np.sin(0.25)), 0.0, float(np.cos(0.25))]})
    doc["scenes"][0]["nodes"] = [len(doc["nodes"]) - 1]
    rig = len(doc["nodes"]) - 1
    times = b.accessor(np.array([0.0, 1.0], np.float32), vertex=False)
    weights = b.accessor(np.array([0.0, 0.0, 1.0, 0.6], np.float32), vertex=False)
    half = np.sin(0.6)
    turn = b.accessor(np.array([[0, np.sin(0.25), 0, np.cos(0.25)], [0, half, 0, np.cos(0.6)]], np.float32),
                      vertex=False)
    slide = b.accessor(np.array([[0.6, 0.0, 0.0], [0.6, 0.3, -0.3]], np.float32), vertex=False)
    doc["animations"] = [{"name": "Wave", "samplers": [
        {"input": times, "output": weights, "interpolation": "LINEAR"},
        {"input": times, "output": turn, "interpolation": "LINEAR"},
        {"input": times, "output": slide, "interpolation": "LINEAR"}], "channels": [
        {"sampler": 0, "target": {"node": box, "path": "weights"}},
        {"sampler": 1, "target": {"node": rig, "path": "rotation"}},
        {"sampler": 2, "target": {"node": stripes, "path": "translation"}}]}]
    return b.save(dir / "rig.glb", glb=True)


def render(path, out, *args) -> np.ndarray:
    r = cli("render", path, "--size", SIZE, "--out", out, *args)
    assert r.returncode == 0, r.stderr
    return np.asarray(Image.open(out).convert("RGBA"))


def assert_same_image(img: np.ndarray, ref: np.ndarray, what: str) -> None:
    """The reference-image rule of tests/render (same device: in place)."""
    diff = np.abs(img.astype(np.int16) - ref.astype(np.int16))
    match, mean = (diff.max(axis=2) <= CHANNEL_TOL).mean(), diff.mean()
    assert match >= MATCH_FRACTION and mean <= MEAN_TOL, (
        f"{what}: {match:.4f} of pixels within {CHANNEL_TOL}/255 (need {MATCH_FRACTION}), mean diff {mean:.3f} "
        f"(max {MEAN_TOL})")


def assert_valid(path) -> None:
    report = validate(path)
    assert report["issues"]["numErrors"] == 0, "\n".join(errors(report))


def assert_looks_like(exported, source) -> None:
    """Same UVs, colours, materials (names, factors, texture images), node names and parents as the source."""
    a, b = vkmorph.load_scene(exported), vkmorph.load_scene(source)
    pa = sorted(a.primitives, key=lambda p: p.name)
    pb = sorted(b.primitives, key=lambda p: p.name)
    assert len(pa) == len(pb)
    for x, y in zip(pa, pb):
        np.testing.assert_array_equal(x.vertices["texcoord"], y.vertices["texcoord"])
        assert (x.colors is None) == (y.colors is None)
        if y.colors is not None:
            np.testing.assert_allclose(x.colors, y.colors, atol=1e-6)
        mx, my = x.material, y.material
        assert (mx.name, mx.base_color_factor, mx.alpha_mode) == (my.name, my.base_color_factor, my.alpha_mode)
        for slot in mx.TEXTURE_SLOTS:
            tx, ty = getattr(mx, slot), getattr(my, slot)
            assert (tx is None) == (ty is None), slot
            if ty is not None:
                np.testing.assert_array_equal(tx.image.decode(), ty.image.decode())
    assert len({id(p.material) for p in pa}) == len({id(p.material) for p in pb})
    source_names = {n.name for n in b.nodes}

    def parent(scene, n):   # Assimp adds a root above several root nodes: count it as none
        p = scene.nodes[n.parent] if n.parent is not None else None
        return None if p is None or (p.parent is None and p.name not in source_names) else p.name

    pairs_b = {(n.name, parent(b, n)) for n in b.nodes}
    pairs_a = {(n.name, parent(a, n)) for n in a.nodes}
    want = {(n, p) for n, p in pairs_b if n in ("Rig", "Box", "Stripes")}
    assert want and want <= pairs_a, f"source (node, parent) pairs {want}, exported {pairs_a}"


@pytest.fixture
def rig(tmp_path):
    return rig_scene(tmp_path)


@pytest.mark.parametrize("space", ["mesh", "world"])
def test_posed_glb_validates_keeps_materials_and_renders_like_the_source(rig, tmp_path, space):
    with vkmorph.open(rig, validation=True) as m:
        pose = m.pose(clip="Wave", time=0.6, space=space)
        pose.export(tmp_path / "pose.glb")
        pose.export(tmp_path / "pose.gltf")        # one self-contained JSON file: buffer and image as data URIs
    assert not m.messages
    assert_valid(tmp_path / "pose.glb")
    assert_valid(tmp_path / "pose.gltf")
    assert_looks_like(tmp_path / "pose.glb", rig)
    assert_looks_like(tmp_path / "pose.gltf", rig)
    src = render(rig, tmp_path / "src.png", "--clip", "Wave", "--time", "0.6")
    out = render(tmp_path / "pose.glb", tmp_path / "out.png")
    assert_same_image(out, src, "posed export")


def test_textured_obj_source_exports_its_texture_file(tmp_path):
    """A source whose texture is a file next to it (OBJ + MTL through Assimp): the .glb embeds the image."""
    src = obj_textured_cube(tmp_path)
    with vkmorph.open(src, validation=True) as m:
        m.pose().export(tmp_path / "cube.glb")
    assert not m.messages
    assert_valid(tmp_path / "cube.glb")
    a, b = vkmorph.load_scene(tmp_path / "cube.glb"), vkmorph.load_scene(src)
    np.testing.assert_array_equal(a.primitives[0].vertices["texcoord"], b.primitives[0].vertices["texcoord"])
    np.testing.assert_array_equal(a.primitives[0].material.base_color_texture.image.decode(),
                                  b.primitives[0].material.base_color_texture.image.decode())
    assert_same_image(render(tmp_path / "cube.glb", tmp_path / "out.png"), render(src, tmp_path / "src.png"),
                      "OBJ source exported as .glb")


def test_texture_transform_round_trips():
    from vkmorph.asset.materials import texture_transform
    from vkmorph.export import _texture_transform

    assert _texture_transform((1.0, 0.0, 0.0, 0.0, 1.0, 0.0)) is None
    rng = np.random.default_rng(7)
    for _ in range(20):
        tt = {"offset": rng.uniform(-2, 2, 2).tolist(), "rotation": float(rng.uniform(-3, 3)),
              "scale": rng.uniform(0.2, 3, 2).tolist()}
        back = _texture_transform(texture_transform(tt))
        np.testing.assert_allclose(texture_transform(back), texture_transform(tt), atol=1e-12)


def test_baked_glb_plays_the_bake_at_its_frame_times(rig, tmp_path):
    with vkmorph.open(rig, validation=True) as m:
        bake = m.bake(clip="Wave", times=np.linspace(0.0, 1.0, 5))
        bake.export(tmp_path / "bake.glb")
    assert not m.messages
    assert_valid(tmp_path / "bake.glb")
    assert_looks_like(tmp_path / "bake.glb", rig)
    # frame 3 (t = 0.75): the exported animation "baked" shows exactly that frame there
    src = render(rig, tmp_path / "src.png", "--clip", "Wave", "--time", "0.75")
    out = render(tmp_path / "bake.glb", tmp_path / "out.png", "--clip", "baked", "--time", "0.75")
    assert_same_image(out, src, "baked export at t = 0.75")


@pytest.mark.parametrize("space", ["mesh", "world"])
def test_skinned_model_exports_validate_with_materials_and_hierarchy(tmp_path, space):
    src = asset("RobotExpressive", "RobotExpressive.glb")
    with vkmorph.open(src, validation=True) as m:
        world = m.pose(clip="Dance", time=0.5, space="world")
        m.pose(clip="Dance", time=0.5, space=space).export(tmp_path / "pose.glb")
        m.bake(clip="Dance", times=np.linspace(0.0, 0.5, 3), space=space).export(tmp_path / "bake.glb")
    assert not m.messages
    for f in ("pose.glb", "bake.glb"):
        assert_valid(tmp_path / f)
    a, b = vkmorph.load_scene(tmp_path / "pose.glb"), vkmorph.load_scene(src)
    assert len({id(p.material) for p in a.primitives}) == len({id(p.material) for p in b.primitives})
    assert {p.material.name for p in a.primitives} == {p.material.name for p in b.primitives}
    assert {n.name for n in b.nodes} - {n.name for n in a.nodes} <= {b.nodes[r].name for r in b.roots}
    for x, y in zip(sorted(a.primitives, key=lambda p: p.vertex_count), sorted(b.primitives,
                                                                                 key=lambda p: p.vertex_count)):
        np.testing.assert_array_equal(x.vertices["texcoord"], y.vertices["texcoord"])
    # the exported file, re-imported and placed by its own hierarchy, is the world-space pose
    with vkmorph.open(tmp_path / "pose.glb", validation=True) as e:
        back = e.pose(space="world")
    assert not e.messages
    got = np.sort(np.concatenate([p.positions for p in back]), axis=0)
    np.testing.assert_allclose(got, np.sort(np.concatenate([p.positions for p in world]), axis=0), atol=2e-4)


def test_obj_and_ply_of_a_bake_write_one_file_per_frame(rig, tmp_path):
    import trimesh

    with vkmorph.open(rig, validation=True) as m:
        bake = m.bake(clip="Wave", times=[0.0, 0.5, 1.0])
        one = m.bake(clip="Wave", times=[0.5])
        for suffix in ("obj", "ply"):
            paths = bake.export(tmp_path / f"b.{suffix}")
            assert paths == [tmp_path / f"b_{f:04d}.{suffix}" for f in range(3)]
            assert not (tmp_path / f"b.{suffix}").exists()
            for f, p in enumerate(paths):
                loaded = trimesh.load(p, force="mesh", process=False)
                np.testing.assert_allclose(np.sort(loaded.vertices, axis=0), np.sort(bake.positions[f], axis=0),
                                           atol=1e-5)
            assert one.export(tmp_path / f"one.{suffix}") == tmp_path / f"one.{suffix}"
        # a frame that cannot be written: one error before anything is written
        (tmp_path / "c_0001.obj").mkdir()
        with pytest.raises(vkmorph.UsageError):
            bake.export(tmp_path / "c.obj")
        assert not (tmp_path / "c_0000.obj").exists() and not (tmp_path / "c_0002.obj").exists()
        with pytest.raises(vkmorph.UsageError, match="increasing times"):
            m.bake(clip="Wave", times=[0.5, 0.0]).export(tmp_path / "back.glb")
        assert not (tmp_path / "back.glb").exists()


def test_models_share_one_context(ctx, tmp_path):
    from tests.leaks import TRACKER

    instances = len(TRACKER.live["VkInstance"])
    path = asset("AnimatedMorphCube", "AnimatedMorphCube.gltf")
    a = vkmorph.open(path, ctx=ctx)
    b = vkmorph.open(path, ctx=ctx)
    try:
        assert a.ctx is ctx and b.ctx is ctx and len(TRACKER.live["VkInstance"]) == instances
        pa = a.pose(weights={"target_1": 1.0})
        pb = b.pose(weights={"target_1": 1.0})
        np.testing.assert_array_equal(pa[0].positions, pb[0].positions)
        a.close()
        assert not ctx.destroyed                    # a shared context outlives the model
        np.testing.assert_array_equal(b.pose(weights={"target_1": 1.0})[0].positions, pa[0].positions)
    finally:
        a.close()
        b.close()
    assert not ctx.destroyed and ctx.live_children == []
    with pytest.raises(vkmorph.UsageError, match="validation= and device="):
        vkmorph.open(path, ctx=ctx, validation=True)
    with pytest.raises(vkmorph.UsageError, match="must be a vkmorph.gpu.context.Context"):
        vkmorph.open(path, ctx=object())
    from vkmorph.gpu.context import Context

    dead = Context.create(validation=False)
    dead.destroy()
    with pytest.raises(vkmorph.UsageError, match="was destroyed"):
        vkmorph.open(path, ctx=dead)
    with pytest.raises(TypeError):
        vkmorph.api.Model(path, ctx)                # options are keyword-only


def test_zero_normals_of_a_collapsed_part_still_validate(tmp_path):
    """A node scaled to zero gives zero normals (Model.pose's documented behaviour); glTF needs unit normals."""
    from vkmorph.export import export

    pos = np.array([[[0, 0, 0], [1, 0, 0], [0, 1, 0]]] * 2, np.float32)
    nrm = np.zeros_like(pos)
    nrm[:, 0] = (0, 0, 2)                         # one not unit, two zero
    export(tmp_path / "z.glb", [("part", pos, nrm, np.array([0, 1, 2], np.uint32))], [0.0, 1.0])
    assert_valid(tmp_path / "z.glb")
