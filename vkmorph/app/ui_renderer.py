"""A small Vulkan renderer for Dear ImGui draw data (imgui-bundle), drawn over the scene in its own render pass.

One overlay pass (colour LOAD/STORE, PRESENT_SRC in and out) per swapchain framebuffer, one alpha-blended
pipeline (glsl/ui.vert + ui.frag), per frame-in-flight host-visible vertex/index buffers that grow as needed,
and ImGui's texture protocol (``ImGuiBackendFlags_RendererHasTextures``): textures ImGui asks for are created,
updated (whole re-upload after the GPU is idle: rare, e.g. new glyph sizes) and destroyed here.
"""

from __future__ import annotations

import ctypes

import numpy as np

from ..errors import GpuError
from ..gpu import barriers
from ..gpu import graphics as G
from ..gpu import memory as M
from ..gpu.context import Context
from ..gpu.image import Image, Sampler
from ..gpu.interface import UI, UI_INPUT
from ..gpu.pipeline import create_shader_module, push_constant_stages, set_layout_bindings, vertex_input_attributes
from ..gpu.vk import call, vk

ATLAS_FORMAT = vk.VK_FORMAT_R8G8B8A8_UNORM


def overlay_render_pass(ctx: Context, group: G.ObjectGroup, color_format: int):
    """Colour only, contents kept (LOAD), PRESENT_SRC before and after: drawn after the scene's forward pass."""
    att = vk.VkAttachmentDescription(
        format=color_format, samples=vk.VK_SAMPLE_COUNT_1_BIT, loadOp=vk.VK_ATTACHMENT_LOAD_OP_LOAD,
        storeOp=vk.VK_ATTACHMENT_STORE_OP_STORE, stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
        stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE, initialLayout=vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
        finalLayout=vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR)
    ref = vk.VkAttachmentReference(attachment=0, layout=vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL)
    sub = vk.VkSubpassDescription(pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS, colorAttachmentCount=1,
                                  pColorAttachments=[ref])
    out = vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT
    rw = vk.VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT
    deps = [
        # scene_color_to_overlay_blend: the forward pass wrote the image; blending reads and writes it
        vk.VkSubpassDependency(srcSubpass=vk.VK_SUBPASS_EXTERNAL, dstSubpass=0, srcStageMask=out,
                               dstStageMask=out, srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                               dstAccessMask=rw),
        # overlay_to_transfer_read: a screenshot copies the finished image
        vk.VkSubpassDependency(srcSubpass=0, dstSubpass=vk.VK_SUBPASS_EXTERNAL, srcStageMask=out,
                               dstStageMask=vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                               srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                               dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT),
    ]
    info = vk.VkRenderPassCreateInfo(attachmentCount=1, pAttachments=[att], subpassCount=1, pSubpasses=[sub],
                                     dependencyCount=len(deps), pDependencies=deps)
    return group.add(vk.vkDestroyRenderPass, call("vkCreateRenderPass", ctx.device, info, None, what="imgui overlay"))


def _ui_pipeline(ctx: Context, group: G.ObjectGroup, layout, render_pass, vertex_size: int):
    modules = [create_shader_module(ctx, "ui.vert"), create_shader_module(ctx, "ui.frag")]
    try:
        stages = [vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_VERTEX_BIT, module=modules[0],
                                                     pName="main"),
                  vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_FRAGMENT_BIT, module=modules[1],
                                                     pName="main")]
        binding = vk.VkVertexInputBindingDescription(binding=0, stride=vertex_size,
                                                     inputRate=vk.VK_VERTEX_INPUT_RATE_VERTEX)
        attrs = [vk.VkVertexInputAttributeDescription(location=loc, binding=0, format=fmt, offset=off)
                 for loc, _, fmt, off in vertex_input_attributes(UI_INPUT.vertex)]
        vin = vk.VkPipelineVertexInputStateCreateInfo(vertexBindingDescriptionCount=1,
                                                      pVertexBindingDescriptions=[binding],
                                                      vertexAttributeDescriptionCount=len(attrs),
                                                      pVertexAttributeDescriptions=attrs)
        ia = vk.VkPipelineInputAssemblyStateCreateInfo(topology=vk.VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST)
        vp = vk.VkPipelineViewportStateCreateInfo(viewportCount=1, scissorCount=1)
        rs = vk.VkPipelineRasterizationStateCreateInfo(polygonMode=vk.VK_POLYGON_MODE_FILL,
                                                       cullMode=vk.VK_CULL_MODE_NONE,
                                                       frontFace=vk.VK_FRONT_FACE_COUNTER_CLOCKWISE, lineWidth=1.0)
        ms = vk.VkPipelineMultisampleStateCreateInfo(rasterizationSamples=vk.VK_SAMPLE_COUNT_1_BIT)
        ds = vk.VkPipelineDepthStencilStateCreateInfo(depthTestEnable=vk.VK_FALSE, depthWriteEnable=vk.VK_FALSE)
        blend = vk.VkPipelineColorBlendAttachmentState(
            blendEnable=vk.VK_TRUE, srcColorBlendFactor=vk.VK_BLEND_FACTOR_SRC_ALPHA,
            dstColorBlendFactor=vk.VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA, colorBlendOp=vk.VK_BLEND_OP_ADD,
            srcAlphaBlendFactor=vk.VK_BLEND_FACTOR_ONE, dstAlphaBlendFactor=vk.VK_BLEND_FACTOR_ONE_MINUS_SRC_ALPHA,
            alphaBlendOp=vk.VK_BLEND_OP_ADD,
            colorWriteMask=vk.VK_COLOR_COMPONENT_R_BIT | vk.VK_COLOR_COMPONENT_G_BIT | vk.VK_COLOR_COMPONENT_B_BIT
            | vk.VK_COLOR_COMPONENT_A_BIT)
        cbs = vk.VkPipelineColorBlendStateCreateInfo(attachmentCount=1, pAttachments=[blend])
        dyn_states = [vk.VK_DYNAMIC_STATE_VIEWPORT, vk.VK_DYNAMIC_STATE_SCISSOR]
        dyn = vk.VkPipelineDynamicStateCreateInfo(dynamicStateCount=2, pDynamicStates=dyn_states)
        info = vk.VkGraphicsPipelineCreateInfo(
            stageCount=2, pStages=stages, pVertexInputState=vin, pInputAssemblyState=ia, pViewportState=vp,
            pRasterizationState=rs, pMultisampleState=ms, pDepthStencilState=ds, pColorBlendState=cbs,
            pDynamicState=dyn, layout=layout, renderPass=render_pass, subpass=0)
        pipe = call("vkCreateGraphicsPipelines", ctx.device, vk.VK_NULL_HANDLE, 1, [info], None, what="imgui")[0]
    finally:
        for m in modules:
            vk.vkDestroyShaderModule(ctx.device, m, None)
    return group.add(vk.vkDestroyPipeline, pipe)


def _bytes(vector, item_size: int) -> np.ndarray:
    n = vector.size() * item_size
    if n == 0:
        return np.zeros(0, np.uint8)
    return np.ctypeslib.as_array((ctypes.c_uint8 * n).from_address(vector.data_address()))


class ImGuiRenderer:
    MAX_TEXTURES = 16

    def __init__(self, ctx: Context, color_format: int, frames_in_flight: int):
        from imgui_bundle import imgui

        self.imgui, self.ctx, self.n = imgui, ctx, frames_in_flight
        io = imgui.get_io()
        io.backend_flags |= imgui.BackendFlags_.renderer_has_textures.value
        io.backend_flags |= imgui.BackendFlags_.renderer_has_vtx_offset.value
        self.group = G.ObjectGroup(ctx, "imgui renderer")
        self.render_pass = overlay_render_pass(ctx, self.group, color_format)
        if imgui.VERTEX_SIZE != UI_INPUT.vertex.itemsize:
            raise GpuError(f"imgui-bundle's ImDrawVert is {imgui.VERTEX_SIZE} bytes; vkmorph's ui_vertex "
                           f"interface (gpu/interface.py UI_VERTEX) declares {UI_INPUT.vertex.itemsize}")
        self.set_layout = G.set_layout(ctx, self.group, set_layout_bindings(UI, 0))
        self.pool = G.descriptor_pool(ctx, self.group, self.MAX_TEXTURES,
                                      {vk.VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER: self.MAX_TEXTURES})
        self.layout = G.pipeline_layout(ctx, self.group, [self.set_layout], UI.push.size, push_constant_stages(UI))
        self.pipeline = _ui_pipeline(ctx, self.group, self.layout, self.render_pass, imgui.VERTEX_SIZE)
        self.sampler = Sampler(ctx)
        self.textures: dict[int, tuple[Image, object]] = {}
        self._free_sets: list = []  # descriptor sets of destroyed textures, reused (the pool frees none)
        self._next_id = 1
        self.vertex = [None] * frames_in_flight
        self.index = [None] * frames_in_flight
        self.push = np.zeros(4, np.float32)
        self.index_type = vk.VK_INDEX_TYPE_UINT16 if imgui.INDEX_SIZE == 2 else vk.VK_INDEX_TYPE_UINT32

    # ------------------------------------------------------------------ textures (RendererHasTextures)
    def update_textures(self) -> None:
        """Serve ImGui's texture requests; call after imgui.render(), before recording the frame."""
        imgui = self.imgui
        S = imgui.ImTextureStatus
        for tex in imgui.get_platform_io().textures:
            if tex.status == S.ok or tex.status == S.destroyed:
                continue
            if tex.status == S.want_create:
                self._create(tex)
            elif tex.status == S.want_updates:
                self.ctx.wait_idle()  # earlier frames may still sample it
                self._upload(self.textures[int(tex.get_tex_id())][0], tex.get_pixels_array(), first=False)
                tex.set_status(S.ok)
            elif tex.status == S.want_destroy and tex.unused_frames >= self.n:
                self.ctx.wait_idle()
                image, dset = self.textures.pop(int(tex.get_tex_id()))
                self._free_sets.append(dset)
                image.destroy()
                tex.set_tex_id(0)
                tex.set_status(S.destroyed)

    def _create(self, tex) -> None:
        pixels = np.ascontiguousarray(tex.get_pixels_array()).reshape(tex.height, tex.width, 4)
        image = Image(self.ctx, tex.width, tex.height, ATLAS_FORMAT,
                      vk.VK_IMAGE_USAGE_SAMPLED_BIT | vk.VK_IMAGE_USAGE_TRANSFER_DST_BIT,
                      vk.VK_IMAGE_ASPECT_COLOR_BIT, name="imgui texture")
        self._upload(image, pixels, first=True)
        dset = self._free_sets.pop() if self._free_sets else G.allocate_set(self.ctx, self.pool, self.set_layout)
        G.write_image(self.ctx, dset, UI["atlas"].binding, image.view, self.sampler.handle,
                      vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL)
        key = self._next_id
        self._next_id += 1
        self.textures[key] = (image, dset)
        tex.set_tex_id(key)
        tex.set_status(self.imgui.ImTextureStatus.ok)

    def _upload(self, image: Image, pixels: np.ndarray, first: bool) -> None:
        raw = np.ascontiguousarray(pixels, np.uint8).reshape(-1)
        staging = M.host_buffer(self.ctx, raw.nbytes, M.TRANSFER_SRC, name="imgui texture staging")
        try:
            staging.mapped[:raw.nbytes] = raw

            def record(cb):
                # first upload: a new image; later: the previous frames sampled it (all before this submission)
                barriers.record_image(cb, barriers.UNDEFINED_TO_TRANSFER_DST if first
                                      else barriers.SAMPLED_TO_TRANSFER_DST, image.handle)
                region = vk.VkBufferImageCopy(
                    bufferOffset=0, bufferRowLength=0, bufferImageHeight=0,
                    imageSubresource=vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT,
                                                                 mipLevel=0, baseArrayLayer=0, layerCount=1),
                    imageOffset=vk.VkOffset3D(0, 0, 0), imageExtent=vk.VkExtent3D(image.width, image.height, 1))
                vk.vkCmdCopyBufferToImage(cb, staging.handle, image.handle, vk.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL,
                                          1, [region])
                barriers.record_image(cb, barriers.UPLOADED_TO_SAMPLED, image.handle)

            self.ctx.submit_and_wait(record)
        finally:
            staging.destroy()

    # ------------------------------------------------------------------ per frame
    def _buffer(self, kind: str, slot: int, nbytes: int, usage: int):
        bufs = self.vertex if kind == "vertex" else self.index
        b = bufs[slot]
        if b is None or b.size < nbytes:
            if b is not None:
                b.destroy()
            b = bufs[slot] = M.host_buffer(self.ctx, max(nbytes, 64 << 10) * 2, usage, name=f"imgui {kind}")
        return b

    def record(self, cb, slot: int, framebuffer, width: int, height: int, draw_data) -> int:
        """The overlay pass with ImGui's draw lists; returns the number of draw calls."""
        imgui = self.imgui
        vsize, isize = imgui.VERTEX_SIZE, imgui.INDEX_SIZE
        lists = list(draw_data.cmd_lists)
        vtx = [_bytes(cl.vtx_buffer, vsize) for cl in lists]
        idx = [_bytes(cl.idx_buffer, isize) for cl in lists]
        vbytes, ibytes = sum(v.nbytes for v in vtx), sum(i.nbytes for i in idx)
        clear = vk.VkRenderPassBeginInfo(renderPass=self.render_pass, framebuffer=framebuffer,
                                         renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0),
                                                                extent=vk.VkExtent2D(width, height)))
        vk.vkCmdBeginRenderPass(cb, clear, vk.VK_SUBPASS_CONTENTS_INLINE)
        draws = 0
        if vbytes and ibytes:
            vb = self._buffer("vertex", slot, vbytes, M.VERTEX)
            ib = self._buffer("index", slot, ibytes, M.INDEX)
            vo = io_ = 0
            for v, i in zip(vtx, idx):
                vb.mapped[vo:vo + v.nbytes] = v
                ib.mapped[io_:io_ + i.nbytes] = i
                vo += v.nbytes
                io_ += i.nbytes
            vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.pipeline)
            vk.vkCmdBindVertexBuffers(cb, 0, 1, [vb.handle], [0])
            vk.vkCmdBindIndexBuffer(cb, ib.handle, 0, self.index_type)
            G.set_viewport(cb, width, height)
            dx, dy = draw_data.display_pos.x, draw_data.display_pos.y
            self.push[:] = (2.0 / draw_data.display_size.x, 2.0 / draw_data.display_size.y, 0.0, 0.0)
            self.push[2], self.push[3] = -1.0 - dx * self.push[0], -1.0 - dy * self.push[1]
            vk.vkCmdPushConstants(cb, self.layout, push_constant_stages(UI), 0, UI.push.size,
                                  M.cffi_pointer(self.push))
            sx, sy = draw_data.framebuffer_scale.x, draw_data.framebuffer_scale.y
            bound = None
            v_base = i_base = 0
            for cl, v, i in zip(lists, vtx, idx):
                for cmd in cl.cmd_buffer:
                    r = cmd.clip_rect
                    x0, y0 = max(0, int((r.x - dx) * sx)), max(0, int((r.y - dy) * sy))
                    x1, y1 = min(width, int((r.z - dx) * sx)), min(height, int((r.w - dy) * sy))
                    if x1 <= x0 or y1 <= y0 or cmd.elem_count == 0:
                        continue
                    key = int(cmd.tex_ref.get_tex_id())
                    if key in self.textures and key != bound:
                        vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 0, 1,
                                                   [self.textures[key][1]], 0, None)
                        bound = key
                    if bound is None:
                        continue
                    vk.vkCmdSetScissor(cb, 0, 1, [vk.VkRect2D(offset=vk.VkOffset2D(x0, y0),
                                                              extent=vk.VkExtent2D(x1 - x0, y1 - y0))])
                    vk.vkCmdDrawIndexed(cb, cmd.elem_count, 1, i_base + cmd.idx_offset,
                                        v_base + cmd.vtx_offset, 0)
                    draws += 1
                v_base += v.nbytes // vsize
                i_base += i.nbytes // isize
        vk.vkCmdEndRenderPass(cb)
        return draws

    def destroy(self) -> None:
        self.ctx.wait_idle()
        for image, _ in self.textures.values():
            image.destroy()
        self.textures.clear()
        for b in self.vertex + self.index:
            if b is not None:
                b.destroy()
        self.vertex = [None] * self.n
        self.index = [None] * self.n
        self.sampler.destroy()
        self.group.destroy()
