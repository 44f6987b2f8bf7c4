"""The zero-copy bake (vkmorph/bake.py ``_ZeroCopyResult``): where the device imports host memory
(VK_EXT_external_memory_host, lavapipe here), the kernel writes every batch's frames straight into the Bake's own
result array, in its final unpadded layout, through per-batch windows of the three planes (dynamic offsets and a
float shift). Against the per-frame numpy reference ``bake_numpy`` under the validation layer with
synchronization validation (the model fixture fails on any message) and the leak checks; the copy path
(``zero_copy=False``) as the fallback; the import released after every bake, also one that fails."""

from __future__ import annotations

import numpy as np
import pytest

from vkmorph.bake import bake_numpy, frame_weights, weight_runs

pytestmark = pytest.mark.gpu

ROBOT = ("RobotExpressive", "RobotExpressive.glb")
CUBE = ("AnimatedMorphCube", "AnimatedMorphCube.gltf")
IMPORT = "bake result (imported host memory)"


def _close(a, b, pos=2e-5, unit=2e-4):
    np.testing.assert_allclose(a.positions, b.positions, atol=pos)
    np.testing.assert_allclose(a.normals, b.normals, atol=unit)
    np.testing.assert_allclose(a.tangents, b.tangents, atol=unit)


def _imports(model) -> list[str]:
    return [c for c in model.ctx.live_children if c.startswith(IMPORT)]


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_zero_copy_bakes_rigid_skinned_and_morphing_parts_in_both_spaces(model):
    """RobotExpressive (rigid, skinned and morphing parts; 7,214 vertices, so a frame is not a multiple of 4
    vertices and instances start anywhere): 11 frames (odd) in batches of 3 (four batches over two slots; batches
    from an odd frame start 24 bytes, one vertex pair, into a window at a multiple of 48 bytes: the kernel's float
    shift, whole pairs for the 64-bit stores), a kernel per mode and one
    for every mode, both spaces, with and without skinning. The result is the imported array itself."""
    from vkmorph.bake import GpuBaker, _ZeroCopyResult

    assert model.ctx.host_import_alignment > 0                # lavapipe offers VK_EXT_external_memory_host
    clip = model.scene.clip("Wave")
    times = np.linspace(0.0, 2.0, 11)
    name = model.target_names[0]
    V = 7214
    offsets = [_ZeroCopyResult.sizes(16, 11, V, 3)[0]]
    shifts = {_ZeroCopyResult.offsets(type("R", (), {"V": V, "align": 16, "plane_bytes": offsets[0]})(), f)[1]
              for f in (0, 3, 6, 9)}
    assert shifts == {0, 6}                                   # some windows start a vertex pair into their block
    for space, skinning in (("world", True), ("mesh", True), ("mesh", False)):
        ref = bake_numpy(model, clip="Wave", times=times, weights={name: 0.8}, space=space, skinning=skinning)
        for split in (True, False):
            baker = GpuBaker(model, space, skinning, split_modes=split, zero_copy=True)
            gpu = baker.run(clip, times, {name: 0.8}, 3, False)
            res = model._bake_cache
            assert res.zero_copy and all(s.output is None and s.staging is None for s in res.slots)
            assert gpu.positions.ctypes.data % model.ctx.host_import_alignment == 0   # the imported memory
            assert gpu.positions.flags.c_contiguous and gpu.normals.flags.c_contiguous
            assert gpu.positions.shape == (11, V, 3)
            _close(gpu, ref)
            assert not _imports(model)                        # released at the end of the bake
            if space == "world":
                assert np.abs(gpu.positions[0] - gpu.positions[5]).max() > 1e-2      # it moved


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_each_slot_is_pointed_at_the_result_before_its_first_batch(model):
    """A slot's sets are pointed at a bake's result before the slot's first batch of that bake (slot 1 after batch
    0's submit): the first bake makes slot 1's sets there, a one-batch bake leaves them at the previous, released
    result, and the next bake of the same resources (batches of 1 frame) writes its own result through them."""
    from vkmorph.bake import GpuBaker

    clip = model.scene.clip("Wave")
    for times in (np.array([0.5, 1.0, 1.5]), np.array([0.3]), np.array([0.7, 1.2, 1.9])):
        gpu = GpuBaker(model, "world", zero_copy=True).run(clip, times, None, 1, False)
        assert model._bake_cache.zero_copy and model._bake_cache.B == 1
        _close(gpu, bake_numpy(model, clip="Wave", times=times, space="world"))
        assert not _imports(model)


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_zero_copy_with_weights_changing_every_frame_and_small_windows(model):
    """A morph pass per frame (every frame its own weights), uniform windows of 1 and 3 frames, batches of 4
    (three batches, two slots), both spaces."""
    from vkmorph.bake import GpuBaker

    clip = model.scene.clip(model.clips[0])
    times = np.linspace(0.0, clip.duration, 11)
    assert len(weight_runs(frame_weights(model, clip, times, None))) > 5
    for space in ("world", "mesh"):
        ref = bake_numpy(model, clip=model.clips[0], times=times, space=space)
        for window in (1, 3, None):
            gpu = GpuBaker(model, space, window=window, zero_copy=True).run(clip, times, None, 4, False)
            assert model._bake_cache.zero_copy
            _close(gpu, ref)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_the_copy_path_forced_off_gives_the_same_bake(model):
    """zero_copy=False: the slots' own output planes and a host copy per batch (the path of devices without the
    extension, and of bakes too large to import), bit-identical to the zero-copy bake (the same kernel code)."""
    from vkmorph.bake import GpuBaker

    clip = model.scene.clip("Dance")
    times = np.linspace(0.0, clip.duration, 9)
    a = GpuBaker(model, "world", zero_copy=True).run(clip, times, None, 4, False)
    assert model._bake_cache.zero_copy
    b = GpuBaker(model, "world", zero_copy=False).run(clip, times, None, 4, False)
    res = model._bake_cache
    assert not res.zero_copy and all(s.output is not None for s in res.slots)
    for x, y in ((a.positions, b.positions), (a.normals, b.normals), (a.tangents, b.tangents)):
        np.testing.assert_array_equal(x, y)
    _close(b, bake_numpy(model, clip="Dance", times=times, space="world"))


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_zero_copy_falls_back_where_it_cannot_and_says_why_when_forced(model, monkeypatch):
    from vkmorph import bake as B
    from vkmorph.bake import GpuBaker
    from vkmorph.errors import UsageError

    monkeypatch.setattr(B, "_ZERO_COPY_MIN_BYTES", 0)          # the default takes zero copy for any size

    clip = model.scene.clip(model.clips[0])
    times = np.linspace(0.0, clip.duration, 5)
    ref = bake_numpy(model, clip=model.clips[0], times=times, space="world")
    with pytest.raises(UsageError, match="zero_copy must be None, True or False, got 1"):
        GpuBaker(model, "world", zero_copy=1)
    limits = dict(model.ctx.info.limits)
    monkeypatch.setitem(model.ctx.info.limits, "maxStorageBufferRange", 64)   # a window would not fit
    baker = GpuBaker(model, "world")
    assert "maxStorageBufferRange" in baker.zero_copy_refusal(5, 2)
    _close(baker.run(clip, times, None, 2, False), ref)
    assert not model._bake_cache.zero_copy
    with pytest.raises(UsageError, match="zero_copy=True but a batch's plane window .* maxStorageBufferRange"):
        GpuBaker(model, "world", zero_copy=True).run(clip, times, None, 2, False)
    monkeypatch.setitem(model.ctx.info.limits, "maxStorageBufferRange", limits["maxStorageBufferRange"])
    monkeypatch.setitem(model.ctx.info.limits, "maxMemoryAllocationSize", 4096)
    assert "maxMemoryAllocationSize" in GpuBaker(model, "world").zero_copy_refusal(5, 2)
    monkeypatch.setitem(model.ctx.info.limits, "maxMemoryAllocationSize", limits["maxMemoryAllocationSize"])
    monkeypatch.setattr(model.ctx, "host_import_alignment", 0)      # a device (or a host) without the extension
    with pytest.raises(UsageError, match="zero_copy=True but the context has no VK_EXT_external_memory_host"):
        GpuBaker(model, "world", zero_copy=True).run(clip, times, None, 2, False)
    _close(GpuBaker(model, "world").run(clip, times, None, 2, False), ref)
    assert not model._bake_cache.zero_copy
    assert not _imports(model)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_the_import_is_released_after_a_bake_and_after_a_failing_one(model, monkeypatch):
    """The imported memory lives for one bake: gone when the bake returns (its fences waited for), also when a
    batch fails after others were submitted; the Bake's arrays stay valid after the model is closed."""
    from vkmorph.bake import GpuBaker

    clip = model.scene.clip("Wave")
    times = np.linspace(0.0, 2.0, 10)
    baker = GpuBaker(model, "world", zero_copy=True)
    seen = []
    real = baker._record

    def record(res, slot, s, W, n, outs):
        seen.append(_imports(model))
        if len(seen) == 3:
            raise RuntimeError("batch 3 fails")
        real(res, slot, s, W, n, outs)

    monkeypatch.setattr(baker, "_record", record)
    with pytest.raises(RuntimeError, match="batch 3 fails"):
        baker.run(clip, times, None, 3, False)
    assert seen[0] and len(seen[0]) == 1                      # imported while the bake ran
    assert not _imports(model) and all(s.busy is None for s in model._bake_cache.slots)
    monkeypatch.undo()
    gpu = GpuBaker(model, "world", zero_copy=True).run(clip, times, None, 3, False)
    assert model._bake_cache.zero_copy and not _imports(model)
    _close(gpu, bake_numpy(model, clip="Wave", times=times, space="world"))


def test_a_borrowed_device_imports_only_when_the_host_enabled_the_extension(ctx):
    from vkmorph.gpu.context import HOST_MEMORY_EXTENSION, Context

    assert ctx.host_import_alignment > 0                      # vkmorph's own device: enabled where offered
    args = (ctx.instance, ctx.physical_device, ctx.device, ctx.queue, ctx.queue_family_index)
    without = Context.from_external(*args)
    with_ext = Context.from_external(*args, device_extensions=[HOST_MEMORY_EXTENSION])
    try:
        assert without.host_import_alignment == 0
        assert with_ext.host_import_alignment == ctx.host_import_alignment
        assert without.info.limits["maxMemoryAllocationSize"] > 0
    finally:
        without.destroy()
        with_ext.destroy()


def test_result_memory_starts_on_a_huge_page_from_one_huge_page_on():
    """Results of 2 MiB or more start at a multiple of 2 MiB (transparent huge pages cover only whole aligned
    2 MiB ranges), smaller ones at the import alignment; both hold the bytes asked for and stay importable."""
    from vkmorph.bake import _HUGE_PAGE, _result_memory

    for nbytes, start in ((3 * _HUGE_PAGE + 12, _HUGE_PAGE), (_HUGE_PAGE, _HUGE_PAGE), (_HUGE_PAGE - 1, 4096),
                          (100, 4096)):
        a = _result_memory(nbytes, 4096)
        assert a.ctypes.data % start == 0 and a.nbytes >= nbytes and a.nbytes % 4096 == 0, nbytes
    assert _result_memory(100, 1 << 22).ctypes.data % (1 << 22) == 0     # a larger import alignment wins


def test_touch_writes_only_inside_the_batch_frames_of_each_plane():
    """The host faults in batch k + 1's pages while the device writes batch k: one byte a page, never outside
    frames [first, first + n) of a plane (another batch's bytes)."""
    from vkmorph.bake import _ZeroCopyResult

    r = _ZeroCopyResult.__new__(_ZeroCopyResult)
    r.V, r.align = 7214, 16
    r.plane_bytes, _, total = _ZeroCopyResult.sizes(16, 40, r.V, 8)
    r.bytes = np.full(-(-total // 4096) * 4096, 0xFF, np.uint8)
    r.touch(9, 8)
    written = np.flatnonzero(r.bytes != 0xFF)
    inside = np.zeros(len(r.bytes), bool)
    for k in range(3):
        a = k * r.plane_bytes + 12 * 9 * r.V
        inside[a:a + 12 * 8 * r.V] = True
    assert len(written) and inside[written].all()
    pages = {w // 4096 for w in written}
    assert all(p in pages for k in range(3)                  # every page of the range is touched
               for p in range((k * r.plane_bytes + 12 * 9 * r.V) // 4096,
                              -(-(k * r.plane_bytes + 12 * 17 * r.V) // 4096)))


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_a_refused_import_falls_back_to_the_copy_path_unless_forced(model, monkeypatch):
    """A driver may refuse a host allocation (vkAllocateMemory with VkImportMemoryHostPointerInfoEXT): the default
    bake then takes the copy path; zero_copy=True reports the refusal. A bad clip after the import releases it."""
    from vkmorph import bake as B
    from vkmorph.asset.model import AnimationClip
    from vkmorph.bake import GpuBaker
    from vkmorph.errors import GpuError, UsageError
    from vkmorph.gpu import memory as M

    monkeypatch.setattr(B, "_ZERO_COPY_MIN_BYTES", 0)
    clip = model.scene.clip(model.clips[0])
    times = np.linspace(0.0, clip.duration, 5)
    with pytest.raises(UsageError, match="not one of the scene's animations"):
        GpuBaker(model, "world", zero_copy=True, pose="gpu").run(AnimationClip("foreign", 1.0), times, None, 2,
                                                                 False)
    assert not _imports(model)

    def refuse(self, ctx, array, usage, *, name="imported host memory"):
        raise GpuError(f"{name}: the device refused to import {array.nbytes} B of host memory")

    monkeypatch.setattr(M.HostImport, "__init__", refuse)
    gpu = GpuBaker(model, "world").run(clip, times, None, 2, False)
    assert not model._bake_cache.zero_copy
    _close(gpu, bake_numpy(model, clip=model.clips[0], times=times, space="world"))
    with pytest.raises(GpuError, match="refused to import"):
        GpuBaker(model, "world", zero_copy=True).run(clip, times, None, 2, False)


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_by_default_only_large_results_are_written_in_place(model):
    """The import costs a bake a few milliseconds: the default writes in place from _ZERO_COPY_MIN_BYTES of result
    on (RobotExpressive: 33 frames), copies smaller ones (Model.pose's one frame)."""
    from vkmorph import bake as B
    from vkmorph.gpu.memory import host_cached_device_memory

    per_frame = 36 * 7214
    frames = -(-B._ZERO_COPY_MIN_BYTES // per_frame)
    clip = model.scene.clip("Wave")
    here = host_cached_device_memory(model.ctx)     # else the copy path (a discrete GPU: the test below)
    for n, expect in ((1, False), (frames - 1, False), (frames, here)):
        gpu = B.GpuBaker(model, "world").run(clip, np.linspace(0.0, 2.0, n), None, None, False)
        assert model._bake_cache.zero_copy is expect, n
        if n == frames:                                       # a few of its frames against the reference
            t = np.linspace(0.0, 2.0, n)
            ref = bake_numpy(model, clip="Wave", times=t[::8], space="world")
            np.testing.assert_allclose(gpu.positions[::8], ref.positions, atol=2e-5)
            np.testing.assert_allclose(gpu.normals[::8], ref.normals, atol=2e-4)
    model.pose(clip="Wave", time=0.5)
    assert not model._bake_cache.zero_copy


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_by_default_a_discrete_gpu_takes_the_copy_path(model, monkeypatch):
    """Without host-cached device-local memory (a discrete GPU: on the H200 the copy path was 1.8x faster) the
    default copies even a large result; zero_copy=True still writes in place, and both equal the reference."""
    from vkmorph import bake as B
    from vkmorph.gpu import memory as M

    monkeypatch.setattr(M, "host_cached_device_memory", lambda ctx: False)
    frames = -(-B._ZERO_COPY_MIN_BYTES // (36 * 7214))
    clip, t = model.scene.clip("Wave"), np.linspace(0.0, 2.0, frames)
    assert not B.GpuBaker(model, "world").uses_zero_copy(frames, frames)
    copied = B.GpuBaker(model, "world").run(clip, t, None, None, False)
    assert model._bake_cache.zero_copy is False
    forced = B.GpuBaker(model, "world", zero_copy=True).run(clip, t, None, None, False)
    assert model._bake_cache.zero_copy is True
    np.testing.assert_array_equal(copied.positions, forced.positions)
    ref = bake_numpy(model, clip="Wave", times=t[::8], space="world")
    np.testing.assert_allclose(forced.positions[::8], ref.positions, atol=2e-5)


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_a_pointer_the_driver_refuses_is_one_gpu_error_and_the_copy_path(model, monkeypatch):
    """vkGetMemoryHostPointerPropertiesEXT may refuse a pointer (VK_ERROR_INVALID_EXTERNAL_HANDLE) and
    vkAllocateMemory may fail with any of its results: either is one GpuError naming the call (never
    python-vulkan's own exception), so the default bake falls back to the copy path and zero_copy=True says so."""
    import vulkan

    from vkmorph import bake as B
    from vkmorph.bake import GpuBaker
    from vkmorph.errors import GpuError

    monkeypatch.setattr(B, "_ZERO_COPY_MIN_BYTES", 0)
    clip = model.scene.clip(model.clips[0])
    times = np.linspace(0.0, clip.duration, 5)
    ref = bake_numpy(model, clip=model.clips[0], times=times, space="world")
    real_proc, real_alloc = vulkan.vkGetDeviceProcAddr, vulkan.vkAllocateMemory

    def refuse(*args):
        raise vulkan.VkErrorInvalidExternalHandle()

    def proc(device, name):
        return refuse if name == "vkGetMemoryHostPointerPropertiesEXT" else real_proc(device, name)

    def alloc(device, info, allocator):
        if info.pNext != vulkan.ffi.NULL:                  # the import, not the allocator's own blocks
            raise vulkan.VkErrorTooManyObjects()
        return real_alloc(device, info, allocator)

    for name, fake in (("vkGetDeviceProcAddr", proc), ("vkAllocateMemory", alloc)):
        monkeypatch.setattr(vulkan, name, fake)
        with pytest.raises(GpuError, match="vkGetMemoryHostPointerPropertiesEXT|vkAllocateMemory") as exc:
            GpuBaker(model, "world", zero_copy=True).run(clip, times, None, 2, False)
        assert "bake result" in str(exc.value)
        gpu = GpuBaker(model, "world").run(clip, times, None, 2, False)
        assert not model._bake_cache.zero_copy and not _imports(model)
        _close(gpu, ref)
        monkeypatch.setattr(vulkan, name, {"vkGetDeviceProcAddr": real_proc, "vkAllocateMemory": real_alloc}[name])


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_a_failing_fence_wait_keeps_the_import_until_the_device_is_idle(model, monkeypatch):
    """A fence wait that fails (a timeout: the GPU may still be writing the imported array) must not free the
    import, nor the array under it, before the device is idle: the bake then waits for the whole device, frees,
    and leaves no slot marked busy (a later bake would collect a stale batch)."""
    from vkmorph.bake import GpuBaker
    from vkmorph.errors import GpuError
    from vkmorph.gpu import memory as M

    ctx = model.ctx
    clip = model.scene.clip("Wave")
    times = np.linspace(0.0, 2.0, 10)
    events = []
    real_wait, real_idle, real_destroy = ctx.wait_fence, ctx.wait_idle, M.HostImport.destroy

    def wait_fence(fence, *a, **kw):
        if fence == ctx._fence:                               # submit_and_wait's (the build's uploads)
            return real_wait(fence, *a, **kw)
        events.append("wait")                                 # a batch's
        raise GpuError("GPU work did not finish within 60.0 s")

    def wait_idle():
        events.append("idle")
        real_idle()

    def destroy(self):
        events.append("release")
        real_destroy(self)

    monkeypatch.setattr(ctx, "wait_fence", wait_fence)
    monkeypatch.setattr(ctx, "wait_idle", wait_idle)
    monkeypatch.setattr(M.HostImport, "destroy", destroy)
    with pytest.raises(GpuError, match="did not finish"):
        GpuBaker(model, "world", zero_copy=True).run(clip, times, None, 3, False)
    assert "release" in events and "idle" in events[:events.index("release")], events
    assert not _imports(model) and all(s.busy is None for s in model._bake_cache.slots)
    monkeypatch.setattr(ctx, "wait_fence", real_wait)
    for zero_copy in (True, False):                          # the cached slots still work, both paths
        gpu = GpuBaker(model, "world", zero_copy=zero_copy).run(clip, times[:4], None, 3, False)
        _close(gpu, bake_numpy(model, clip="Wave", times=times[:4], space="world"))


@pytest.mark.parametrize("model", [ROBOT], indirect=True)
def test_a_batch_too_large_to_bind_is_cut_to_fit_max_storage_buffer_range(model):
    """batch_frames asking for more frames than one plane binding can hold (lavapipe: maxStorageBufferRange is
    128 MiB, 1,551 frames of RobotExpressive's 7,214 vertices x 12 bytes): the batch is cut to fit, on the copy
    path (zero_copy=False, and the default, whose refusal of zero copy for that window sent it there) as with
    zero copy, so no binding is over the limit (the model fixture fails on the layer's message)."""
    from vkmorph.bake import GpuBaker

    lim = int(model.ctx.info.limits["maxStorageBufferRange"])
    V = 7214
    F = lim // (12 * V) + 9                                   # one batch of F frames would be over the limit
    clip = model.scene.clip("Wave")
    times = np.linspace(0.0, 2.0, F)
    pick = [0, F // 2, F - 1]
    ref = bake_numpy(model, clip="Wave", times=times[pick], space="world")
    for zero_copy in (False, None):
        baker = GpuBaker(model, "world", zero_copy=zero_copy)
        B = baker.batch_size(F, F)
        assert 12 * B * V <= lim and B < F
        gpu = baker.run(clip, times, None, F, False)
        assert model._bake_cache.B == B
        np.testing.assert_allclose(gpu.positions[pick], ref.positions, atol=2e-5)
        np.testing.assert_allclose(gpu.normals[pick], ref.normals, atol=2e-4)
        del gpu
        model._free_bake_cache()


def test_device_extensions_as_one_string_is_a_usage_error(ctx):
    """from_external(device_extensions="VK_EXT_external_memory_host"), a string where a list of names is meant,
    was a set of its characters: the extension silently taken as not enabled. It is one UsageError line."""
    from vkmorph.errors import UsageError
    from vkmorph.gpu.context import HOST_MEMORY_EXTENSION, Context

    args = (ctx.instance, ctx.physical_device, ctx.device, ctx.queue, ctx.queue_family_index)
    for bad in (HOST_MEMORY_EXTENSION, [HOST_MEMORY_EXTENSION, 3]):
        with pytest.raises(UsageError, match="device_extensions must be a list of extension names"):
            Context.from_external(*args, device_extensions=bad)


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_batches_and_results_keep_their_dynamic_offsets_below_4_gib(model, monkeypatch):
    """A dynamic offset is a uint32_t. Where maxStorageBufferRange is 4 GiB (the H200), a batch of 3 GiB planes
    put the slot's third plane at 6 GiB (an OverflowError while recording): batches are cut so that a slot's
    three planes fit below 4 GiB, and a zero-copy result whose planes lie past 4 GiB takes the copy path."""
    from vkmorph.bake import GpuBaker

    lim = model.ctx.info.limits
    monkeypatch.setitem(lim, "maxStorageBufferRange", 0xFFFFFFFF)
    monkeypatch.setitem(lim, "maxMemoryAllocationSize", 1 << 40)
    baker = GpuBaker(model, "world")
    V = baker.layout.total
    B = baker.batch_size(1 << 30, 1 << 30)
    plane = -(-12 * B * V // 256) * 256                      # _Slot's plane stride
    assert 3 * plane <= 0xFFFFFFFF                             # offsets 0, plane, 2 plane; a plane bound each
    assert 36 * (B + 1) * V > 0xFFFFFFFF - 3 * 256             # and no smaller than that needs
    if model.ctx.host_import_alignment:
        F = (1 << 32) // (12 * V)                              # each plane ~4 GiB apart
        why = baker.zero_copy_refusal(F, 64)
        assert why is not None and "past 4 GiB" in why, why
        assert baker.zero_copy_refusal(64, 64) is None


@pytest.mark.parametrize("model", [CUBE], indirect=True)
def test_a_cpu_device_bakes_in_place_in_fewer_larger_batches(model):
    """On a CPU device two batches in flight overlap nothing (the device is the host's cores), so a zero-copy
    bake takes one batch of up to _IN_PLACE_CPU_BATCH_BYTES instead of two; the copy path keeps two, and an
    explicit batch_frames is kept. All three are the same bake."""
    from vkmorph.bake import GpuBaker

    if model.ctx.info.device_type != "cpu" or not model.ctx.host_import_alignment:
        pytest.skip("a CPU device that imports host memory")
    clip = model.scene.clip(model.clips[0])
    times = np.linspace(0.0, clip.duration, 40)
    one = GpuBaker(model, "world", zero_copy=True).run(clip, times, None, None, False)
    assert model._bake_cache.B == 40 and model._bake_cache.zero_copy
    two = GpuBaker(model, "world", zero_copy=False).run(clip, times, None, None, False)
    assert model._bake_cache.B == 20 and not model._bake_cache.zero_copy
    seven = GpuBaker(model, "world", zero_copy=True).run(clip, times, None, 7, False)
    assert model._bake_cache.B == 7
    for other in (two, seven):
        np.testing.assert_array_equal(one.positions, other.positions)
        np.testing.assert_array_equal(one.normals, other.normals)
    _close(one, bake_numpy(model, clip=model.clips[0], times=times, space="world"))
