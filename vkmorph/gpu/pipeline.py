"""Compute pipelines over storage-buffer bindings, with their descriptor pool and sets.

Structs are built once here (cffi keeps only what Python keeps alive, so every nested create-info is a named
local until the call returns); per-frame code only binds and dispatches.
"""

from __future__ import annotations

from collections.abc import Sequence

from ..errors import GpuError
from .context import Context
from .memory import Buffer
from .shaders import load_spirv
from .vk import WHOLE_SIZE, vk


def create_shader_module(ctx: Context, name: str):
    code = load_spirv(name)
    info = vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code)
    return vk.vkCreateShaderModule(ctx.device, info, None)


class ComputePipeline:
    """``local_size`` is fixed in the shader; bindings 0..n-1 are storage buffers; one push-constant range."""

    def __init__(self, ctx: Context, shader: str, n_bindings: int, push_constant_size: int = 0,
                 max_sets: int = 16):
        self.ctx, self.shader, self.n_bindings = ctx, shader, n_bindings
        self.push_constant_size = push_constant_size
        self.set_layout = self.layout = self.pipeline = self.pool = None
        dev = ctx.device
        module = None
        try:
            bindings = [vk.VkDescriptorSetLayoutBinding(
                binding=i, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=1,
                stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT) for i in range(n_bindings)]
            layout_info = vk.VkDescriptorSetLayoutCreateInfo(bindingCount=n_bindings, pBindings=bindings)
            self.set_layout = vk.vkCreateDescriptorSetLayout(dev, layout_info, None)
            ranges = [vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_COMPUTE_BIT, offset=0,
                                             size=push_constant_size)] if push_constant_size else []
            pl_info = vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=[self.set_layout],
                                                    pushConstantRangeCount=len(ranges),
                                                    pPushConstantRanges=ranges or None)
            self.layout = vk.vkCreatePipelineLayout(dev, pl_info, None)
            module = create_shader_module(ctx, shader)
            stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                       pName="main")
            info = vk.VkComputePipelineCreateInfo(stage=stage, layout=self.layout)
            cache = ctx.pipeline_cache if ctx.pipeline_cache is not None else vk.VK_NULL_HANDLE
            result = vk.vkCreateComputePipelines(dev, cache, 1, [info], None)
            self.pipeline = result[0]  # a cdata array of one VkPipeline
            sizes = [vk.VkDescriptorPoolSize(type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                             descriptorCount=max(1, n_bindings * max_sets))]
            pool_info = vk.VkDescriptorPoolCreateInfo(maxSets=max_sets, poolSizeCount=1, pPoolSizes=sizes)
            self.pool = vk.vkCreateDescriptorPool(dev, pool_info, None)
        except vk.VkError as exc:
            self._release()
            raise GpuError(f"creating compute pipeline {shader}: {type(exc).__name__}") from None
        except BaseException:
            self._release()
            raise
        finally:
            if module is not None:
                vk.vkDestroyShaderModule(dev, module, None)
        ctx.set_name(self.pipeline, vk.VK_OBJECT_TYPE_PIPELINE, f"compute pipeline {shader}")
        self._key = ctx.track(f"compute pipeline {shader}", self._release)

    def make_set(self, buffers: Sequence[Buffer | tuple[Buffer, int, int]]):
        """Allocate a descriptor set and point binding i at ``buffers[i]`` (whole buffer or (buf, offset, range))."""
        if len(buffers) != self.n_bindings:
            raise GpuError(f"{self.shader}: {self.n_bindings} bindings, got {len(buffers)} buffers")
        alloc = vk.VkDescriptorSetAllocateInfo(descriptorPool=self.pool, descriptorSetCount=1,
                                               pSetLayouts=[self.set_layout])
        try:
            dset = vk.vkAllocateDescriptorSets(self.ctx.device, alloc)[0]
        except vk.VkError:
            raise GpuError(f"{self.shader}: descriptor pool exhausted") from None
        infos = []
        for b in buffers:
            buf, off, rng = (b, 0, WHOLE_SIZE) if isinstance(b, Buffer) else b
            infos.append(vk.VkDescriptorBufferInfo(buffer=buf.handle, offset=off, range=rng))
        writes = [vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=i, dstArrayElement=0, descriptorCount=1,
                                          descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                          pBufferInfo=[infos[i]]) for i in range(len(infos))]
        vk.vkUpdateDescriptorSets(self.ctx.device, len(writes), writes, 0, None)
        return dset

    def bind(self, cb, descriptor_set) -> None:
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.pipeline)
        vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, self.layout, 0, 1, [descriptor_set],
                                   0, None)

    def push(self, cb, data_ptr, size: int) -> None:
        vk.vkCmdPushConstants(cb, self.layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, size, data_ptr)

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
