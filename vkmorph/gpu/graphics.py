"""Graphics-side Vulkan objects: descriptor layouts/pools, render passes, framebuffers, graphics pipelines.

``ObjectGroup`` (= ``ownership.Owner``) holds a set of raw handles with their destroy functions as one tracked child
of the Context, so a pass (Sascha Willems' per-pass resource grouping) is created and released as a unit.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from .context import Context
from .ownership import Owner
from .pipeline import create_shader_module
from .vk import WHOLE_SIZE, call, vk

ObjectGroup = Owner  # raw handles released together, in reverse creation order (the Context's one ownership model)


def set_layout(ctx: Context, group: ObjectGroup, bindings: Sequence[tuple[int, int, int]]):
    """Descriptor set layout from (binding, VkDescriptorType, stage flags)."""
    b = [vk.VkDescriptorSetLayoutBinding(binding=i, descriptorType=t, descriptorCount=1, stageFlags=s)
         for i, t, s in bindings]
    info = vk.VkDescriptorSetLayoutCreateInfo(bindingCount=len(b), pBindings=b)
    return group.add(vk.vkDestroyDescriptorSetLayout, call("vkCreateDescriptorSetLayout", ctx.device, info, None))


def descriptor_pool(ctx: Context, group: ObjectGroup, max_sets: int, sizes: dict[int, int]):
    ps = [vk.VkDescriptorPoolSize(type=t, descriptorCount=max(1, n)) for t, n in sizes.items()]
    info = vk.VkDescriptorPoolCreateInfo(maxSets=max_sets, poolSizeCount=len(ps), pPoolSizes=ps)
    return group.add(vk.vkDestroyDescriptorPool, call("vkCreateDescriptorPool", ctx.device, info, None))


def allocate_set(ctx: Context, pool, layout):
    info = vk.VkDescriptorSetAllocateInfo(descriptorPool=pool, descriptorSetCount=1, pSetLayouts=[layout])
    return call("vkAllocateDescriptorSets", ctx.device, info)[0]


def write_buffer(ctx: Context, dset, binding: int, dtype: int, buffer_handle, offset: int = 0,
                 size: int = WHOLE_SIZE) -> None:
    info = [vk.VkDescriptorBufferInfo(buffer=buffer_handle, offset=offset, range=size)]
    w = vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=binding, descriptorCount=1, descriptorType=dtype,
                                pBufferInfo=info)
    vk.vkUpdateDescriptorSets(ctx.device, 1, [w], 0, None)


def write_image(ctx: Context, dset, binding: int, view, sampler, layout: int) -> None:
    info = [vk.VkDescriptorImageInfo(sampler=sampler, imageView=view, imageLayout=layout)]
    w = vk.VkWriteDescriptorSet(dstSet=dset, dstBinding=binding, descriptorCount=1,
                                descriptorType=vk.VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER, pImageInfo=info)
    vk.vkUpdateDescriptorSets(ctx.device, 1, [w], 0, None)


def _attachment(fmt: int, store: bool, final_layout: int, samples: int = 1, clear: bool = True):
    """An attachment cleared at load (or not loaded), stencil cleared with depth, contents discarded on entry."""
    load = vk.VK_ATTACHMENT_LOAD_OP_CLEAR if clear else vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE
    return vk.VkAttachmentDescription(
        format=fmt, samples=samples, loadOp=load,
        storeOp=vk.VK_ATTACHMENT_STORE_OP_STORE if store else vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
        stencilLoadOp=load, stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
        initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED, finalLayout=final_layout)


# ------------------------------------------------------------------------------ named subpass dependencies
# Like gpu/barriers.py for pipeline barriers: each render-pass dependency is named for what it orders.
_DEPTH_STAGES = vk.VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT | vk.VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT
_DEPTH_ACCESS = vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT | vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT
_ATTACHMENT_STAGES = vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT | _DEPTH_STAGES


def shadow_sampling_to_depth_write():
    """The previous frame's forward pass must be done sampling the shadow map before this frame writes it."""
    return vk.VkSubpassDependency(srcSubpass=vk.VK_SUBPASS_EXTERNAL, dstSubpass=0,
                                  srcStageMask=vk.VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT | _DEPTH_STAGES,
                                  dstStageMask=_DEPTH_STAGES, srcAccessMask=_DEPTH_ACCESS,
                                  dstAccessMask=_DEPTH_ACCESS)


def depth_write_to_fragment_sampling():
    """The forward pass samples the shadow map this pass wrote."""
    return vk.VkSubpassDependency(srcSubpass=0, dstSubpass=vk.VK_SUBPASS_EXTERNAL, srcStageMask=_DEPTH_STAGES,
                                  dstStageMask=vk.VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT,
                                  srcAccessMask=vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
                                  dstAccessMask=vk.VK_ACCESS_SHADER_READ_BIT)


def previous_frame_to_attachment_writes():
    """Earlier use of the attachments (writes, the MSAA resolve, the readback copy, presentation via the acquire
    semaphore at COLOR_ATTACHMENT_OUTPUT) before this frame clears and writes them."""
    return vk.VkSubpassDependency(
        srcSubpass=vk.VK_SUBPASS_EXTERNAL, dstSubpass=0,
        srcStageMask=_ATTACHMENT_STAGES | vk.VK_PIPELINE_STAGE_TRANSFER_BIT, dstStageMask=_ATTACHMENT_STAGES,
        srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
        dstAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | vk.VK_ACCESS_COLOR_ATTACHMENT_READ_BIT
        | _DEPTH_ACCESS)


def resolved_color_to_transfer_read():
    """The offscreen readback copies the finished (resolved) image."""
    return vk.VkSubpassDependency(srcSubpass=0, dstSubpass=vk.VK_SUBPASS_EXTERNAL,
                                  srcStageMask=vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                                  dstStageMask=vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                                  srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                                  dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT)


def _render_pass(ctx: Context, group: ObjectGroup, attachments: list, sub, deps: list):
    info = vk.VkRenderPassCreateInfo(attachmentCount=len(attachments), pAttachments=attachments, subpassCount=1,
                                     pSubpasses=[sub], dependencyCount=len(deps), pDependencies=deps)
    return group.add(vk.vkDestroyRenderPass, call("vkCreateRenderPass", ctx.device, info, None))


def shadow_render_pass(ctx: Context, group: ObjectGroup, depth_format: int):
    """Depth-only pass: shadow_sampling_to_depth_write (WAR) and depth_write_to_fragment_sampling (RAW)."""
    att = _attachment(depth_format, True, vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL)
    ref = vk.VkAttachmentReference(attachment=0, layout=vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
    sub = vk.VkSubpassDescription(pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS,
                                  pDepthStencilAttachment=[ref])
    return _render_pass(ctx, group, [att], sub, [shadow_sampling_to_depth_write(),
                                                 depth_write_to_fragment_sampling()])


def forward_render_pass(ctx: Context, group: ObjectGroup, color_format: int, depth_format: int,
                        color_final_layout: int, samples: int = 1):
    """Colour + depth(-stencil), one subpass (opaque, masked, blended, outline draws).

    ``color_final_layout`` is TRANSFER_SRC_OPTIMAL (offscreen readback) or PRESENT_SRC_KHR. With ``samples`` > 1
    the attachments are: 0 multisampled colour (not stored), 1 multisampled depth, 2 the single-sample target
    the subpass resolves into; framebuffers list their views in that order. With 1 sample: 0 target, 1 depth."""
    depth = _attachment(depth_format, False, vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL, samples)
    cref = vk.VkAttachmentReference(attachment=0, layout=vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL)
    dref = vk.VkAttachmentReference(attachment=1, layout=vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
    if samples > 1:
        color = _attachment(color_format, False, vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL, samples)
        target = _attachment(color_format, True, color_final_layout, clear=False)
        rref = vk.VkAttachmentReference(attachment=2, layout=vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL)
        attachments = [color, depth, target]
        sub = vk.VkSubpassDescription(pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS, colorAttachmentCount=1,
                                      pColorAttachments=[cref], pResolveAttachments=[rref],
                                      pDepthStencilAttachment=[dref])
    else:
        attachments = [_attachment(color_format, True, color_final_layout), depth]
        sub = vk.VkSubpassDescription(pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS, colorAttachmentCount=1,
                                      pColorAttachments=[cref], pDepthStencilAttachment=[dref])
    return _render_pass(ctx, group, attachments, sub, [previous_frame_to_attachment_writes(),
                                                       resolved_color_to_transfer_read()])


def framebuffer(ctx: Context, group: ObjectGroup, render_pass, views: Sequence, width: int, height: int):
    info = vk.VkFramebufferCreateInfo(renderPass=render_pass, attachmentCount=len(views), pAttachments=list(views),
                                      width=width, height=height, layers=1)
    return group.add(vk.vkDestroyFramebuffer, call("vkCreateFramebuffer", ctx.device, info, None))


STENCIL_NONE, STENCIL_WRITE, STENCIL_OUTSIDE = 0, 1, 2


@dataclass
class PipelineSpec:
    vertex_shader: str
    fragment_shader: str | None
    stride: int
    attributes: Sequence[tuple[int, int, int]]  # (location, VkFormat, offset) of binding 0
    depth_bias: bool = False
    color: bool = True
    extra_stride: int = 0                        # binding 1 (per-vertex colour, TEXCOORD_1), 0 = none
    extra_attributes: Sequence[tuple[int, int, int]] = ()
    samples: int = 1
    cull_back: bool = False                      # single-sided materials
    clockwise: bool = False                      # mirrored nodes (negative determinant) flip the winding
    blend: bool = False                          # alpha blending, no depth writes
    depth_test: bool = True
    stencil: int = STENCIL_NONE                  # WRITE: reference where drawn; OUTSIDE: draw where != reference


def _stencil_state(mode: int):
    keep, rep = vk.VK_STENCIL_OP_KEEP, vk.VK_STENCIL_OP_REPLACE
    if mode == STENCIL_WRITE:
        return vk.VkStencilOpState(failOp=keep, passOp=rep, depthFailOp=keep, compareOp=vk.VK_COMPARE_OP_ALWAYS,
                                   compareMask=0xFF, writeMask=0xFF, reference=0)
    return vk.VkStencilOpState(failOp=keep, passOp=keep, depthFailOp=keep, compareOp=vk.VK_COMPARE_OP_NOT_EQUAL,
                               compareMask=0xFF, writeMask=0, reference=0)


def graphics_pipeline(ctx: Context, group: ObjectGroup, spec: PipelineSpec, layout, render_pass):
    """Triangle list, dynamic viewport/scissor (and stencil reference), depth test LESS."""
    modules = [create_shader_module(ctx, spec.vertex_shader)]
    try:
        stages = [vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_VERTEX_BIT, module=modules[0],
                                                     pName="main")]
        if spec.fragment_shader:
            modules.append(create_shader_module(ctx, spec.fragment_shader))
            stages.append(vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_FRAGMENT_BIT,
                                                             module=modules[1], pName="main"))
        bindings = [vk.VkVertexInputBindingDescription(binding=0, stride=spec.stride,
                                                       inputRate=vk.VK_VERTEX_INPUT_RATE_VERTEX)]
        attrs = [vk.VkVertexInputAttributeDescription(location=loc, binding=0, format=fmt, offset=off)
                 for loc, fmt, off in spec.attributes]
        if spec.extra_stride:
            bindings.append(vk.VkVertexInputBindingDescription(binding=1, stride=spec.extra_stride,
                                                               inputRate=vk.VK_VERTEX_INPUT_RATE_VERTEX))
            attrs += [vk.VkVertexInputAttributeDescription(location=loc, binding=1, format=fmt, offset=off)
                      for loc, fmt, off in spec.extra_attributes]
        vin = vk.VkPipelineVertexInputStateCreateInfo(vertexBindingDescriptionCount=len(bindings),
                                                      pVertexBindingDescriptions=bindings,
                                                      vertexAttributeDescriptionCount=len(attrs),
                                                      pVertexAttributeDescriptions=attrs)
        ia = vk.VkPipelineInputAssemblyStateCreateInfo(topology=vk.VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST)
        vp = vk.VkPipelineViewportStateCreateInfo(viewportCount=1, scissorCount=1)
        rs = vk.VkPipelineRasterizationStateCreateInfo(
            polygonMode=vk.VK_POLYGON_MODE_FILL,
            cullMode=vk.VK_CULL_MODE_BACK_BIT if spec.cull_back else vk.VK_CULL_MODE_NONE,
            frontFace=vk.VK_FRONT_FACE_CLOCKWISE if spec.clockwise else vk.VK_FRONT_FACE_COUNTER_CLOCKWISE,
            lineWidth=1.0, depthBiasEnable=vk.VK_TRUE if spec.depth_bias else vk.VK_FALSE,
            depthBiasConstantFactor=1.25 if spec.depth_bias else 0.0,
            depthBiasSlopeFactor=1.75 if spec.depth_bias else 0.0)
        ms = vk.VkPipelineMultisampleStateCreateInfo(rasterizationSamples=spec.samples)
        stencil = _stencil_state(spec.stencil)
        ds = vk.VkPipelineDepthStencilStateCreateInfo(
            depthTestEnable=vk.VK_TRUE if spec.depth_test else vk.VK_FALSE,
            depthWriteEnable=vk.VK_FALSE if spec.blend or not spec.depth_test else vk.VK_TRUE,
            depthCompareOp=vk.VK_COMPARE_OP_LESS,
            stencilTestEnable=vk.VK_TRUE if spec.stencil != STENCIL_NONE else vk.VK_FALSE,
            front=stencil, back=stencil)
        blend_att = vk.VkPipelineColorBlendAttachmentState(
            blendEnable=vk.VK_TRUE if spec.blend else vk.VK_FALSE,
            srcColorBlendFactor=vk.VK_BLEND_FACTOR_SRC_ALPHA,
            dstColorBlendFactor=vk.VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA,
            colorBlendOp=vk.VK_BLEND_OP_ADD, srcAlphaBlendFactor=vk.VK_BLEND_FACTOR_ONE,
            dstAlphaBlendFactor=vk.VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA, alphaBlendOp=vk.VK_BLEND_OP_ADD,
            colorWriteMask=vk.VK_COLOR_COMPONENT_R_BIT | vk.VK_COLOR_COMPONENT_G_BIT
            | vk.VK_COLOR_COMPONENT_B_BIT | vk.VK_COLOR_COMPONENT_A_BIT)
        cb = vk.VkPipelineColorBlendStateCreateInfo(attachmentCount=1 if spec.color else 0,
                                                    pAttachments=[blend_att] if spec.color else None)
        dyn_states = [vk.VK_DYNAMIC_STATE_VIEWPORT, vk.VK_DYNAMIC_STATE_SCISSOR]
        if spec.stencil != STENCIL_NONE:
            dyn_states.append(vk.VK_DYNAMIC_STATE_STENCIL_REFERENCE)
        dyn = vk.VkPipelineDynamicStateCreateInfo(dynamicStateCount=len(dyn_states), pDynamicStates=dyn_states)
        info = vk.VkGraphicsPipelineCreateInfo(
            stageCount=len(stages), pStages=stages, pVertexInputState=vin, pInputAssemblyState=ia,
            pViewportState=vp, pRasterizationState=rs, pMultisampleState=ms, pDepthStencilState=ds,
            pColorBlendState=cb, pDynamicState=dyn, layout=layout, renderPass=render_pass, subpass=0)
        cache = ctx.pipeline_cache or vk.VK_NULL_HANDLE
        pipe = call("vkCreateGraphicsPipelines", ctx.device, cache, 1, [info], None)[0]
    finally:
        for m in modules:
            vk.vkDestroyShaderModule(ctx.device, m, None)
    return group.add(vk.vkDestroyPipeline, pipe)


def pipeline_layout(ctx: Context, group: ObjectGroup, set_layouts: Sequence, push_size: int, push_stages: int):
    ranges = [vk.VkPushConstantRange(stageFlags=push_stages, offset=0, size=push_size)]
    info = vk.VkPipelineLayoutCreateInfo(setLayoutCount=len(set_layouts), pSetLayouts=list(set_layouts),
                                         pushConstantRangeCount=1, pPushConstantRanges=ranges)
    return group.add(vk.vkDestroyPipelineLayout, call("vkCreatePipelineLayout", ctx.device, info, None))


def set_viewport(cb, width: int, height: int) -> None:
    vk.vkCmdSetViewport(cb, 0, 1, [vk.VkViewport(x=0.0, y=0.0, width=float(width), height=float(height),
                                                 minDepth=0.0, maxDepth=1.0)])
    vk.vkCmdSetScissor(cb, 0, 1, [vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(width, height))])
