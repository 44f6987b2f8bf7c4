"""The CPU devices' bake kernel (glsl/bake_wide.comp, ``GpuBaker.wide_stores``: each plane's whole quads as two vertex
pairs of 64-bit words, the rest of a part as floats; the batch's matrices through a uniform texel buffer, one
dispatch per mode) under the validation layer with synchronization validation:
bit for bit the float stores' bake, for parts that start at odd vertices of a frame and end in 1, 2 or 3 left-over
vertices, parts shorter than a quad, skinned, rigid and morphing parts, both spaces, several batches, zero copy and
the copy path; a frame with an odd number of vertices keeps the float stores and says why when forced; batches
stay within maxTexelBufferElements."""

from __future__ import annotations

import numpy as np
import pytest

from tests.gltf_write import GltfWriter
from vkmorph.bake import GpuBaker, bake_numpy
from vkmorph.errors import UsageError

pytestmark = pytest.mark.gpu

# (vertices, kind) in scene order: starts 0, 3, 8, 14, 21, 30, 33 (odd ones lead with a float vertex), tails
# of 3, 1, 2, 3, 1, 3 and 3 vertices (11 from 33: the first, two whole quads, two more); 44 in a frame
PARTS = ((3, "rigid"), (5, "skinned"), (6, "rigid"), (7, "morph"), (9, "rigid"), (3, "skinned"), (11, "rigid"))


def _scene(path, parts=PARTS):
    rng = np.random.default_rng(7)
    w = GltfWriter()
    tip = w.node("tip", root=False, translation=[0.0, 1.0, 0.0])
    root = w.node("root", children=[tip])
    w.skin([root, tip], [np.eye(4), np.array([[1, 0, 0, 0], [0, 1, 0, -1.0], [0, 0, 1, 0], [0, 0, 0, 1]])])
    channels = [(tip, "rotation", [0.0, 1.0], [[0, 0, 0, 1], [0, 0, 0.38268343, 0.92387953]], "LINEAR")]
    for i, (V, kind) in enumerate(parts):
        pos = rng.uniform(-1.0, 1.0, (V, 3))
        nrm = rng.normal(size=(V, 3))
        nrm /= np.linalg.norm(nrm, axis=1, keepdims=True)
        idx = np.array([(j, j + 1, j + 2) for j in range(V - 2)])
        extra = {}
        if kind in ("skinned", "morph"):
            wts = rng.uniform(0.0, 1.0, (V, 4)) * (rng.uniform(size=(V, 4)) > 0.4)
            wts[:, 0] += 0.1
            extra = {"joints": rng.integers(0, 2, (V, 4)), "joint_weights": wts / wts.sum(1, keepdims=True)}
        if kind == "morph":
            extra.update(targets=[rng.uniform(-0.2, 0.2, (V, 3))], weights=[0.0], target_names=["bulge"])
        mesh = w.mesh(pos, idx, normals=nrm, name=f"part{i}", **extra)
        node = w.node(f"part{i}", mesh=mesh, translation=[0.0, 0.0, 0.1 * i],
                      **({"skin": 0} if kind in ("skinned", "morph") else {}))
        if kind == "rigid":
            channels.append((node, "rotation", [0.0, 1.0], [[0, 0, 0, 1], [0.2588190, 0, 0, 0.9659258]], "LINEAR"))
        if kind == "morph":
            channels.append((node, "weights", [0.0, 0.5, 1.0], [0.0, 1.0, 0.3], "LINEAR"))
    w.animation("move", channels)
    return w.save(path)


def _bits(bake) -> np.ndarray:
    return np.stack([bake.positions, bake.normals, bake.tangents]).view(np.uint32)


@pytest.fixture
def parts_model(tmp_path):
    import vkmorph

    m = vkmorph.open(_scene(tmp_path / "parts.gltf"), validation=True)
    yield m
    m.close()
    assert not m.messages, m.messages


def test_wide_stores_are_bit_for_bit_the_float_stores(parts_model):
    m = parts_model
    if not m.ctx.wide_stores:
        pytest.skip("the device has no shaderInt64 + scalarBlockLayout")
    clip = m.scene.clip("move")
    times = np.linspace(0.0, 1.0, 7)
    starts = [s.start for s in GpuBaker(m, "world").layout.slices.values()]
    assert any(s % 2 for s in starts) and GpuBaker(m, "world").layout.total == 44
    for space in ("world", "mesh"):
        for zero_copy in (True, False):
            wide = GpuBaker(m, space, split_modes=True, zero_copy=zero_copy, wide_stores=True)
            assert wide.wide_stores and wide.wide_refusal is None
            a = wide.run(clip, times, None, 3, False)               # batches of 3, 3, 1: both slots, odd frames
            assert m._bake_cache.pipeline.iface.name == "bake_wide"
            floats = GpuBaker(m, space, split_modes=True, zero_copy=zero_copy, wide_stores=False)
            b = floats.run(clip, times, None, 3, False)
            assert m._bake_cache.pipeline.iface.name == "bake_ubo"
            np.testing.assert_array_equal(_bits(a), _bits(b))
            ref = bake_numpy(m, clip="move", times=times, space=space)
            np.testing.assert_allclose(a.positions, ref.positions, atol=2e-5)
            np.testing.assert_allclose(a.normals, ref.normals, atol=2e-4)
            assert np.abs(a.positions[0] - a.positions[-1]).max() > 1e-2        # it moved


def test_wide_stores_default_on_cpu_devices_and_refusals_say_why(parts_model, tmp_path):
    import vkmorph

    m = parts_model
    baker = GpuBaker(m, "world")
    assert baker.wide_stores is (m.ctx.wide_stores and baker.split_modes)
    assert not GpuBaker(m, "world", split_modes=False).wide_stores
    with pytest.raises(UsageError, match=r"wide_stores=True but it is a variant of the kernel per mode"):
        GpuBaker(m, "world", split_modes=False, wide_stores=True)
    with pytest.raises(UsageError, match=r"wide_stores must be None, True or False, got 1"):
        GpuBaker(m, "world", wide_stores=1)
    # an explicit window picks the uniform-window (or storage-buffer) kernel, which the wide one is not
    two = GpuBaker(m, "world", window=2, split_modes=True)
    assert not two.wide_stores and two.window == 2
    if m.ctx.wide_stores:
        with pytest.raises(UsageError, match=r"wide_stores=True but window=2 picks the uniform-window kernel"):
            GpuBaker(m, "world", window=2, split_modes=True, wide_stores=True)
        with pytest.raises(UsageError, match=r"wide_stores=True but window=0 picks the storage-buffer kernel"):
            GpuBaker(m, "world", window=0, split_modes=True, wide_stores=True)
    # a frame of 45 vertices: pairs would straddle frames, so the float stores (the same bake as the reference)
    odd = vkmorph.open(_scene(tmp_path / "odd.gltf", PARTS[:-1] + ((12, "rigid"),)), validation=True)
    try:
        b = GpuBaker(odd, "world", split_modes=True)
        assert b.layout.total == 45 and not b.wide_stores
        assert "odd number of vertices (45)" in b.wide_refusal or not odd.ctx.wide_stores
        times = np.linspace(0.0, 1.0, 3)
        out = b.run(odd.scene.clip("move"), times, None, 2, False)
        np.testing.assert_allclose(out.positions, bake_numpy(odd, clip="move", times=times, space="world").positions,
                                   atol=2e-5)
        with pytest.raises(UsageError, match=r"wide_stores=True but a frame has an odd number of vertices \(45\)"):
            GpuBaker(odd, "world", split_modes=True, wide_stores=True)
    finally:
        odd.close()
    assert not odd.messages, odd.messages


def test_batches_stay_within_the_texel_view_limit(parts_model):
    """The wide kernel reads a batch's matrices through one texel view (4 texels a matrix): batches are cut to what
    maxTexelBufferElements holds (the same bake in more batches), and a frame's matrices over it keep the
    uniform-window kernel, saying why."""
    m = parts_model
    if not m.ctx.wide_stores:
        pytest.skip("the device has no shaderInt64 + scalarBlockLayout")
    clip = m.scene.clip("move")
    times = np.linspace(0.0, 1.0, 7)
    ref = GpuBaker(m, "world", split_modes=True, wide_stores=True).run(clip, times, None, None, False)
    lim = m.ctx.info.limits
    saved = lim["maxTexelBufferElements"]
    try:
        per_frame = 4 * GpuBaker(m, "world").layout.matrices_per_frame
        lim["maxTexelBufferElements"] = 2 * per_frame                # two frames' matrices a view
        small = GpuBaker(m, "world", split_modes=True, wide_stores=True)
        assert small.batch_size(7, None) == 2 and small.batch_size(7, 5) == 2
        out = small.run(clip, times, None, None, False)
        assert m._bake_cache.B == 2 and m._bake_cache.slots[0].view.count == 2 * per_frame
        np.testing.assert_array_equal(_bits(out), _bits(ref))
        lim["maxTexelBufferElements"] = per_frame - 1
        b = GpuBaker(m, "world", split_modes=True)
        assert not b.wide_stores and "over maxTexelBufferElements" in b.wide_refusal and b.window > 0
        np.testing.assert_allclose(b.run(clip, times, None, None, False).positions, ref.positions, atol=2e-5)
    finally:
        lim["maxTexelBufferElements"] = saved


def test_the_copy_path_split_over_threads_is_the_same_bake(parts_model):
    """copy_threads: the host's copy of each batch into the result (the copy path) split by frames over threads
    (_HostCopier), the bytes of the one-copy bake; the threads are gone after the bake; bad values are one line."""
    import threading

    m = parts_model
    clip = m.scene.clip("move")
    times = np.linspace(0.0, 1.0, 9)
    one = GpuBaker(m, "world", zero_copy=False, copy_threads=1)
    assert one.host_copy_threads(9) == 1
    a = one.run(clip, times, None, 4, False)
    three = GpuBaker(m, "world", zero_copy=False, copy_threads=3)
    assert three.host_copy_threads(9) == 3
    b = three.run(clip, times, None, 4, False)              # batches of 4, 4, 1 frames: tasks of 2, 2, 1 frames
    np.testing.assert_array_equal(_bits(a), _bits(b))
    np.testing.assert_allclose(b.positions, bake_numpy(m, clip="move", times=times, space="world").positions,
                               atol=2e-5)
    assert not [t for t in threading.enumerate() if t.name.startswith("vkmorph bake copy")]
    assert GpuBaker(m, "world").host_copy_threads(9) == 1          # a small result: one copy
    for bad in (0, -1, True, 2.0, "4"):
        with pytest.raises(UsageError, match="copy_threads must be None or an int >= 1"):
            GpuBaker(m, "world", copy_threads=bad)


def test_a_slot_that_fails_part_way_leaves_nothing_behind(parts_model, monkeypatch):
    """The second slot's texel view failing (a driver refusing it): the bake is one GpuError and what both slots
    had made (matrices buffers, views, outputs) is freed, not left to the context's close."""
    from vkmorph.errors import GpuError
    from vkmorph.gpu import memory as M

    m = parts_model
    baker = GpuBaker(m, "world", split_modes=True)
    if not baker.wide_stores:
        pytest.skip("the device has no shaderInt64 + scalarBlockLayout")
    m._free_bake_cache()
    before = set(m.ctx.live_children)
    made, real = [], M.TexelView.__init__

    def second_fails(self, *args, **kw):
        made.append(self)
        if len(made) == 2:
            raise GpuError("vkCreateBufferView failed (injected)")
        real(self, *args, **kw)

    monkeypatch.setattr(M.TexelView, "__init__", second_fails)
    with pytest.raises(GpuError, match="injected"):
        baker.run(m.scene.clip("move"), np.linspace(0.0, 1.0, 5), None, None, False)
    assert set(m.ctx.live_children) - before == set()
    assert len(made) == 2


def test_texel_bindings_take_live_views_only(parts_model):
    """A texel binding given a buffer, or a view already destroyed, is one GpuError naming the binding (not an
    AttributeError, not a null handle written into the set)."""
    from vkmorph.errors import GpuError
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.interface import BAKE_WIDE
    from vkmorph.gpu.pipeline import ComputePipeline

    m = parts_model
    if not m.ctx.wide_stores:
        pytest.skip("the device has no shaderInt64 + scalarBlockLayout")
    pipe = ComputePipeline(m.ctx, BAKE_WIDE, max_sets=2)
    buf = M.host_buffer(m.ctx, 256, M.STORAGE | M.UNIFORM_TEXEL, name="texels")
    view = M.TexelView(m.ctx, buf, 16)
    try:
        with pytest.raises(GpuError, match=r"^bake_wide.comp: binding 'matrices' is a texel buffer: it takes a "
                                           r"live memory.TexelView, got Buffer$"):
            pipe.update_set(None, {"matrices": buf})
        view.destroy()
        with pytest.raises(GpuError, match=r"takes a live memory.TexelView, got TexelView$"):
            pipe.update_set(None, {"matrices": view})
        with pytest.raises(GpuError, match=r"17 texels of 16 B do not fit texels \(256 B\)"):
            M.TexelView(m.ctx, buf, 17)
    finally:
        view.destroy()
        buf.destroy()
        pipe.destroy()


def test_the_wide_kernel_with_a_uniform_window_is_refused_whole(parts_model):
    """BakeResources built by hand (as the bench scripts do) with the wide kernel and a uniform window: one
    GpuError, nothing left alive (GpuBaker never asks for it: the wide kernel has no window)."""
    from vkmorph.bake import BakeResources
    from vkmorph.errors import GpuError

    m = parts_model
    baker = GpuBaker(m, "world", split_modes=True)
    m._free_bake_cache()
    before = set(m.ctx.live_children)
    with pytest.raises(GpuError, match="reads a texel buffer, not a uniform window"):
        BakeResources(m, baker.layout, 3, True, False, 2, True, False, True)
    assert set(m.ctx.live_children) - before == set()
