"""Vulkan objects built from a shader interface declaration (gpu/interface.py), and compute pipelines.

Descriptor set layouts, pipeline layouts, push-constant ranges, descriptor writes and vertex-input descriptions
all come from the one ``ShaderInterface`` the GLSL headers are generated from; descriptors are addressed by
binding NAME, never by list position. Structs are built once here (cffi keeps only what Python keeps alive,
so every nested create-info is a named local until the call returns); per-frame code only binds and dispatches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import numpy as np

from ..errors import GpuError
from .context import Context
from .interface import (
    COMPUTE,
    FRAGMENT,
    SAMPLER,
    STORAGE,
    STORAGE_DYNAMIC,
    TEXEL,
    UNIFORM,
    UNIFORM_ARRAY,
    VERTEX,
    Binding,
    ShaderInterface,
)
from .interface import vertex_attributes as _vertex_attributes
from .memory import Buffer, TexelView
from .shaders import load_spirv
from .vk import WHOLE_SIZE, call, vk

DESCRIPTOR_TYPES = {STORAGE: vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, UNIFORM: vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                    SAMPLER: vk.VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER,
                    UNIFORM_ARRAY: vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC,
                    STORAGE_DYNAMIC: vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC,
                    TEXEL: vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER}
STAGE_BITS = {COMPUTE: vk.VK_SHADER_STAGE_COMPUTE_BIT, VERTEX: vk.VK_SHADER_STAGE_VERTEX_BIT,
              FRAGMENT: vk.VK_SHADER_STAGE_FRAGMENT_BIT}


def stage_flags(stages: Iterable[str]) -> int:
    flags = 0
    for s in stages:
        flags |= STAGE_BITS[s]
    return flags


def descriptor_type(binding: Binding) -> int:
    return DESCRIPTOR_TYPES[binding.kind]


def set_layout_bindings(iface: ShaderInterface, set_index: int = 0) -> list[tuple[int, int, int]]:
    """(binding, VkDescriptorType, stage flags) of one descriptor set of ``iface``."""
    return [(b.binding, descriptor_type(b), stage_flags(b.stages)) for b in iface.set_bindings(set_index)]


def push_constant_stages(iface: ShaderInterface) -> int:
    return stage_flags(iface.push.stages) if iface.push is not None else 0


def vertex_input_attributes(dtype: np.dtype) -> list[tuple[int, str, int, int]]:
    """(location, field name, VkFormat, byte offset) per field of a vertex dtype, as the generated headers declare."""
    return [(a.location, a.name, getattr(vk, a.vk_format), a.offset) for a in _vertex_attributes(dtype)]


def limit_problem(ctx: Context, iface: ShaderInterface, local_size: int | None = None) -> str | None:
    """Why ``iface``'s compute pipeline cannot be made on this device (None: it can): its workgroup (``local_size``,
    else the interface's) over maxComputeWorkGroupSize[0] or maxComputeWorkGroupInvocations, or its set over the
    device's storage / uniform buffer counts (the spec guarantees only 4 storage buffers a stage, 4 dynamic ones
    and 8 dynamic uniform buffers a set: the bake's kernels bind 5-6 storage buffers)."""
    lim = ctx.info.limits
    size = iface.local_size if local_size is None else local_size
    most = min(int(lim.get("maxComputeWorkGroupSize", (1024,))[0]),
               int(lim.get("maxComputeWorkGroupInvocations", 1024)))
    if size is not None and size > most:
        return (f"its workgroup of {size} invocations is over the device's {most} (maxComputeWorkGroupSize, "
                "maxComputeWorkGroupInvocations)")
    kinds = [b.kind for b in iface.bindings]
    for count, name in ((sum(k in (STORAGE, STORAGE_DYNAMIC) for k in kinds), "maxPerStageDescriptorStorageBuffers"),
                        (sum(k in (UNIFORM, UNIFORM_ARRAY) for k in kinds), "maxPerStageDescriptorUniformBuffers"),
                        (kinds.count(STORAGE_DYNAMIC), "maxDescriptorSetStorageBuffersDynamic"),
                        (kinds.count(UNIFORM_ARRAY), "maxDescriptorSetUniformBuffersDynamic")):
        if name in lim and count > int(lim[name]):
            return f"it binds {count} descriptors counted by {name}, the device allows {lim[name]}"
    return None


def create_shader_module(ctx: Context, name: str):
    code = load_spirv(name)
    info = vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
    return call("vkCreateShaderModule", ctx.device, info, None, what=name)


class ComputePipeline:
    """The compute pipeline of one interface (one shader, one descriptor set, one push-constant range)."""

    def __init__(self, ctx: Context, iface: ShaderInterface, max_sets: int = 16, *,
                 specialization: Mapping[int, int] | None = None):
        # specialization: {constant_id: uint32 value} for the shader's specialization constants (the driver
        # compiles the shader with them as constants: branches on them fold away)
        if iface.local_size is None or iface.sets() not in ([0], []):
            raise GpuError(f"interface {iface.name!r} is not a one-set compute interface")
        why = limit_problem(ctx, iface, (specialization or {}).get(iface.local_size_id)
                            if iface.local_size_id is not None else None)
        if why:
            raise GpuError(f"{iface.shader}: {why}")
        self.ctx, self.iface, self.shader = ctx, iface, iface.shader
        self.specialization = dict(specialization or {})
        self.push_constant_size = iface.push.size if iface.push is not None else 0
        self.set_layout = self.layout = self.pipeline = self.pool = None
        dev = ctx.device
        module = None
        try:
            bindings = [vk.VkDescriptorSetLayoutBinding(binding=i, descriptorType=t, descriptorCount=1, stageFlags=s)
                        for i, t, s in set_layout_bindings(iface)]
            layout_info = vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(bindings), pBindings=bindings)
            self.set_layout = call("vkCreateDescriptorSetLayout", dev, layout_info, None, what=iface.name)
            ranges = [vk.VkPushConstantRange(stageFlags=push_constant_stages(iface), offset=0,
                                             size=self.push_constant_size)] if self.push_constant_size else []
            pl_info = vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=[self.set_layout],
                                                    pushConstantRangeCount=len(ranges),
                                                    pPushConstantRanges=ranges or None)
            self.layout = call("vkCreatePipelineLayout", dev, pl_info, None, what=iface.name)
            module = create_shader_module(ctx, self.shader)
            spec = None
            if self.specialization:
                ids = sorted(self.specialization)
                data = np.array([self.specialization[i] for i in ids], np.uint32)
                entries = [vk.VkSpecializationMapEntry(constantID=i, offset=4 * k, size=4) for k, i in enumerate(ids)]
                spec = vk.VkSpecializationInfo(mapEntryCount=len(entries), pMapEntries=entries, dataSize=data.nbytes,
                                               pData=vk.ffi.from_buffer(data))
            stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                       pName="main", pSpecializationInfo=spec)
            info = vk.VkComputePipelineCreateInfo(stage=stage, layout=self.layout)
            cache = ctx.pipeline_cache if ctx.pipeline_cache is not None else vk.VK_NULL_HANDLE
            result = call("vkCreateComputePipelines", dev, cache, 1, [info], None, what=self.shader)
            self.pipeline = result[0]  # a cdata array of one VkPipeline
            counts: dict[int, int] = {}
            for _, t, _ in set_layout_bindings(iface):
                counts[t] = counts.get(t, 0) + max_sets
            sizes = [vk.VkDescriptorPoolSize(type=t, descriptorCount=n) for t, n in counts.items()]
            pool_info = vk.VkDescriptorPoolCreateInfo(maxSets=max_sets, poolSizeCount=len(sizes), pPoolSizes=sizes)
            self.pool = call("vkCreateDescriptorPool", dev, pool_info, None, what=iface.name)
        except BaseException:
            self._release()
            raise
        finally:
            if module is not None:
                vk.vkDestroyShaderModule(dev, module, None)
        ctx.set_name(self.pipeline, vk.VK_OBJECT_TYPE_PIPELINE, f"compute pipeline {self.shader}")
        self._key = ctx.track(f"compute pipeline {self.shader}", self._release)

    def make_set(self, buffers: Mapping[str, Buffer | tuple[Buffer, int, int]]):
        """Allocate a descriptor set and point each named binding at its buffer (whole, or (buf, offset, range))."""
        names = [b.name for b in self.iface.bindings]
        missing, unknown = [n for n in names if n not in buffers], [n for n in buffers if n not in names]
        if missing or unknown:
            raise GpuError(f"{self.shader}: descriptor set needs {names}; missing {missing}, unknown {unknown}")
        alloc = vk.VkDescriptorSetAllocateInfo(descriptorPool=self.pool, descriptorSetCount=1,
                                               pSetLayouts=[self.set_layout])
        dset = call("vkAllocateDescriptorSets", self.ctx.device, alloc, what=f"{self.shader} (pool exhausted?)")[0]
        self.update_set(dset, buffers)
        return dset

    def update_set(self, dset, buffers: Mapping[str, object]) -> None:
        """Point the named bindings of ``dset`` at their buffers (whole, or (buf, offset, range); anything with a
        VkBuffer ``handle``, e.g. ``memory.HostImport``; a texel binding at a ``memory.TexelView``). The set must
        not be in use by pending work."""
        unknown = [n for n in buffers if n not in {b.name for b in self.iface.bindings}]
        if unknown:
            raise GpuError(f"{self.shader}: no bindings named {unknown}")
        infos, writes = [], []
        for b in self.iface.bindings:
            if b.name not in buffers:
                continue
            item = buffers[b.name]
            if b.kind == TEXEL:
                if not isinstance(item, TexelView) or item.view is None:     # a buffer, or a destroyed view
                    raise GpuError(f"{self.shader}: binding {b.name!r} is a texel buffer: it takes a live "
                                   f"memory.TexelView, got {type(item).__name__}")
                infos.append([item.view])
                writes.append(vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=b.binding, dstArrayElement=0,
                                                      descriptorCount=1, descriptorType=descriptor_type(b),
                                                      pTexelBufferView=infos[-1]))
                continue
            buf, off, rng = item if isinstance(item, tuple) else (item, 0, WHOLE_SIZE)
            infos.append([vk.VkDescriptorBufferInfo(buffer=buf.handle, offset=off, range=rng)])
            writes.append(vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=b.binding, dstArrayElement=0,
                                                  descriptorCount=1, descriptorType=descriptor_type(b),
                                                  pBufferInfo=infos[-1]))
        vk.vkUpdateDescriptorSets(self.ctx.device, len(writes), writes, 0, None)

    def groups(self, count: int) -> int:
        """Work groups covering ``count`` invocations (the interface's local size)."""
        return self.iface.groups(count)

    def bind(self, cb, descriptor_set, dynamic_offsets: list[int] | None = None) -> None:
        """Bind the pipeline and the set; ``dynamic_offsets``: one byte offset per dynamic (UNIFORM_ARRAY,
        STORAGE_DYNAMIC) binding, in binding order."""
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline)
        offsets = list(dynamic_offsets or [])
        vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.layout, 0, 1, [descriptor_set],
                                   len(offsets), offsets or None)

    def push(self, cb, data_ptr, size: int | None = None) -> None:
        """Push constants of the interface's dtype (``size`` defaults to its itemsize)."""
        vk.vkCmdPushConstants(cb, self.layout, push_constant_stages(self.iface), 0,
                              self.push_constant_size if size is None else size, data_ptr)

    def _release(self) -> None:
        dev = self.ctx.device
        for attr, fn in (("pool", vk.vkDestroyDescriptorPool), ("pipeline", vk.vkDestroyPipeline),
                         ("layout", vk.vkDestroyPipelineLayout),
                         ("set_layout", vk.vkDestroyDescriptorSetLayout)):
            h = getattr(self, attr)
            if h is not None:
                fn(dev, h, None)
                setattr(self, attr, None)

    def destroy(self) -> None:
        if self.pipeline is None and self.layout is None and self.set_layout is None:
            return
        self._release()
        self.ctx.untrack(self._key)
