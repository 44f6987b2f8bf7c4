"""The GPU morph pass under validation + synchronization validation: results equal the numpy reference."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset, random_prim
from vkmorph import load_scene
from vkmorph.anim.player import AnimationPlayer
from vkmorph.asset.model import SKINNED_VERTEX, MeshAsset, NodeAsset, SceneAsset, SkinAsset
from vkmorph.morph.reference import morph_reference

pytestmark = pytest.mark.gpu


def scene_of(prims, skinned=False) -> SceneAsset:
    nodes, meshes = [], []
    for i, p in enumerate(prims):
        if skinned:
            v = np.zeros(len(p.vertices), SKINNED_VERTEX)
            for f in p.vertices.dtype.names:
                v[f] = p.vertices[f]
            rng = np.random.default_rng(i)
            v["joints"] = rng.integers(0, 3, (len(v), 4))
            w = rng.random((len(v), 4))
            v["weights"] = w / w.sum(axis=1, keepdims=True)
            p.vertices, p.skin = v, 0
        meshes.append(MeshAsset(f"m{i}", [p]))
        nodes.append(NodeAsset(f"n{i}", mesh=i, skin=0 if skinned else None))
    skins = [SkinAsset(np.array([0, 0, 0]), np.stack([np.eye(4)] * 3))] if skinned else []
    return SceneAsset(nodes=nodes, meshes=meshes, skins=skins, animations=[], roots=list(range(len(nodes))))


def orthogonalized(n, t, base_t):
    """Gram-Schmidt of the tangent against the morphed normal, as the kernel does (idempotent, so it also holds
    when morph_reference already applies it): t' = normalize(t - n dot(n, t)), base tangent when degenerate."""
    t3 = t[:, :3].astype(np.float64)
    t3 = t3 - n * np.sum(n * t3, axis=1, keepdims=True)
    len2 = np.sum(t3 * t3, axis=1, keepdims=True)
    ok = len2 > 1e-12
    t3 = np.where(ok, t3 / np.sqrt(np.where(ok, len2, 1.0)), base_t[:, :3])
    return np.concatenate([t3, t[:, 3:4]], axis=1).astype(np.float32), np.sqrt(len2[:, 0])


def expected(prim, weights):
    """Positions, normals, tangents and the tangent's conditioning: |t - n dot(n, t)| for a unit t is the sine
    of the angle between them, and float32 rounding in the kernel grows like 1 / sine near parallel."""
    p, n, t = morph_reference(prim, weights)
    t, sine = orthogonalized(n.astype(np.float64), t, prim.vertices["tangent"])
    return p, n, t, sine


def check(rt, inst, weights):
    out = rt.read_vertices(inst)
    p, n, t, sine = expected(inst.prim, weights)
    size = float(np.ptp(inst.prim.vertices["position"], axis=0).max()) or 1.0
    assert np.abs(out["position"] - p).max() <= 1e-5 * size
    assert np.abs(out["normal"] - n).max() <= 1e-5
    assert (np.abs(out["tangent"] - t).max(axis=1) <= 1e-5 / np.clip(sine, 1e-3, 1.0)).all()
    untouched = [f for f in out.dtype.names if f not in ("position", "normal", "tangent")]
    for f in untouched:
        assert out[f].tobytes() == inst.prim.vertices[f].tobytes(), f
    assert out["tangent"][:, 3].tobytes() == inst.prim.vertices["tangent"][:, 3].tobytes()


@pytest.fixture(params=["auto", "workgroup", "per-vertex"])
def kernel(request, ctx):
    """Both morph kernels on whatever device runs the tests (``MorphRuntime(kernel=)``): the one chosen for the
    device, the workgroup (shared-memory compaction) kernel GPUs use, and the per-vertex-list kernel CPU devices
    use."""
    from vkmorph.render import morph_batch

    if request.param == "workgroup" and not morph_batch.subgroup_ballot_in_compute(ctx):
        pytest.skip("the workgroup kernel needs subgroup ballots in compute")
    return request.param


def test_kernel_choice(ctx):
    """CPU devices get the per-vertex kernel; GPUs with subgroup ballots in compute the workgroup kernel, unless
    the batch's blocks are sparse (mean block fill below VERTEX_KERNEL_BELOW_FILL): then the per-vertex one."""
    from types import SimpleNamespace

    from vkmorph.render import morph_batch as mb

    ballot = mb.subgroup_ballot_in_compute(ctx)
    assert ballot in (True, False)
    gpu = ctx.info.device_type != "cpu" and ballot
    for fmt in ("full", "compact"):
        assert mb.kernel_for(ctx, fmt) is (mb.SHADERS if gpu else mb.CPU_SHADERS)[fmt]
    thr = mb.VERTEX_KERNEL_BELOW_FILL
    for device, has_ballot in (("discrete", True), ("integrated", True), ("discrete", False), ("cpu", True)):
        fake = SimpleNamespace(info=SimpleNamespace(device_type=device))
        real = mb.subgroup_ballot_in_compute
        mb.subgroup_ballot_in_compute = lambda _ctx, b=has_ballot: b
        try:
            workgroup = device != "cpu" and has_ballot
            for fmt in ("full", "compact"):
                assert mb.kernel_for(fake, fmt, thr) is (mb.SHADERS if workgroup else mb.CPU_SHADERS)[fmt]
                assert mb.kernel_for(fake, fmt, 1.0) is (mb.SHADERS if workgroup else mb.CPU_SHADERS)[fmt]
                assert mb.kernel_for(fake, fmt, thr * 0.99) is mb.CPU_SHADERS[fmt]
        finally:
            mb.subgroup_ballot_in_compute = real


def test_runtime_kernel_follows_block_fill(ctx, monkeypatch):
    """On a GPU (this device presented as one), the runtime measures its batch's block fill (against a count
    from the CSR form) and builds the layout of the kernel that fill picks: sparse random targets -> per-vertex
    records, dense regions -> the block table; both morph exactly (numpy reference)."""
    from vkmorph.morph.gpu_data import CHUNK, build_gpu_morph_data
    from vkmorph.render import morph_batch as mb
    from vkmorph.render.morph_pass import MorphRuntime

    if not mb.subgroup_ballot_in_compute(ctx):
        pytest.skip("the workgroup kernel needs subgroup ballots in compute")
    monkeypatch.setattr(ctx.info, "device_type", "discrete")
    rng = np.random.default_rng(3)
    sparse = random_prim(rng, 2000, 6, 0.05)
    dense = random_prim(rng, 1024, 3, 0.0)
    for t in dense.morph_targets:          # each target moves whole chunks
        t.position_deltas[:] = 0.0
        t.position_deltas[:512] = rng.normal(0, 0.1, (512, 3))
    for prim, family in ((sparse, "per-vertex"), (dense, "workgroup")):
        csr = build_gpu_morph_data(prim)
        vert = np.repeat(np.arange(prim.vertex_count), np.diff(csr.vertex_offsets.astype(np.int64)))
        blocks = len(np.unique(vert // CHUNK * 1000 + csr.deltas["metadata"][:, 0]))
        with MorphRuntime(ctx, scene_of([prim], False)) as rt:
            assert rt.batch.block_fill == pytest.approx(len(csr.deltas) / (blocks * CHUNK))
            lists = "vertex_records" in rt.batch.buffers
            assert (rt.batch.kernel is mb.CPU_SHADERS["full"]) == lists == (family == "per-vertex")
            w = np.linspace(0.2, 0.9, len(prim.morph_targets))
            rt.set_weights(rt.morphing[0].node, w)
            ctx.submit_and_wait(rt.record)
            check(rt, rt.morphing[0], w)


@pytest.mark.parametrize("skinned", [False, True], ids=["static", "skinned"])
def test_random_sparse_meshes_match_reference(ctx, skinned, kernel):
    from vkmorph.render.morph_pass import MorphRuntime

    rng = np.random.default_rng(7)
    prims = [random_prim(rng, 1, 3, 1.0), random_prim(rng, 130, 5, 0.3),
             random_prim(rng, 517, 256, 0.02), random_prim(rng, 64, 4, 0.0)]
    scene = scene_of(prims, skinned)
    with MorphRuntime(ctx, scene, kernel=kernel) as rt:
        for _trial in range(2):
            ws = {}
            for inst in rt.morphing:
                w = rng.random(inst.target_count)
                w[rng.random(len(w)) < 0.5] = 0.0
                ws[inst.node] = w
                rt.set_weights(inst.node, w)
            ctx.submit_and_wait(rt.record)
            for inst in rt.morphing:
                check(rt, inst, ws[inst.node])


MORPH_ASSETS = [("SimpleMorph", "SimpleMorph.gltf"), ("AnimatedMorphCube", "AnimatedMorphCube.gltf"),
                ("MorphPrimitivesTest", "MorphPrimitivesTest.gltf"), ("MorphStressTest", "MorphStressTest.gltf"),
                ("RobotExpressive", "RobotExpressive.glb")]


@pytest.mark.parametrize("folder,name", MORPH_ASSETS, ids=[n for _, n in MORPH_ASSETS])
def test_assets_match_reference_at_weights_and_times(ctx, folder, name):
    from vkmorph.render.morph_pass import MorphRuntime

    scene = load_scene(asset(folder, name))
    rng = np.random.default_rng(1)
    with MorphRuntime(ctx, scene) as rt:
        for _trial in range(2):
            for node in rt.pose.morph_nodes:
                rt.set_weights(node, rng.random(len(rt.pose.weights(node))))
            ctx.submit_and_wait(rt.record)
            for inst in rt.morphing:
                check(rt, inst, rt.pose.weights(inst.node)[: inst.target_count])
        if scene.animations:
            player = AnimationPlayer(scene, rt.pose)
            clip = scene.animations[-1]
            player.clip = clip
            for t in (0.1, clip.duration * 0.6):
                player.apply(t)
                ctx.submit_and_wait(rt.record)
                for inst in rt.morphing:
                    check(rt, inst, rt.pose.weights(inst.node)[: inst.target_count])


def test_version_gating_counters(ctx):
    from vkmorph.render.morph_pass import MorphRuntime

    scene = load_scene()  # red (morph), blue (skin only), purple (both)
    with MorphRuntime(ctx, scene) as rt:
        assert len(rt.morphing) == 2
        c = []
        ctx.submit_and_wait(lambda cb: c.append(rt.record(cb)))
        assert c[-1].dispatched == 2 and c[-1].barriers == 3
        ctx.submit_and_wait(lambda cb: c.append(rt.record(cb)))
        assert (c[-1].dispatched, c[-1].bytes_uploaded, c[-1].barriers, c[-1].pose_skipped) == (0, 0, 0, True)
        rt.set_weights("Red", [0.5, 0.25])
        ctx.submit_and_wait(lambda cb: c.append(rt.record(cb)))
        bits = 4 if "active_bits" in rt.gpu_bytes else 0     # per-vertex kernel: + the slots' active-bit word
        assert (c[-1].dispatched, c[-1].skipped, c[-1].bytes_uploaded) == (1, 1, 8 + bits)
        rt.set_weights("Red", [0.5, 0.25])  # same values: no version change, nothing recorded
        ctx.submit_and_wait(lambda cb: c.append(rt.record(cb)))
        assert c[-1].dispatched == 0 and c[-1].pose_skipped
        red = rt.instance("Red")
        check(rt, red, [0.5, 0.25])


def test_frames_in_flight_without_waiting(ctx):
    """Weights change every frame; frames are submitted back to back with no host wait in between."""
    from vkmorph.gpu import barriers
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.vk import vk
    from vkmorph.render.morph_pass import MorphRuntime

    scene = load_scene()
    frames = 3
    with MorphRuntime(ctx, scene) as rt:
        red = rt.instance("Red")
        sink = M.device_buffer(ctx, None, M.STORAGE, size=red.vertex_bytes)
        cbs = [ctx.allocate_command_buffer() for _ in range(frames)]
        fences = [vk.vkCreateFence(ctx.device, vk.VkFenceCreateInfo(), None) for _ in range(frames)]
        weights = None
        for f in range(9):
            i = f % frames
            if f >= frames:
                ctx.wait_fence(fences[i])  # only the frame that used this command buffer
            weights = [((f * 0.37) % 1.0), ((f * 0.61) % 1.0)]
            rt.set_weights("Red", weights)
            cb = cbs[i]
            vk.vkResetCommandBuffer(cb, 0)
            ctx.begin(cb)
            counters = rt.record(cb)
            assert counters.dispatched == (2 if f == 0 else 1)  # frame 0 also morphs Purple once
            # a consumer reading the morph output this frame (stands in for the vertex fetch of a draw)
            barriers.record(cb, barriers.COMPUTE_TO_TRANSFER)
            vk.vkCmdCopyBuffer(cb, red.vertex_buffer.handle, sink.handle, 1,
                               [vk.VkBufferCopy(srcOffset=red.vertex_offset, dstOffset=0, size=red.vertex_bytes)])
            ctx.end(cb)
            ctx.submit([cb], fence=fences[i])
        ctx.wait_idle()
        for fe in fences:
            vk.vkDestroyFence(ctx.device, fe, None)
        for cb in cbs:
            ctx.free_command_buffer(cb)
        sink.destroy()
        check(rt, red, weights)


def _random_scene_weights(rt, rng):
    ws = {}
    for node in rt.pose.morph_nodes:
        w = rng.random(len(rt.pose.weights(node)))
        w[rng.random(len(w)) < 0.4] = 0.0
        rt.set_weights(node, w)
        ws[node] = rt.pose.weights(node).copy()
    return ws


def test_output_slots_catch_up_on_what_changed_since_they_were_written(ctx):
    """Each output slot redoes exactly the primitives changed since it was last written: everything after a
    set_flat that changed every node, the union of the partial changes otherwise; every slot ends up exact."""
    from vkmorph.render.morph_pass import MorphRuntime

    rng = np.random.default_rng(4)
    prims = [random_prim(rng, 40 + 30 * k, 3, 0.5) for k in range(3)]
    with MorphRuntime(ctx, scene_of(prims), slots=2) as rt:
        nodes = rt.pose.morph_nodes

        def frame(slot):
            ctx.submit_and_wait(lambda cb: rt.record(cb, slot=slot))
            return rt.last_counters.dispatched

        assert frame(0) == 3                                   # first write of each slot: everything
        rt.pose.set_flat(rng.random(len(rt.pose.flat)))       # every node changed
        assert frame(1) == 3
        rt.set_weights(nodes[0], [0.1, 0.2, 0.3])
        assert frame(0) == 3                                   # slot 0 missed the set_flat: all again
        rt.set_weights(nodes[1], [0.4, 0.0, 0.5])
        assert frame(1) == 2                                   # slot 1: node 0 (missed) + node 1
        assert frame(0) == 1                                   # slot 0: node 1 only
        flat = rt.pose.flat.copy()
        flat[rt.pose.slice_of(nodes[2])] = 0.25                # set_flat changing one node: one primitive
        rt.pose.set_flat(flat)
        assert frame(1) == 1
        assert frame(0) == 1
        for k in range(2):
            for inst in rt.morphing:
                w = rt.pose.weights(inst.node)[: inst.target_count]
                p, _, _ = morph_reference(inst.prim, w.astype(np.float64))
                assert np.abs(rt.read_vertices(inst.node, slot=k)["position"] - p).max() < 1e-5


def test_changed_primitives_dispatch_their_merged_ranges_whatever_their_number(ctx, kernel):
    """k changed primitives of N dispatch exactly their chunks, adjacent ones merged into one range, for any k
    (the old code dispatched everything above 4): the counters say what was recorded, every output slot ends up
    exact against the numpy reference under synchronization validation, and unchanged ones are not touched."""
    from vkmorph.morph.gpu_data import CHUNK
    from vkmorph.render.morph_pass import MorphRuntime

    rng = np.random.default_rng(11)
    prims = [random_prim(rng, int(rng.integers(1, 700)), int(rng.integers(1, 9)), 0.3) for _ in range(12)]
    chunks = [-(-p.vertex_count // CHUNK) for p in prims]      # chunks of 256 vertices, from the file's data
    with MorphRuntime(ctx, scene_of(prims, skinned=True), slots=2, kernel=kernel) as rt:
        nodes = rt.pose.morph_nodes
        ws = _random_scene_weights(rt, rng)
        for slot in (0, 1):
            ctx.submit_and_wait(lambda cb, s=slot: rt.record(cb, slot=s))
            c = rt.last_counters
            # guard, (transfer -> compute only when the weights went through vkCmdUpdateBuffer), consumer
            barriers_expected = 3 if rt.weight_writes == "transfer" else 2
            assert (c.dispatched, c.dispatch_ranges, c.groups, c.barriers) == (12, 1, sum(chunks), barriers_expected)
        changed = [0, 1, 3, 5, 6, 7, 9, 11]                  # runs [0, 1] [3] [5, 7] [9] [11]: 5 ranges
        for k in changed:
            rt.set_weights(nodes[k], 0.05 + 0.9 * rng.random(rt.morphing[k].target_count))
            ws[nodes[k]] = rt.pose.weights(nodes[k]).copy()
        for slot in (0, 1):
            ctx.submit_and_wait(lambda cb, s=slot: rt.record(cb, slot=s))
            c = rt.last_counters
            assert (c.dispatched, c.skipped, c.dispatch_ranges) == (8, 4, 5)
            assert c.dispatch_calls == 5 and c.groups == sum(chunks[k] for k in changed)
            for inst in rt.morphing:
                out = rt.read_vertices(inst, slot=slot)
                p, _, _, _ = expected(inst.prim, ws[inst.node][: inst.target_count])
                size = float(np.ptp(inst.prim.vertices["position"], axis=0).max()) or 1.0
                assert np.abs(out["position"] - p).max() <= 1e-5 * size
        ctx.submit_and_wait(lambda cb: rt.record(cb, slot=0))
        assert rt.last_counters.pose_skipped and rt.last_counters.groups == 0
        rt.set_weights(nodes[2], np.zeros(rt.morphing[2].target_count))
        ctx.submit_and_wait(rt.record)
        c = rt.last_counters
        assert (c.dispatched, c.dispatch_calls, c.skipped, c.groups) == (1, 1, 11, chunks[2])
        check(rt, rt.morphing[2], np.zeros(rt.morphing[2].target_count))

def test_compact_deltas_within_stated_bound(ctx, kernel):
    """18-byte snorm16 deltas: |error| per position component <= sum(w_t * scale_t) / 65534 (+ float rounding)."""
    from vkmorph.morph.gpu_data import build_gpu_morph_data, target_scales
    from vkmorph.render.morph_pass import MorphRuntime

    rng = np.random.default_rng(5)
    # 90 targets: the workgroup kernel walks each chunk's table in two rounds (ROUND = 64 entries)
    prims = [random_prim(rng, 257, 12, 0.4), random_prim(rng, 64, 3, 1.0), random_prim(rng, 300, 90, 0.3)]
    scene = scene_of(prims)
    with MorphRuntime(ctx, scene, delta_format="compact", kernel=kernel) as rt:
        # 18 bytes per delta: a uvec4 of snorm16 pairs + a 16-bit tangent z (plus the zero delta at index 0)
        D = rt.total_deltas + 1
        assert (rt.gpu_bytes["deltas"], rt.gpu_bytes["deltas_tz"]) == (16 * D, 4 * ((D + 1) // 2))
        if "vertex_records" in rt.gpu_bytes:    # the per-vertex kernel: + first delta and target mask per vertex
            words = sum(inst.prim.vertex_count * (1 + -(-inst.target_count // 32)) for inst in rt.morphing)
            assert rt.gpu_bytes["vertex_records"] == 4 * words
        for _ in range(2):
            ws = _random_scene_weights(rt, rng)
            ctx.submit_and_wait(rt.record)
            for inst in rt.morphing:
                w = ws[inst.node][: inst.target_count].astype(np.float64)
                out = rt.read_vertices(inst)
                p, n, _ = morph_reference(inst.prim, w)
                scales = target_scales(build_gpu_morph_data(inst.prim))
                bound = float(w @ scales[:, 0]) / 65534 + 1e-5
                assert np.abs(out["position"] - p).max() <= bound
                assert np.abs(out["position"] - p).max() > 0  # it really is the quantized path
                assert np.abs(out["normal"] - n).max() <= 1e-2
