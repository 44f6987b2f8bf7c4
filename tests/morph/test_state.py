from __future__ import annotations

import numpy as np
import pytest

from tests.gltf_ref import Gltf
from tests.gltf_write import GltfWriter, grid
from tests.helpers import asset
from vkmorph import AssetError, UsageError, load_scene
from vkmorph.asset.model import MorphWeightChannel
from vkmorph.morph.gpu_data import build_gpu_morph_data
from vkmorph.morph.reference import morph_reference
from vkmorph.morph.state import AppliedVersions, SceneMorphPose, WeightClampedWarning, file_weight_range


def face_file(tmp_path, names=("JawOpen", "Smile", "JawSmileFix", "SmileHalf"), default=(0.0, -0.5, 0.0, 0.0),
              anim_max=1.5):
    """A small sheet with four targets, negative default weight, and an animation reaching ``anim_max``."""
    pos, idx = grid(5)
    rng = np.random.default_rng(3)
    w = GltfWriter()
    w.mesh(pos, idx, targets=[rng.normal(0, 0.1, pos.shape) for _ in range(4)], weights=default,
           target_names=list(names) if names else None)
    w.node("Face", mesh=0)
    w.animation("talk", [(0, "weights", [0.0, 1.0], [[0, 0, 0, 0], [anim_max, 0.2, 0, 0]], "LINEAR")])
    return load_scene(w.save(tmp_path / "face.gltf"))


def test_version_moves_only_on_real_change():
    """``version`` and the node's entry of ``node_versions`` move together, on a real change only; reading them
    changes nothing (any number of readers compare against what they applied)."""
    scene = load_scene()
    pose = SceneMorphPose(scene)
    nodes = pose.morph_nodes
    red = scene.node_index("Red")
    assert len(nodes) == 2 and pose.version == 0 and not pose.node_versions.any()
    assert not pose.set_weights(nodes[0], [0.0, 0.0]) and pose.version == 0
    assert pose.set_weights("Red", [0.25, 1.0]) and pose.version == 1
    assert not pose.set_weights("Red", [0.25, 1.0]) and pose.version == 1
    assert pose.node_versions[red] == 1 and [pose.node_versions[n] for n in nodes].count(0) == 1
    assert pose.set_flat(np.full(len(pose.flat), 0.5)) == 2 and pose.version == 2
    assert all(pose.node_versions[n] == 2 for n in nodes)
    half = pose.flat.copy()
    half[pose.slice_of("Red")] = 0.75
    assert pose.set_flat(half) == 1 and pose.node_versions[red] == 3
    assert [pose.node_versions[n] for n in nodes if n != red] == [2]
    pose.mark_changed("Red")
    assert pose.version == 4 and pose.node_versions[red] == 4
    with pytest.raises(UsageError):
        pose.set_weights("Red", [1.0])
    with pytest.raises(UsageError, match="no morph targets"):
        pose.set_weights("Blue", [1.0, 0.0])
    with pytest.raises(ValueError):
        pose.weights("Red")[0] = 1.0  # read-only view: edits must go through set_weight(s)
    with pytest.raises(ValueError):
        pose.flat[0] = 0.9            # the flat weights too: a write there would bypass every version
    with pytest.raises(ValueError):
        pose.node_versions[red] = 0
    assert pose.version == 4 and pose.flat[pose.slice_of("Red")][0] == 0.75


def test_every_consumer_sees_every_change_once():
    """Two consumers (e.g. two output slots, or the runtime and a host's cache) track the same pose: reading
    never hides a change from the other (the old take_dirty() emptied one shared set on read)."""
    scene = load_scene()
    pose = SceneMorphPose(scene)
    nodes = pose.morph_nodes
    a, b = AppliedVersions(nodes), AppliedVersions(nodes)
    idx, cur = a.changed(0, pose.node_versions)
    assert idx.tolist() == [0, 1] and not a.up_to_date(0, pose.version)
    a.applied(0, pose.version, idx, cur)
    assert a.up_to_date(0, pose.version) and not len(a.changed(0, pose.node_versions)[0])
    pose.set_weights(nodes[1], [0.3, 0.0])
    for _ in range(2):                       # reading twice gives the same answer: no side effects
        assert a.changed(0, pose.node_versions)[0].tolist() == [1]
        assert b.changed(0, pose.node_versions)[0].tolist() == [0, 1]
    idx, cur = a.changed(0, pose.node_versions)
    a.applied(0, pose.version, idx, cur)
    assert b.changed(0, pose.node_versions)[0].tolist() == [0, 1] and a.up_to_date(0, pose.version)


def test_weight_range_comes_from_the_file(tmp_path):
    assert file_weight_range(load_scene()) == (0.0, 1.0)
    scene = face_file(tmp_path)
    pose = SceneMorphPose(scene)
    assert pose.weight_range == pytest.approx((-0.5, 1.5))
    np.testing.assert_allclose(pose.weights("Face"), [0.0, -0.5, 0.0, 0.0])   # negative default kept
    assert pose.set_weights("Face", [1.5, -0.5, 0.0, 0.3])                   # any finite weight in range
    assert file_weight_range(scene, [-3.0, 0.2]) == pytest.approx((-3.0, 1.5))


def test_cubicspline_range_includes_the_hermite_overshoot():
    from vkmorph.anim.sampler import sample

    times = np.array([0.0, 1.0])
    values = np.array([[0.0], [0.0], [-5.0], [-5.0], [1.0], [0.0]])   # tangents against the rise: undershoot
    scene = load_scene()
    scene.animations[0].morph_channels = [MorphWeightChannel(0, times, values, "CUBICSPLINE")]
    lo, hi = file_weight_range(scene)
    curve = [float(sample(times, values, t, "CUBICSPLINE")[0]) for t in np.linspace(0, 1, 201)]
    assert min(curve) < -0.3 and lo <= min(curve) and hi >= max(curve)


def test_out_of_range_is_an_error_or_a_clamp_that_says_so(tmp_path):
    pose = SceneMorphPose(load_scene())
    with pytest.raises(UsageError, match=r"node 'Red'.*2 for target 1 'Pinch' is outside the weight range \[0, 1\]"):
        pose.set_weights("Red", [0.5, 2.0])
    with pytest.raises(UsageError, match="outside the weight range"):
        pose.set_flat(np.full(len(pose.flat), -1.0))
    with pytest.raises(UsageError, match="not finite"):
        pose.set_weight("Red", "Bulge", float("nan"))
    assert pose.version == 0
    clamping = SceneMorphPose(load_scene(), clamp=True)
    with pytest.warns(WeightClampedWarning, match="clamped to 1"):
        clamping.set_weights("Red", [0.5, 2.0])
    np.testing.assert_array_equal(clamping.weights("Red"), [0.5, 1.0])
    wide = SceneMorphPose(load_scene(), weight_range=(-2.0, 3.0))
    wide.set_weights("Red", [-2.0, 3.0])
    np.testing.assert_array_equal(wide.weights("Red"), [-2.0, 3.0])
    with pytest.raises(UsageError, match="low <= high"):
        SceneMorphPose(load_scene(), weight_range=(1.0, 0.0))


def test_bounds_follow_the_range(tmp_path):
    scene = face_file(tmp_path)
    pose = SceneMorphPose(scene)
    prim = scene.primitives[0]
    data = build_gpu_morph_data(prim, pose.weight_range)
    narrow = build_gpu_morph_data(prim, (0.0, 1.0))
    rng = np.random.default_rng(0)
    lo, hi = pose.weight_range
    outside_narrow = False
    for _ in range(200):
        w = rng.choice([lo, hi, 0.0], size=4)
        p, _, _ = morph_reference(prim, w)
        assert (p >= data.conservative_bounds[0] - 1e-5).all() and (p <= data.conservative_bounds[1] + 1e-5).all()
        outside_narrow |= bool((p < narrow.conservative_bounds[0] - 1e-5).any()
                               or (p > narrow.conservative_bounds[1] + 1e-5).any())
    assert outside_narrow   # the [0, 1] bounds would not have contained these poses


def test_targets_by_name(tmp_path):
    scene = face_file(tmp_path)
    pose = SceneMorphPose(scene)
    assert pose.set_weight("Face", "Smile", 0.7) and pose.weights("Face")[1] == pytest.approx(0.7)
    assert pose.set_weights("Face", {"JawOpen": 0.25, 3: 0.5})
    np.testing.assert_allclose(pose.weights("Face"), [0.25, 0.7, 0.0, 0.5])
    assert not pose.set_weights("Face", {"JawOpen": 0.25})
    with pytest.raises(UsageError, match=r"no target 'MouthOpen'; its targets are 'JawOpen', 'Smile', "):
        pose.set_weight("Face", "MouthOpen", 0.7)
    with pytest.raises(UsageError, match="out of range"):
        pose.set_weight("Face", 4, 0.1)
    assert pose.target_names("Face")[0] == "JawOpen" and pose.generated_names("Face") == [False] * 4


def test_unnamed_targets_get_generated_names_and_duplicates_are_reported(tmp_path):
    pose = SceneMorphPose(face_file(tmp_path, names=None, default=(0, 0, 0, 0)))
    names = pose.target_names("Face")
    assert len(set(names)) == 4 and all(pose.generated_names("Face"))
    pose.set_weight("Face", names[2], 0.5)
    assert pose.weights("Face")[2] == 0.5
    dup_dir = tmp_path / "dup"
    dup_dir.mkdir()
    dup = SceneMorphPose(face_file(dup_dir, names=("A", "B", "A", "C")))
    assert dup.duplicate_names("Face") == {"A": [0, 2]}
    with pytest.raises(UsageError, match=r"'A' is used by targets \[0, 2\]; use the index"):
        dup.set_weight("Face", "A", 0.5)
    dup.set_weight("Face", 2, 0.5)


def effective_weights(user: np.ndarray, inbetween_curve) -> np.ndarray:
    """Independent evaluation: target 2 = w0 * w1 (corrective), target 3 = curve(w1) (in-between)."""
    w = np.array(user, np.float64)
    w[2] = w[0] * w[1]
    xs, ys = zip(*inbetween_curve)
    x = w[1]
    if x <= xs[0]:
        w[3] = ys[0]
    elif x >= xs[-1]:
        w[3] = ys[-1]
    else:
        k = max(i for i in range(len(xs)) if xs[i] <= x)
        w[3] = ys[k] + (ys[k + 1] - ys[k]) * (x - xs[k]) / (xs[k + 1] - xs[k])
    return w


CURVE = [(0.0, 0.0), (0.5, 1.0), (1.0, 0.0)]


def test_correctives_and_inbetweens_vs_numpy(tmp_path):
    scene = face_file(tmp_path, default=(0, 0, 0, 0), anim_max=1.0)
    pose = SceneMorphPose(scene)
    pose.add_corrective("Face", "JawSmileFix", drivers=["JawOpen", "Smile"])
    pose.add_inbetween("Face", "SmileHalf", "Smile", curve=CURVE)
    rng = np.random.default_rng(5)
    prim = scene.primitives[0]
    for _ in range(20):
        user = rng.random(4)
        pose.set_weights("Face", user)              # entries of driven targets are ignored
        expected = effective_weights(user, CURVE)
        np.testing.assert_allclose(pose.weights("Face"), expected, atol=1e-6)
        p, _, _ = morph_reference(prim, pose.weights("Face"))
        dense = prim.vertices["position"] + sum(e * t.position_deltas for e, t in zip(expected, prim.morph_targets))
        np.testing.assert_allclose(p, dense, atol=1e-5)
    v = pose.version
    pose.set_weight("Face", "Smile", 0.25)
    assert pose.version == v + 1
    np.testing.assert_allclose(pose.weights("Face")[2:], [pose.weights("Face")[0] * 0.25, 0.5], atol=1e-6)
    flat = pose.flat.copy()
    flat[pose.slice_of("Face")][:2] = [1.0, 0.75]
    assert pose.set_flat(flat) == 1
    np.testing.assert_allclose(pose.weights("Face")[2:], [0.75, 0.5], atol=1e-6)
    with pytest.raises(UsageError, match="driven by a corrective"):
        pose.set_weight("Face", "JawSmileFix", 0.5)
    with pytest.raises(UsageError, match="distinct drivers"):
        pose.add_corrective("Face", "JawOpen", drivers=["JawOpen"])
    with pytest.raises(UsageError, match="increasing"):
        pose.add_inbetween("Face", "JawOpen", "Smile", curve=[(0.5, 0), (0.5, 1)])
    wide = SceneMorphPose(scene, weight_range=(0.0, 2.0))
    with pytest.raises(UsageError, match="wider weight_range"):
        wide.add_corrective("Face", "JawSmileFix", drivers=["JawOpen", "Smile"])


@pytest.mark.gpu
def test_gpu_pass_applies_correctives_in_one_pass(ctx, tmp_path):
    from vkmorph.render.morph_pass import MorphRuntime

    scene = face_file(tmp_path, default=(0, 0, 0, 0), anim_max=1.0)
    prim = scene.primitives[0]
    with MorphRuntime(ctx, scene) as rt:
        rt.pose.add_corrective("Face", 2, drivers=[0, 1])
        rt.pose.add_inbetween("Face", 3, 1, curve=CURVE)
        user = np.array([0.8, 0.3, 0.0, 0.0])
        rt.set_weights("Face", user)
        rt.set_weight("Face", "JawOpen", 0.9)
        user[0] = 0.9
        counters = ctx.submit_and_wait(rt.record)
        assert counters is None or counters.dispatch_calls == 1
        out = rt.read_vertices(rt.morphing[0])
        expected = effective_weights(user, CURVE)
        dense = prim.vertices["position"] + sum(e * t.position_deltas for e, t in zip(expected, prim.morph_targets))
        np.testing.assert_allclose(out["position"], dense, atol=1e-5)


@pytest.mark.gpu
def test_lost_updates_cannot_happen(ctx):
    """The issue's two reproductions. (1) ``rt.pose.flat[0] = 0.9`` then record(): the write used to land in the
    weights without moving a version, so record() skipped the pose and the GPU never saw it; now the write is
    refused and the GPU output always equals the reference at the pose's weights. (2) Another reader of the pose
    (the old ``take_dirty()``) made the next record() dispatch nothing, for good; now readers have no side effect,
    so a change reaches the GPU whatever else reads the pose."""
    from vkmorph.render.morph_pass import MorphRuntime

    scene = load_scene()
    with MorphRuntime(ctx, scene) as rt:
        ctx.submit_and_wait(rt.record)
        refused = False
        try:
            rt.pose.flat[0] = 0.9
        except ValueError:
            refused = True
        ctx.submit_and_wait(rt.record)

        def assert_gpu_matches_pose():
            for inst in rt.morphing:
                w = rt.pose.flat[rt.pose.slice_of(inst.node)][: inst.target_count].astype(np.float64)
                p, _, _ = morph_reference(inst.prim, w)
                assert np.abs(rt.read_vertices(inst)["position"] - p).max() < 1e-5

        assert_gpu_matches_pose()
        assert refused
        node = rt.pose.morph_nodes[0]
        rt.set_weights(node, [0.6, 0.2])
        reader = getattr(rt.pose, "take_dirty", None)     # a second consumer reading the pose first
        if reader is not None:
            reader()
        AppliedVersions(rt.pose.morph_nodes).changed(0, rt.pose.node_versions)
        ctx.submit_and_wait(rt.record)
        assert rt.last_counters.dispatched == 1
        assert_gpu_matches_pose()


def test_an_unknown_node_lists_the_nodes_with_morph_targets_in_file_order():
    """Not all nodes alphabetically (RobotExpressive has 60; 'Body' sorted first and has no targets): the nodes
    whose mesh has targets, in the file's order, read from the file's own JSON."""
    path = asset("RobotExpressive", "RobotExpressive.glb")
    doc = Gltf(path).json
    morphing = [n["name"] for n in doc["nodes"]
                if "mesh" in n and any("targets" in p for p in doc["meshes"][n["mesh"]]["primitives"])]
    expected = ", ".join(repr(n) for n in dict.fromkeys(morphing))
    pose = SceneMorphPose(load_scene(path))
    with pytest.raises(UsageError) as e:
        pose.set_weight("NoSuchNode", 0, 1.0)
    assert str(e.value) == f"no node named 'NoSuchNode'; the nodes with morph targets are {expected}"
    with pytest.raises(UsageError) as e:
        pose.set_weight("Hips", 0, 1.0)
    assert str(e.value).endswith(f"has no morph targets; the nodes with morph targets are {expected}")


def test_an_unknown_node_in_a_file_without_targets_says_so(tmp_path):
    pos, idx = grid(3)
    w = GltfWriter()
    w.mesh(pos, idx)
    w.node("Plain", mesh=0)
    pose = SceneMorphPose(load_scene(w.save(tmp_path / "plain.gltf")))
    with pytest.raises(UsageError, match="^no node named 'Nope'; no node has morph targets$"):
        pose.set_weight("Nope", 0, 1.0)


def test_long_names_are_abridged_in_messages(tmp_path):
    long = "Head_" + "x" * 300 + "_end"
    pose = SceneMorphPose(face_file(tmp_path))
    with pytest.raises(UsageError) as e:
        pose.set_weight(long, 0, 1.0)
    msg = str(e.value)
    assert f"no node named {(long[:40] + '…' + long[-20:])!r} ({len(long)} characters);" in msg, msg
    assert len(msg) < 200, msg
    with pytest.raises(UsageError) as e:
        pose.set_weight("Face", long, 1.0)
    assert f"({len(long)} characters)" in str(e.value) and "x" * 41 not in str(e.value)
    with pytest.raises(UsageError) as e:
        pose.scene.clip(long)
    assert str(e.value).startswith(f"unknown clip {(long[:40] + '…' + long[-20:])!r} ({len(long)} characters); "
                                   "the file has 'talk'"), str(e.value)
    # a clip object: this scene's own is accepted; another scene's is named; anything else is its type and start
    talk = pose.scene.clip("talk")
    assert pose.scene.clip(talk) is talk
    other = SceneMorphPose(face_file(tmp_path)).scene.clip("talk")
    with pytest.raises(UsageError, match=r"^clip 'talk' is not one of this file's animations \(pass its name\)$"):
        pose.scene.clip(other)
    for odd in ("--1", "²", "1_0"):                               # not integers, so names: unknown ones
        with pytest.raises(UsageError, match=f"^unknown clip {odd!r}; the file has 'talk'$"):
            pose.scene.clip(odd)
    assert pose.scene.clip("0") is talk and pose.scene.clip(0) is talk
    with pytest.raises(UsageError) as e:
        pose.scene.clip(np.arange(10_000.0))
    assert str(e.value).startswith("unknown clip ndarray array([") and len(str(e.value)) < 200, str(e.value)
    err = AssetError("bad", file="f.gltf", mesh=long, target=long)
    assert str(err).count(f"({len(long)} characters)") == 2 and "x" * 41 not in str(err)
