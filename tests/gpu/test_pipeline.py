"""Pipelines from interface declarations: descriptors by name, and the one error path of Vulkan calls."""

from __future__ import annotations

import numpy as np
import pytest


def test_call_names_the_call_and_the_result(monkeypatch):
    from vkmorph.errors import GpuError
    from vkmorph.gpu import vk as V

    def fails(*args):
        raise V.vk.VkErrorOutOfDeviceMemory()

    monkeypatch.setattr(V.vk, "vkCreateFence", fails)
    with pytest.raises(GpuError) as e:
        V.call("vkCreateFence", None, None, None, what="frame fence")
    assert str(e.value) == "vkCreateFence (frame fence) failed: VK_ERROR_OUT_OF_DEVICE_MEMORY"
    assert V.result_name(V.vk.VkErrorOutOfPoolMemory()) == "VK_ERROR_OUT_OF_POOL_MEMORY"
    with pytest.raises(GpuError, match=r"^vkCreateSwapchainKHR failed: VK_ERROR_OUT_OF_DEVICE_MEMORY$"):
        V.call("vkCreateSwapchainKHR", None, None, None, fn=fails)   # an extension function from a proc address
    assert V.call("vkCreateFence", 1, 2, fn=lambda a, b: a + b) == 3


def test_descriptors_by_name(ctx):
    """make_set wants exactly the interface's binding names; a swapped pair lands where its NAME says."""
    from vkmorph.errors import GpuError
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.interface import COPY, COPY_PUSH
    from vkmorph.gpu.pipeline import ComputePipeline
    from vkmorph.gpu.vk import vk

    data = np.arange(300 * 4, dtype=np.uint32).reshape(-1, 4)
    src = M.device_buffer(ctx, data, M.STORAGE, name="src")
    dst = M.device_buffer(ctx, None, M.STORAGE, size=data.nbytes, name="dst")
    pipe = ComputePipeline(ctx, COPY, max_sets=1)
    try:
        with pytest.raises(GpuError, match=r"missing \['dst'\], unknown \['out'\]"):
            pipe.make_set({"src": src, "out": dst})
        dset = pipe.make_set({"dst": dst, "src": src})   # dict order is irrelevant
        push = np.array([(len(data), 7)], COPY_PUSH)

        def record(cb):
            pipe.bind(cb, dset)
            pipe.push(cb, M.cffi_pointer(push))
            vk.vkCmdDispatch(cb, pipe.groups(len(data)), 1, 1)

        ctx.submit_and_wait(record)
        np.testing.assert_array_equal(M.readback(ctx, dst, np.uint32).reshape(-1, 4), data ^ np.uint32(7))
        assert pipe.groups(len(data)) == 2 and COPY.local_size == 256
    finally:
        for o in (pipe, src, dst):
            o.destroy()


def test_a_pipeline_over_the_device_limits_is_one_error_naming_the_limit(ctx, monkeypatch):
    """The spec guarantees only 4 storage buffers a stage (the bake's kernels bind 5-6) and 128 invocations a
    workgroup: a pipeline over the device's limits is refused by name before Vulkan sees it, the specialized
    local size (ClipPosePass(local_size=)) counted, not the declared one."""
    from vkmorph.errors import GpuError
    from vkmorph.gpu.interface import BAKE, BAKE_UBO, BAKE_WIDE, COPY, CROWD_ANIM, CROWD_ANIM_LOCAL_SIZE_ID
    from vkmorph.gpu.pipeline import ComputePipeline, limit_problem

    lim = ctx.info.limits
    assert limit_problem(ctx, BAKE) is None and limit_problem(ctx, BAKE_WIDE) is None     # this device: fine
    monkeypatch.setitem(lim, "maxPerStageDescriptorStorageBuffers", 4)
    for iface, n in ((BAKE, 6), (BAKE_UBO, 5), (BAKE_WIDE, 5)):
        with pytest.raises(GpuError, match=rf"^{iface.shader}: it binds {n} descriptors counted by "
                                           r"maxPerStageDescriptorStorageBuffers, the device allows 4$"):
            ComputePipeline(ctx, iface, max_sets=1)
    ComputePipeline(ctx, COPY, max_sets=1).destroy()                                       # 2 of them: fine
    monkeypatch.setitem(lim, "maxPerStageDescriptorStorageBuffers", 16)
    monkeypatch.setitem(lim, "maxComputeWorkGroupInvocations", 32)
    assert "workgroup of 256 invocations is over the device's 32" in limit_problem(ctx, COPY)
    with pytest.raises(GpuError, match=r"crowd_anim.comp: its workgroup of 48 invocations is over the device's 32"):
        ComputePipeline(ctx, CROWD_ANIM, max_sets=1, specialization={CROWD_ANIM_LOCAL_SIZE_ID: 48})
    assert limit_problem(ctx, CROWD_ANIM, 16) is None
    assert not ctx.live_children or all("pipeline" not in c for c in ctx.live_children)
