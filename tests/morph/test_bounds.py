"""Weight-aware bounds: conservative (contain every deformed vertex of the numpy reference) and tight (each axis
within 1.25x of the true extent) on the shared models, at random weights in the file's range and along clips."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset
from vkmorph import load_scene
from vkmorph.anim.player import AnimationPlayer
from vkmorph.anim.sampler import sample
from vkmorph.anim.skeleton import Skeleton
from vkmorph.asset.model import STATIC_VERTEX, MeshPrimitiveAsset, MorphTargetAsset
from vkmorph.morph.bounds import ClusterBounds, transform_box
from vkmorph.morph.gpu_data import build_gpu_morph_data
from vkmorph.morph.reference import morph_reference, skin_reference
from vkmorph.morph.state import SceneMorphPose, file_weight_range

TIGHT = 1.25
MODELS = [None, ("SimpleMorph", "SimpleMorph.gltf"), ("AnimatedMorphCube", "AnimatedMorphCube.gltf"),
          ("MorphPrimitivesTest", "MorphPrimitivesTest.gltf"), ("MorphStressTest", "MorphStressTest.gltf"),
          ("RobotExpressive", "RobotExpressive.glb")]


def check(prim, bounds, weights):
    p, _, _ = morph_reference(prim, weights)
    true_lo, true_hi = p.min(axis=0).astype(np.float64), p.max(axis=0).astype(np.float64)
    scale = float((true_hi - true_lo).max()) or 1.0
    eps = 1e-5 * scale
    assert (bounds[0] <= true_lo + eps).all() and (bounds[1] >= true_hi - eps).all(), (bounds, true_lo, true_hi)
    assert ((bounds[1] - bounds[0]) <= TIGHT * (true_hi - true_lo) + eps).all(), (bounds, true_lo, true_hi)


def weight_sets(scene, prim_node_targets, rng):
    lo, hi = file_weight_range(scene)
    T = prim_node_targets
    sets = [np.zeros(T), np.ones(T), np.full(T, lo), np.full(T, hi)]
    sets += [rng.uniform(lo, hi, T) for _ in range(8)]
    for clip in scene.animations:
        for ch in clip.morph_channels:
            for t in np.linspace(0, clip.duration, 7):
                sets.append(np.resize(sample(ch.times, ch.values, t, ch.interpolation), T))
    return sets


@pytest.mark.parametrize("model", MODELS, ids=["default"] + [m[0] for m in MODELS[1:]])
def test_conservative_and_tight_on_shared_models(model):
    scene = load_scene(asset(*model) if model else None)
    rng = np.random.default_rng(1)
    prims = [p for p in scene.primitives if p.morph_targets]
    assert prims
    for prim in prims:
        cb = ClusterBounds(prim)
        for w in weight_sets(scene, len(prim.morph_targets), rng):
            check(prim, cb.at(w), w)


SKINNED = [None, ("RobotExpressive", "RobotExpressive.glb"), ("SimpleSkin", "SimpleSkin.gltf"),
           ("assimp_simple_skin", "quad_skin.glb")]


@pytest.mark.parametrize("model", SKINNED, ids=["default"] + [m[0] for m in SKINNED[1:]])
def test_skinned_bounds_conservative_and_tight_along_clips(model):
    scene = load_scene(asset(*model) if model else None)
    skel = Skeleton(scene)
    pose = SceneMorphPose(scene)
    player = AnimationPlayer(scene, pose, skel)
    users = {}
    for i, n in enumerate(scene.nodes):
        if n.mesh is not None:
            for p in scene.meshes[n.mesh].primitives:
                if p.is_skinned:
                    users.setdefault(id(p), (i, p, ClusterBounds(p)))
    assert users
    for clip in scene.animations[:3]:
        player.play(clip.name, loop=False)
        for t in np.linspace(0, clip.duration, 4):
            player.apply(float(t))
            lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
            blo, bhi = lo.copy(), hi.copy()
            for node, prim, cb in users.values():
                w = pose.weights(node)[:len(prim.morph_targets)] if prim.morph_targets else np.zeros(0)
                pos, nrm, tan = morph_reference(prim, w)
                v = prim.vertices
                palette = skel.skin_matrices(prim.skin)
                p, _, _ = skin_reference(pos, nrm, tan, v["joints"], v["weights"], palette)
                b = cb.at(w, palette)
                scale = float(np.ptp(p, axis=0).max()) or 1.0
                assert (b[0] <= p.min(axis=0) + 1e-5 * scale).all() and (b[1] >= p.max(axis=0) - 1e-5 * scale).all()
                lo, hi = np.minimum(lo, p.min(axis=0)), np.maximum(hi, p.max(axis=0))
                blo, bhi = np.minimum(blo, b[0]), np.maximum(bhi, b[1])
            assert ((bhi - blo) <= TIGHT * (hi - lo) + 1e-5 * float((hi - lo).max())).all(), (clip.name, t)


def test_whole_body_pose_targets_frame_the_pose_not_every_pose():
    """Targets that are whole-body poses (a galloping-horse file): the range's conservative bounds are several
    times the shape, the current-weight bounds are tight."""
    rng = np.random.default_rng(2)
    V, T = 2000, 6
    base = rng.normal(0, 0.1, (V, 3)) * [1.0, 0.5, 0.3]
    v = np.zeros(V, STATIC_VERTEX)
    v["position"] = base
    v["normal"] = (0, 0, 1)
    v["tangent"] = (1, 0, 0, 1)
    shifts = [np.array([k - T / 2, 0.3 * k, 0.0]) * 0.8 for k in range(T)]
    targets = [MorphTargetAsset(f"pose{k}", (np.roll(base, 37 * k, axis=0) * 1.1 - base + s).astype(np.float32))
               for k, s in enumerate(shifts)]
    prim = MeshPrimitiveAsset(vertices=v, indices=np.arange(V - V % 3, dtype=np.uint32), morph_targets=targets)
    full = build_gpu_morph_data(prim).conservative_bounds
    cb = ClusterBounds(prim)
    for k in range(T):
        w = np.zeros(T)
        w[k] = 1.0
        check(prim, cb.at(w), w)
        p, _, _ = morph_reference(prim, w)
        assert ((full[1] - full[0]) > 2.5 * np.ptp(p, axis=0)).any()   # what framing used before


def test_transform_box_contains_transformed_points():
    rng = np.random.default_rng(3)
    pts = rng.normal(size=(500, 3))
    m = np.eye(4)
    a = 0.7
    m[:3, :3] = np.array([[np.cos(a), -np.sin(a), 0], [np.sin(a), np.cos(a), 0], [0, 0, 1]]) * [2.0, 0.5, 1.0]
    m[:3, 3] = (1, 2, 3)
    box = transform_box(np.stack([pts.min(axis=0), pts.max(axis=0)]), m)
    q = pts @ m[:3, :3].T + m[:3, 3]
    assert (q >= box[0] - 1e-9).all() and (q <= box[1] + 1e-9).all()


@pytest.mark.gpu
def test_runtime_bounds_contain_the_gpu_output(ctx):
    from vkmorph.render.morph_pass import MorphRuntime

    scene = load_scene()
    with MorphRuntime(ctx, scene) as rt:
        rt.set_weights("Red", [1.0, 0.3])
        ctx.submit_and_wait(rt.record)
        for inst in rt.instances:
            b = rt.bounds(inst.node, inst.prim_index)
            p = rt.read_vertices(inst)["position"]
            assert (p >= b[0] - 1e-5).all() and (p <= b[1] + 1e-5).all()
            assert (b[1] - b[0] <= TIGHT * np.ptp(p, axis=0) + 1e-5).all()
        world = rt.skeleton.world_matrices()
        for inst in rt.instances:      # as drawn: skinned by the runtime's skeleton, or moved by the node
            v = rt.read_vertices(inst)
            if inst.prim.is_skinned:
                p, _, _ = skin_reference(v["position"], v["normal"], v["tangent"], v["joints"], v["weights"],
                                         rt.skeleton.skin_matrices(inst.prim.skin))
            else:
                p = v["position"] @ world[inst.node][:3, :3].T + world[inst.node][:3, 3]
            b = rt.bounds(inst.node, inst.prim_index, space="world")
            assert (p >= b[0] - 1e-5).all() and (p <= b[1] + 1e-5).all()
            assert (b[1] - b[0] <= TIGHT * np.ptp(p, axis=0) + 1e-5).all()
        before = rt.bounds("Red")
        rt.set_weights("Red", [0.0, 0.0])
        assert (rt.bounds("Red")[1] - rt.bounds("Red")[0] < before[1] - before[0] - 0.1).any()  # follows weights

