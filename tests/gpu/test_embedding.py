"""The embedding contract with a host's own device (tests/gpu/rawvk.py: python-vulkan only, validation with
synchronization validation across submissions): no hidden submits or waits, frames in flight with output slots,
a host reading the output in compute, configurable final barrier, destroy in flight, draws(), checks."""

from __future__ import annotations

import inspect
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import vulkan as vk

from tests.helpers import ASSETS, ROOT, asset
from vkmorph import load_scene
from vkmorph.errors import UsageError
from vkmorph.morph.reference import morph_reference

pytestmark = pytest.mark.gpu
VKMORPH = str(ROOT / "vkmorph")
BLOCKING = ("vkQueueSubmit", "vkQueueSubmit2", "vkQueueWaitIdle", "vkDeviceWaitIdle", "vkWaitForFences")


def expect_morph(out: np.ndarray, prim, weights) -> None:
    p, n, t = morph_reference(prim, weights)
    size = float(np.ptp(prim.vertices["position"], axis=0).max()) or 1.0
    assert np.abs(out["position"] - p).max() <= 1e-5 * size
    assert np.abs(out["normal"] - n).max() <= 1e-5
    assert np.abs(out["tangent"] - t).max() <= 1e-5


@pytest.fixture
def calls(monkeypatch):
    """Every submit/wait entry point of the binding, wrapped: records (name, calling file) for each call."""
    seen: list[tuple[str, str]] = []
    for name in BLOCKING:
        real = getattr(vk, name, None)
        if real is None:
            continue

        def wrapper(*a, _real=real, _name=name, **k):
            seen.append((_name, inspect.stack()[1].filename))
            return _real(*a, **k)

        monkeypatch.setattr(vk, name, wrapper)
    return seen


def test_borrowed_context_never_submits_or_waits(user_device, calls):
    """Build, record frames, read back, destroy in flight, destroy the context: every queue submission and wait
    comes from the host's own code; vkmorph only records into the host's command buffers."""
    from vkmorph.render.morph_pass import MorphRuntime

    user, ctx = user_device
    rt = MorphRuntime(ctx, load_scene(), slots=2)
    red = rt.instance("Red").prim
    assert ctx.has_pending                    # the first-use uploads wait for the host's command buffer
    in_flight, done = [], []
    for f in range(4):
        w = [(0.3 * f) % 1.0, (0.7 * f + 0.1) % 1.0]
        rt.set_weights("Red", w)
        if len(in_flight) == 2:               # two frames in flight: wait for the one that used this slot
            sub, w_old = in_flight.pop(0)
            user.wait(sub)
            ctx.completed(sub[2].serial)
            done.append((sub[2], w_old))
        sub = user.submit(lambda cb, slot=f % 2: rt.record_readback(
            cb if rt.record(cb, slot=slot, consumer="transfer") else cb, "Red", slot=slot))
        in_flight.append((sub, w))
    rt.destroy()                              # frames still in flight: deferred
    assert ctx.retiring and ctx.live_children
    for sub, w in in_flight:
        user.wait(sub)
        done.append((sub[2], w))
    ctx.completed()
    assert not ctx.retiring
    for readback, w in done:
        expect_morph(readback.vertices(), red, w)
    ctx.destroy()
    assert calls, "the wrappers saw no call at all: the check would prove nothing"
    from_vkmorph = [(n, f) for n, f in calls if f.startswith(VKMORPH)]
    assert from_vkmorph == []
    assert {n for n, _ in calls} >= {"vkQueueSubmit", "vkWaitForFences"}


def test_owned_context_blocking_calls_are_refused_when_borrowed(user_device):
    from vkmorph.gpu import memory as M
    from vkmorph.render.morph_pass import MorphRuntime

    user, ctx = user_device
    assert not ctx.owned
    for call in (lambda: ctx.submit_and_wait(lambda cb: None), ctx.wait_idle, ctx.allocate_command_buffer):
        with pytest.raises(UsageError, match="borrowed"):
            call()
    rt = MorphRuntime(ctx, load_scene())
    with pytest.raises(UsageError, match="record_readback"):
        rt.read_vertices("Red")
    buf = M.device_buffer(ctx, np.zeros(4, np.float32), M.STORAGE)
    with pytest.raises(UsageError, match="borrowed"):
        M.readback(ctx, buf)
    user.run(rt.record)
    with pytest.raises(UsageError, match="completed"):
        ctx.destroy()                         # work recorded, completion not reported: refused, nothing destroyed
    assert ctx.live_children
    buf.destroy()
    rt.destroy()


def test_slots_overlap_frames_and_host_reads_in_compute(user_device):
    """Three frames in flight, three output slots, weights change every frame; the host's own compute pass reads
    each frame's output (consumer="compute") into its own buffer; each equals the numpy morph of that frame."""
    from vkmorph.render.morph_pass import MorphRuntime

    user, ctx = user_device
    scene = load_scene()
    n_slots = 3
    rt = MorphRuntime(ctx, scene, slots=n_slots)
    red = rt.instance("Red")
    sinks = [user.host_buffer(red.vertex_bytes) for _ in range(n_slots)]
    in_flight: dict[int, tuple] = {}
    for f in range(8):
        slot = f % n_slots
        if slot in in_flight:                 # the frames-in-flight rule: wait for this slot's previous frame
            sub, w = in_flight.pop(slot)
            user.wait(sub)
            ctx.completed(sub[2].serial)
            expect_morph(sinks[slot][1].view(red.prim.vertices.dtype), red.prim, w)
        w = [((f * 0.37) % 1.0), ((f * 0.61) % 1.0)]
        rt.set_weights("Red", w)

        def frame(cb, slot=slot):
            c = rt.record(cb, slot=slot, consumer="compute")
            user.record_compute_copy(cb, rt.vertex_buffer("Red"), rt.vertex_buffer_offset("Red", slot=slot),
                                     red.vertex_bytes, sinks[slot][0])
            user.record_compute_read_barrier(cb)
            return c

        sub = user.submit(frame)
        c = sub[2]
        assert c.slot == slot and c.dispatched >= 1 and c.final_barrier.name == "compute write -> compute read"
        assert c.final_barrier_recorded
        in_flight[slot] = (sub, w)
    for slot, (sub, w) in in_flight.items():
        user.wait(sub)
        expect_morph(sinks[slot][1].view(red.prim.vertices.dtype), red.prim, w)
    ctx.completed()
    # each slot still holds the morph of the last frame that used it: the slots are separate outputs
    reads = user.run(lambda cb: [rt.record_readback(cb, "Red", slot=k) for k in range(n_slots)])
    ctx.completed()
    for k, r in enumerate(reads):
        expect_morph(r.vertices(), red.prim, in_flight[k][1])
    offsets = {rt.vertex_buffer_offset("Red", slot=k) for k in range(n_slots)}
    assert len(offsets) == n_slots
    rt.destroy()


def test_skipped_final_barrier_is_the_hosts_to_record(user_device):
    """emit_barrier=False: the host records counters.final_barrier itself (clean), or forgets it (a hazard the
    validation layer reports, so the barrier is really needed)."""
    from vkmorph.render.morph_pass import MorphRuntime

    user, ctx = user_device
    rt = MorphRuntime(ctx, load_scene())
    red = rt.instance("Red")
    sink, view = user.host_buffer(red.vertex_bytes)
    for host_records_it in (True, False):
        rt.set_weights("Red", [0.5, 0.25] if host_records_it else [0.1, 0.2])

        def frame(cb, host_records_it=host_records_it):
            c = rt.record(cb, consumer="compute", emit_barrier=False)
            assert not c.final_barrier_recorded and c.final_barrier is not None
            b = c.final_barrier
            assert b.memory_barrier2().srcStageMask == vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
            if host_records_it:
                vk.vkCmdPipelineBarrier(cb, b.src_stage, b.dst_stage, 0, 1, [b.memory_barrier()], 0, None, 0, None)
            user.record_compute_copy(cb, rt.vertex_buffer("Red"), rt.vertex_buffer_offset("Red"), red.vertex_bytes,
                                     sink)
            user.record_compute_read_barrier(cb)
            return c

        user.run(frame)
        if host_records_it:
            assert user.messages == []
            expect_morph(view.view(red.prim.vertices.dtype), red.prim, [0.5, 0.25])
        else:
            assert any("SYNC-HAZARD-READ" in m or "READ_AFTER_WRITE" in m for m in user.messages), user.messages
            user.messages.clear()
    ctx.completed()
    rt.destroy()


def test_destroy_in_flight_is_deferred_to_the_hosts_completion(user_device):
    """rt.destroy() while the frame is in flight keeps every buffer alive until the host reports completion
    (destroying them earlier is VUID-vkDestroyBuffer-buffer-00922, and a crash on lavapipe)."""
    from vkmorph.render.morph_pass import MorphRuntime

    user, ctx = user_device
    rt = MorphRuntime(ctx, load_scene())
    red = rt.instance("Red")
    sink, _ = user.host_buffer(red.vertex_bytes)
    rt.set_weights("Red", [1.0, 0.0])

    def frame(cb):
        c = rt.record(cb, consumer="compute")
        user.record_compute_copy(cb, rt.vertex_buffer("Red"), rt.vertex_buffer_offset("Red"), red.vertex_bytes, sink)
        return c

    alive = [b for i in rt.instances for b in (i.vertex_buffer, i.index_buffer)]
    sub = user.submit(frame)                  # in flight
    rt.destroy()
    assert "morph runtime" in ctx.retiring
    assert alive and all(b.alive for b in alive)
    user.wait(sub)
    ctx.completed(sub[2].serial)
    assert ctx.retiring == [] and not any(b.alive for b in alive)
    assert user.messages == []


def test_from_external_checks_each_requirement(user_device, monkeypatch):
    from vkmorph.gpu import context as C
    from vkmorph.gpu.context import Context

    user, _ = user_device
    args = (user.instance, user.physical_device, user.device, user.queue)

    def make(qfi=user.queue_family_index, **kw):
        Context.from_external(*args, qfi, **kw).destroy(host_idle=True)

    make(api_version=vk.VK_MAKE_VERSION(1, 3, 0), graphics=True)     # fine
    with pytest.raises(UsageError, match=r"needs Vulkan 1\.2.*1\.0\.0.*VK_API_VERSION_1_2"):
        make(api_version=vk.VK_MAKE_VERSION(1, 0, 0))
    with pytest.raises(UsageError, match="queue family 99 does not exist"):
        make(99)
    with pytest.raises(UsageError, match="queue_family_index must be an int"):
        make("zero")
    real = vk.vkGetPhysicalDeviceQueueFamilyProperties

    class Family:
        def __init__(self, flags):
            self.queueFlags, self.timestampValidBits = flags, 64

    monkeypatch.setattr(vk, "vkGetPhysicalDeviceQueueFamilyProperties",
                        lambda pd: [Family(vk.VK_QUEUE_TRANSFER_BIT) for _ in real(pd)])
    with pytest.raises(UsageError, match="does not support compute"):
        make()
    monkeypatch.setattr(vk, "vkGetPhysicalDeviceQueueFamilyProperties",
                        lambda pd: [Family(vk.VK_QUEUE_COMPUTE_BIT) for _ in real(pd)])
    make()                                                          # compute only is enough to morph
    with pytest.raises(UsageError, match="does not support graphics"):
        make(graphics=True)
    monkeypatch.setattr(vk, "vkGetPhysicalDeviceQueueFamilyProperties", real)
    monkeypatch.setattr(C, "REQUIRED_FEATURES", ("shaderInt64",))
    with pytest.raises(UsageError, match="shaderInt64"):
        make(enabled_features=user.enabled_features)                # the host enabled none


def test_draws_carry_everything_a_host_needs(ctx):
    from vkmorph.anim.player import AnimationPlayer
    from vkmorph.morph.reference import skin_reference  # noqa: F401 - the palette contract below is skin.vert's
    from vkmorph.render.morph_pass import MorphRuntime

    scene = load_scene(asset("RobotExpressive", "RobotExpressive.glb"))
    with MorphRuntime(ctx, scene, slots=2) as rt:
        player = AnimationPlayer(scene, rt.pose, rt.skeleton)
        player.clip = scene.animations[0]
        player.apply(scene.animations[0].duration * 0.4)
        world = rt.skeleton.world_matrices()
        draws = rt.draws(slot=1)
        assert len(draws) == len(rt.instances) and any(d.joint_palette is not None for d in draws)
        assert any(d.morphing for d in draws)
        for d, inst in zip(draws, rt.instances):
            p = inst.prim
            assert (d.node, d.primitive, d.index_count, d.vertex_count) == (inst.node, inst.prim_index,
                                                                            len(p.indices), p.vertex_count)
            assert d.index_type == vk.VK_INDEX_TYPE_UINT32 and d.first_index == 0 and d.index_offset == 0
            assert d.vertex_offset == rt.vertex_buffer_offset(inst.node, inst.prim_index, slot=1)
            np.testing.assert_allclose(d.node_world, world[inst.node], rtol=1e-6, atol=1e-6)
            np.testing.assert_allclose(d.world, np.eye(4) if p.is_skinned else world[inst.node], rtol=1e-6, atol=1e-6)
            assert d.vertex_input.stride == p.vertices.dtype.itemsize
            if p.is_skinned:
                s = scene.skins[p.skin]
                expect = world[s.joints] @ s.inverse_bind_matrices      # world space: draw with identity
                np.testing.assert_allclose(d.joint_palette, expect, rtol=1e-5, atol=1e-5)
            else:
                assert d.joint_palette is None
        morph_draw = next(d for d in draws if d.morphing)
        assert morph_draw.vertex_offset != rt.vertex_buffer_offset(morph_draw.node, morph_draw.primitive, slot=0)


def test_nodes_by_index_and_name_with_duplicates_and_missing(ctx):
    from vkmorph.render.morph_pass import MorphRuntime

    scene = load_scene()
    red = scene.node_index("Red")
    scene.nodes[scene.node_index("Purple") if any(n.name == "Purple" for n in scene.nodes) else 0].name = "Twin"
    other = next(i for i, n in enumerate(scene.nodes) if n.name not in ("Red", "Twin"))
    scene.nodes[other].name = "Twin"
    with MorphRuntime(ctx, scene) as rt:
        assert rt.node_index("Red") == rt.node_index(red) == red
        assert rt.instance(red) is rt.instance("Red")
        with pytest.raises(UsageError, match=r"'Twin' is shared by nodes \[.*\]: pass the node index"):
            rt.set_weights("Twin", [0.0])
        with pytest.raises(UsageError) as e:
            rt.instance("Nobody")
        assert str(e.value) == ("no node named 'Nobody'; the nodes with morph targets are "
                                + ", ".join(repr(n) for n in scene.morph_node_names()))
        assert scene.morph_node_names() and all(scene.meshes[n.mesh].target_count for n in scene.nodes
                                                 if n.name in scene.morph_node_names())
        with pytest.raises(UsageError, match="no node named 'Nobody'; the nodes with morph targets are"):
            rt.set_weight("Nobody", 0, 1.0)
        with pytest.raises(UsageError, match="out of range"):
            rt.instance(len(scene.nodes))
        with pytest.raises(UsageError, match="index or a name"):
            rt.instance(1.5)


def test_objects_are_named_in_validation_messages(ctx):
    """Debug names reach validation messages: a deliberate hazard on the morph output names it."""
    from vkmorph.gpu import barriers
    from vkmorph.gpu import memory as M
    from vkmorph.render.morph_pass import MorphRuntime

    with MorphRuntime(ctx, load_scene()) as rt:
        red = rt.instance("Red")
        sink = M.device_buffer(ctx, None, M.STORAGE, size=red.vertex_bytes, name="sink")

        def frame(cb):
            rt.record(cb, emit_barrier=False)          # and no barrier by the "host" either: a hazard
            vk.vkCmdCopyBuffer(cb, red.vertex_buffer.handle, sink.handle, 1,
                               [vk.VkBufferCopy(srcOffset=red.vertex_offset, dstOffset=0, size=red.vertex_bytes)])
            barriers.record(cb, barriers.TRANSFER_TO_HOST)

        ctx.submit_and_wait(frame)
        text = " ".join(m.text for m in ctx.messages)
        assert "vkmorph: morph output vertices" in text, text
        ctx.clear_messages()
        sink.destroy()


def test_host_pipeline_cache_is_used(user_device, monkeypatch):
    from vkmorph.render.morph_pass import MorphRuntime

    user, ctx = user_device
    caches = []
    real = vk.vkCreateComputePipelines
    monkeypatch.setattr(vk, "vkCreateComputePipelines", lambda dev, cache, *a: (caches.append(cache),
                                                                                 real(dev, cache, *a))[1])
    rt = MorphRuntime(ctx, load_scene())
    assert caches and all(c == user.pipeline_cache for c in caches)
    rt.destroy()


def test_buffers_share_a_few_allocations(ctx):
    from tests.helpers import random_prim
    from vkmorph.asset.model import MeshAsset, NodeAsset, SceneAsset
    from vkmorph.render.morph_pass import MorphRuntime

    rng = np.random.default_rng(3)
    prims = [random_prim(rng, 40, 2 if i % 2 else 0, 0.3) for i in range(150)]
    scene = SceneAsset(nodes=[NodeAsset(f"n{i}", mesh=i) for i in range(150)],
                       meshes=[MeshAsset(f"m{i}", [p]) for i, p in enumerate(prims)], skins=[], animations=[],
                       roots=list(range(150)))
    with MorphRuntime(ctx, scene) as rt:
        stats = rt.memory_stats()
        assert stats["buffers"] >= 150 + 75       # index buffers, static vertex buffers, the batch
        assert stats["allocations"] <= 3, stats
        ctx.submit_and_wait(rt.record)
        for inst in rt.morphing[:3]:
            w = rt.pose.weights(inst.node)
            expect_morph(rt.read_vertices(inst), inst.prim, w)
    assert ctx.allocator.stats()["allocations"] == 0


SHARED_MODELS = sorted(str(p.relative_to(ASSETS)) for p in ASSETS.rglob("*")
                       if p.suffix.lower() in (".glb", ".gltf", ".fbx")) if ASSETS.exists() else []


@pytest.mark.parametrize("model", [None] + SHARED_MODELS)
def test_embed_example_runs_on_every_shared_model(model):
    args = [] if model is None else [str(ASSETS / model)]
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "embed_example.py"), *args], capture_output=True,
                       text=True, cwd=ROOT, timeout=300, env={**os.environ, "VKMORPH_VALIDATION": "1"})
    if r.returncode == 2 and model is not None:
        assert len(r.stderr.strip().splitlines()) == 1, r.stderr   # a file vkmorph refuses: one line
        pytest.skip(f"{Path(model).name} is refused by the importer: {r.stderr.strip()}")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "checked" in r.stdout and "max error" in r.stdout, r.stdout


def test_nodes_by_the_files_own_index(ctx):
    """glTF node i (the file's order) maps to the importer's node of the same name; other formats refuse."""
    from vkmorph.asset.gltf import GltfDocument
    from vkmorph.render.morph_pass import MorphRuntime

    path = asset("RobotExpressive", "RobotExpressive.glb")
    names = [n.get("name") for n in GltfDocument(path).json["nodes"]]
    rt = MorphRuntime(ctx, load_scene(path))
    try:
        for i, name in enumerate(names):
            assert rt.scene.nodes[rt.file_node(i)].name == name
        head = names.index("Head_4")
        assert rt.file_node(head) != head            # the orders really differ
        rt.set_weights(rt.file_node(head), [0.0, 1.0, 0.0])
        with pytest.raises(UsageError, match="out of range"):
            rt.file_node(len(names))
    finally:
        rt.destroy()
