#!/usr/bin/env python3
"""Embedding vkmorph in your own Vulkan renderer: your instance, device, queue, command buffers and fences.

The contract (docs/embedding.md): vkmorph wraps your handles (owning none of them) and never submits to your
queue or waits on your device. Each frame you call ``rt.record(cb, slot=...)`` in your command buffer, outside a
render pass, before your draws; it records the first-use uploads, the version-gated weight uploads and
dispatches, and the final barrier. ``rt.draws(slot)`` tells you what to bind and draw. When a frame's fence
signalled you report it with ``ctx.completed(serial)``; that releases staging buffers and anything destroyed
while in flight.

    python tools/embed_example.py [MODEL] [--png OUT.png [--size WxH] [--time T] [--weights W,..]]
                                  # default: the built-in scene; VKMORPH_VALIDATION=1 to validate

Prints what it checked: for the most-morphed primitive, the vertices the GPU produced in each of two frames in
flight against an independent numpy morph of the file; for a file without morph targets, the rest vertices.
With ``--png`` it then draws one more frame with its own render pass and pipelines (``Drawer`` below: every
``Draw``'s vertex buffer as binding 0, the primitive's COLOR_0 as binding 1, its material's base colour, the
joint palette for skinned primitives, a simple lambert light) at the pose ``vkmorph render MODEL --time T
[--weights W,..]`` renders (the first clip at T, then the weights on every morphing node), seen by the camera
that command frames, and writes it as a PNG; the suite compares the two images.
Exit status 0 when they match, 1 when not, 2 for a file vkmorph refuses, 3 for any validation message.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np
import vulkan as vk

from vkmorph import load_scene
from vkmorph.errors import VkmorphError
from vkmorph.gpu.context import Context
from vkmorph.morph.reference import morph_reference
from vkmorph.render.morph_pass import MorphRuntime

FRAMES_IN_FLIGHT = 2


class Host:
    """Your renderer's own set-up, in plain python-vulkan."""

    def __init__(self, validate: bool):
        self.messages: list[str] = []
        exts, layers, chain = [], [], None
        if validate:
            def on_message(severity, types, data, user):
                self.messages.append(vk.ffi.string(data.pMessage).decode(errors="replace"))
                return 0

            self._keep = on_message
            chain = vk.VkDebugUtilsMessengerCreateInfoEXT(
                messageSeverity=vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                messageType=vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT, pfnUserCallback=on_message)
            self._chain = chain
            exts, layers = ["VK_EXT_debug_utils"], ["VK_LAYER_KHRONOS_validation"]
        self.api_version = vk.VK_MAKE_VERSION(1, 2, 0)          # vkmorph needs Vulkan 1.2
        app = vk.VkApplicationInfo(pApplicationName="my-renderer", apiVersion=self.api_version)
        self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
            pApplicationInfo=app, enabledLayerCount=len(layers), ppEnabledLayerNames=layers,
            enabledExtensionCount=len(exts), ppEnabledExtensionNames=exts, pNext=chain or vk.ffi.NULL), None)
        self.physical = vk.vkEnumeratePhysicalDevices(self.instance)[0]
        self.family = next(i for i, q in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical))
                           if q.queueFlags & vk.VK_QUEUE_GRAPHICS_BIT and q.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
        qci = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.family, queueCount=1, pQueuePriorities=[1.0])
        self.features = vk.VkPhysicalDeviceFeatures()
        self.device = vk.vkCreateDevice(self.physical, vk.VkDeviceCreateInfo(
            queueCreateInfoCount=1, pQueueCreateInfos=[qci], pEnabledFeatures=self.features), None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self.pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, queueFamilyIndex=self.family), None)
        self.cbs = vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
            commandPool=self.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=FRAMES_IN_FLIGHT))
        self.fences = [vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(
            flags=vk.VK_FENCE_CREATE_SIGNALED_BIT), None) for _ in range(FRAMES_IN_FLIGHT)]

    def destroy(self) -> None:
        for f in self.fences:
            vk.vkDestroyFence(self.device, f, None)
        vk.vkDestroyCommandPool(self.device, self.pool, None)
        vk.vkDestroyDevice(self.device, None)
        vk.vkDestroyInstance(self.instance, None)


# ---- drawing: your render pass, pipelines and shaders (GLSL compiled with glslangValidator, glslang-tools) -------
VERTEX_GLSL = """#version 450
layout(location = 0) in vec3 inPosition;      // binding 0: the Draw's vertex buffer (vkmorph's morph output)
layout(location = 1) in vec3 inNormal;
#ifdef SKINNED
layout(location = 4) in uvec4 inJoints;
layout(location = 5) in vec4 inWeights;
layout(std430, set = 0, binding = 0) readonly buffer Palette { mat4 palette[]; };   // Draw.joint_palette
#endif
layout(location = 6) in vec4 inColor;         // binding 1: COLOR_0 of the primitive (1.0 where it has none)
// 128 bytes, the least maxPushConstantsSize a device may have: view-projection x world, the world matrix's
// 3x3 columns (for normals), the material's base colour
layout(push_constant) uniform Push { mat4 mvp; vec4 world0; vec4 world1; vec4 world2; vec4 baseColor; } pc;
layout(location = 0) out vec3 outNormal;
layout(location = 1) out vec4 outColor;
void main() {
    mat4 skin = mat4(1.0);
#ifdef SKINNED
    skin = inWeights.x * palette[inJoints.x] + inWeights.y * palette[inJoints.y]
         + inWeights.z * palette[inJoints.z] + inWeights.w * palette[inJoints.w];
#endif
    gl_Position = pc.mvp * skin * vec4(inPosition, 1.0);
    outNormal = mat3(pc.world0.xyz, pc.world1.xyz, pc.world2.xyz) * (mat3(skin) * inNormal);
    outColor = inColor * pc.baseColor;
}
"""
FRAGMENT_GLSL = """#version 450
layout(location = 0) in vec3 inNormal;
layout(location = 1) in vec4 inColor;
layout(location = 0) out vec4 outColor;
void main() {
    vec3 light = normalize(vec3(0.45, 1.0, 0.35));   // towards the sun of vkmorph's renderer
    float lambert = abs(dot(normalize(inNormal), light));   // two-sided: no back-face culling here
    outColor = vec4(inColor.rgb * (0.35 + 0.65 * lambert), 1.0);
}
"""
COLOR_FORMAT = vk.VK_FORMAT_R8G8B8A8_SRGB
DEPTH_FORMAT = vk.VK_FORMAT_D32_SFLOAT
PUSH_BYTES = 64 + 3 * 16 + 16


def compile_glsl(source: str, stage: str, defines: tuple[str, ...] = ()) -> bytes:
    """SPIR-V from GLSL with glslangValidator (your renderer would ship its SPIR-V)."""
    tool = shutil.which("glslangValidator")
    if tool is None:
        raise SystemExit("embed_example: --png needs glslangValidator (apt-get install glslang-tools)")
    with tempfile.TemporaryDirectory() as tmp:
        src, out = os.path.join(tmp, f"shader.{stage}"), os.path.join(tmp, "shader.spv")
        with open(src, "w") as f:
            f.write(source)
        subprocess.run([tool, "-V", *[f"-D{d}" for d in defines], "-o", out, src], check=True,
                       capture_output=True)
        with open(out, "rb") as f:
            return f.read()


class Drawer:
    """An offscreen colour + depth target, a render pass, two pipelines (static, skinned) and a readback buffer:
    what a host renderer already has, in plain python-vulkan."""

    def __init__(self, host: Host, width: int, height: int):
        self.host, self.width, self.height = host, width, height
        dev = host.device
        self.memory_props = vk.vkGetPhysicalDeviceMemoryProperties(host.physical)
        self.objects: list[tuple] = []            # (destroy function, handle), destroyed in reverse
        self.color, color_mem = self._image(COLOR_FORMAT, vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT
                                            | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT)
        self.depth, depth_mem = self._image(DEPTH_FORMAT, vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT)
        views = [self._view(self.color, COLOR_FORMAT, vk.VK_IMAGE_ASPECT_COLOR_BIT),
                 self._view(self.depth, DEPTH_FORMAT, vk.VK_IMAGE_ASPECT_DEPTH_BIT)]
        attachments = [
            vk.VkAttachmentDescription(format=COLOR_FORMAT, samples=vk.VK_SAMPLE_COUNT_1_BIT,
                                       loadOp=vk.VK_ATTACHMENT_LOAD_OP_CLEAR, storeOp=vk.VK_ATTACHMENT_STORE_OP_STORE,
                                       stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
                                       stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
                                       initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
                                       finalLayout=vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL),
            vk.VkAttachmentDescription(format=DEPTH_FORMAT, samples=vk.VK_SAMPLE_COUNT_1_BIT,
                                       loadOp=vk.VK_ATTACHMENT_LOAD_OP_CLEAR,
                                       storeOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
                                       stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
                                       stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
                                       initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
                                       finalLayout=vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL)]
        color_ref = vk.VkAttachmentReference(attachment=0, layout=vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL)
        depth_ref = vk.VkAttachmentReference(attachment=1,
                                             layout=vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
        subpass = vk.VkSubpassDescription(pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS,
                                          colorAttachmentCount=1, pColorAttachments=[color_ref],
                                          pDepthStencilAttachment=depth_ref)
        # the colour attachment's writes are done before the copy to the readback buffer
        to_copy = vk.VkSubpassDependency(srcSubpass=0, dstSubpass=vk.VK_SUBPASS_EXTERNAL,
                                         srcStageMask=vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                                         dstStageMask=vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                                         srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                                         dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT)
        self.render_pass = self._own(vk.vkDestroyRenderPass, vk.vkCreateRenderPass(dev, vk.VkRenderPassCreateInfo(
            attachmentCount=2, pAttachments=attachments, subpassCount=1, pSubpasses=[subpass], dependencyCount=1,
            pDependencies=[to_copy]), None))
        self.framebuffer = self._own(vk.vkDestroyFramebuffer, vk.vkCreateFramebuffer(dev, vk.VkFramebufferCreateInfo(
            renderPass=self.render_pass, attachmentCount=2, pAttachments=views, width=width, height=height,
            layers=1), None))
        palette_binding = vk.VkDescriptorSetLayoutBinding(binding=0,
                                                          descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                                          descriptorCount=1, stageFlags=vk.VK_SHADER_STAGE_VERTEX_BIT)
        self.set_layout = self._own(vk.vkDestroyDescriptorSetLayout, vk.vkCreateDescriptorSetLayout(
            dev, vk.VkDescriptorSetLayoutCreateInfo(bindingCount=1, pBindings=[palette_binding]), None))
        push = vk.VkPushConstantRange(stageFlags=vk.VK_SHADER_STAGE_VERTEX_BIT, offset=0, size=PUSH_BYTES)
        self.layout = self._own(vk.vkDestroyPipelineLayout, vk.vkCreatePipelineLayout(
            dev, vk.VkPipelineLayoutCreateInfo(setLayoutCount=1, pSetLayouts=[self.set_layout],
                                               pushConstantRangeCount=1, pPushConstantRanges=[push]), None))
        self.pool = self._own(vk.vkDestroyDescriptorPool, vk.vkCreateDescriptorPool(dev, vk.VkDescriptorPoolCreateInfo(
            maxSets=256, poolSizeCount=1, pPoolSizes=[vk.VkDescriptorPoolSize(
                type=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptorCount=256)]), None))
        self.fragment = self._module(compile_glsl(FRAGMENT_GLSL, "frag"))
        self.pipelines: dict[tuple, object] = {}
        self.readback, self.readback_mem = self._buffer(width * height * 4, vk.VK_BUFFER_USAGE_TRANSFER_DST_BIT)
        del color_mem, depth_mem

    # ------------------------------------------------------------------ plain Vulkan helpers
    def _own(self, destroy, handle):
        self.objects.append((destroy, handle))
        return handle

    def _memory_type(self, bits: int, flags: int) -> int:
        for i in range(self.memory_props.memoryTypeCount):
            if bits & (1 << i) and (self.memory_props.memoryTypes[i].propertyFlags & flags) == flags:
                return i
        raise SystemExit("embed_example: no suitable memory type")

    def _allocate(self, req, flags: int):
        mem = vk.vkAllocateMemory(self.host.device, vk.VkMemoryAllocateInfo(
            allocationSize=req.size, memoryTypeIndex=self._memory_type(req.memoryTypeBits, flags)), None)
        return self._own(vk.vkFreeMemory, mem)

    def _image(self, fmt: int, usage: int):
        dev = self.host.device
        img = vk.vkCreateImage(dev, vk.VkImageCreateInfo(
            imageType=vk.VK_IMAGE_TYPE_2D, format=fmt, extent=vk.VkExtent3D(self.width, self.height, 1),
            mipLevels=1, arrayLayers=1, samples=vk.VK_SAMPLE_COUNT_1_BIT, tiling=vk.VK_IMAGE_TILING_OPTIMAL,
            usage=usage, sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE, initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED), None)
        mem = self._allocate(vk.vkGetImageMemoryRequirements(dev, img), vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)
        self._own(vk.vkDestroyImage, img)          # destroyed before its memory is freed (reverse order)
        vk.vkBindImageMemory(dev, img, mem, 0)
        return img, mem

    def _view(self, image, fmt: int, aspect: int):
        return self._own(vk.vkDestroyImageView, vk.vkCreateImageView(self.host.device, vk.VkImageViewCreateInfo(
            image=image, viewType=vk.VK_IMAGE_VIEW_TYPE_2D, format=fmt,
            subresourceRange=vk.VkImageSubresourceRange(aspectMask=aspect, baseMipLevel=0, levelCount=1,
                                                        baseArrayLayer=0, layerCount=1)), None))

    def _buffer(self, size: int, usage: int):
        dev = self.host.device
        buf = vk.vkCreateBuffer(dev, vk.VkBufferCreateInfo(size=size, usage=usage,
                                                           sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE), None)
        mem = self._allocate(vk.vkGetBufferMemoryRequirements(dev, buf), vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
                             | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
        self._own(vk.vkDestroyBuffer, buf)
        vk.vkBindBufferMemory(dev, buf, mem, 0)
        return buf, mem

    def _host_buffer(self, data: np.ndarray, usage: int):
        data = np.ascontiguousarray(data)
        buf, mem = self._buffer(max(data.nbytes, 16), usage)
        ptr = vk.vkMapMemory(self.host.device, mem, 0, data.nbytes, 0)
        vk.ffi.memmove(ptr, vk.ffi.from_buffer(data), data.nbytes)
        vk.vkUnmapMemory(self.host.device, mem)
        return buf

    def _module(self, spirv: bytes):
        info = vk.VkShaderModuleCreateInfo(codeSize=len(spirv), pCode=spirv)
        return self._own(vk.vkDestroyShaderModule, vk.vkCreateShaderModule(self.host.device, info, None))

    # ------------------------------------------------------------------ pipelines from Draw.vertex_input
    def pipeline(self, d):
        """One pipeline per vertex layout: binding 0 is the Draw's vertex buffer as ``d.vertex_input``
        describes it (position, normal and, when skinned, joints/weights: the attributes this shader reads),
        binding 1 the primitive's colours (vec4 at location 6)."""
        skinned = d.joint_palette is not None
        used = {"position", "normal"} | ({"joints", "weights"} if skinned else set())
        attrs = [a for a in d.vertex_input.attributes if a[1] in used]
        key = (skinned, d.vertex_input.stride, tuple(attrs))
        if key in self.pipelines:
            return self.pipelines[key]
        vertex = self._module(compile_glsl(VERTEX_GLSL, "vert", ("SKINNED",) if skinned else ()))
        stages = [vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_VERTEX_BIT, module=vertex,
                                                     pName="main"),
                  vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_FRAGMENT_BIT, module=self.fragment,
                                                     pName="main")]
        bindings = [vk.VkVertexInputBindingDescription(binding=0, stride=d.vertex_input.stride,
                                                       inputRate=vk.VK_VERTEX_INPUT_RATE_VERTEX),
                    vk.VkVertexInputBindingDescription(binding=1, stride=16, inputRate=vk.VK_VERTEX_INPUT_RATE_VERTEX)]
        attributes = [vk.VkVertexInputAttributeDescription(location=loc, binding=0, format=fmt, offset=off)
                      for loc, _, fmt, off in attrs]
        attributes.append(vk.VkVertexInputAttributeDescription(location=6, binding=1,
                                                               format=vk.VK_FORMAT_R32G32B32A32_SFLOAT, offset=0))
        vertex_input = vk.VkPipelineVertexInputStateCreateInfo(
            vertexBindingDescriptionCount=2, pVertexBindingDescriptions=bindings,
            vertexAttributeDescriptionCount=len(attributes), pVertexAttributeDescriptions=attributes)
        assembly = vk.VkPipelineInputAssemblyStateCreateInfo(topology=vk.VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST)
        viewport = vk.VkViewport(x=0, y=0, width=self.width, height=self.height, minDepth=0.0, maxDepth=1.0)
        scissor = vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(self.width, self.height))
        viewport_state = vk.VkPipelineViewportStateCreateInfo(viewportCount=1, pViewports=[viewport],
                                                              scissorCount=1, pScissors=[scissor])
        raster = vk.VkPipelineRasterizationStateCreateInfo(polygonMode=vk.VK_POLYGON_MODE_FILL,
                                                           cullMode=vk.VK_CULL_MODE_NONE,
                                                           frontFace=vk.VK_FRONT_FACE_COUNTER_CLOCKWISE,
                                                           lineWidth=1.0)
        multisample = vk.VkPipelineMultisampleStateCreateInfo(rasterizationSamples=vk.VK_SAMPLE_COUNT_1_BIT)
        depth = vk.VkPipelineDepthStencilStateCreateInfo(depthTestEnable=vk.VK_TRUE, depthWriteEnable=vk.VK_TRUE,
                                                         depthCompareOp=vk.VK_COMPARE_OP_LESS)
        blend_attachment = vk.VkPipelineColorBlendAttachmentState(
            blendEnable=vk.VK_FALSE, colorWriteMask=vk.VK_COLOR_COMPONENT_R_BIT | vk.VK_COLOR_COMPONENT_G_BIT
            | vk.VK_COLOR_COMPONENT_B_BIT | vk.VK_COLOR_COMPONENT_A_BIT)
        blend = vk.VkPipelineColorBlendStateCreateInfo(attachmentCount=1, pAttachments=[blend_attachment])
        info = vk.VkGraphicsPipelineCreateInfo(
            stageCount=2, pStages=stages, pVertexInputState=vertex_input, pInputAssemblyState=assembly,
            pViewportState=viewport_state, pRasterizationState=raster, pMultisampleState=multisample,
            pDepthStencilState=depth, pColorBlendState=blend, layout=self.layout, renderPass=self.render_pass,
            subpass=0)
        pipe = vk.vkCreateGraphicsPipelines(self.host.device, vk.VK_NULL_HANDLE, 1, [info], None)[0]
        self.pipelines[key] = self._own(vk.vkDestroyPipeline, pipe)
        return self.pipelines[key]

    # ------------------------------------------------------------------ one frame
    def record(self, cb, scene, draws, view_proj: np.ndarray) -> None:
        """The render pass over every Draw, then the copy of the colour image to the readback buffer. Call after
        ``rt.record(cb, ...)``, whose final barrier orders the morph output before these vertex reads."""
        clear = [vk.VkClearValue(color=vk.VkClearColorValue(float32=[0.0, 0.0, 0.0, 1.0])),
                 vk.VkClearValue(depthStencil=vk.VkClearDepthStencilValue(depth=1.0, stencil=0))]
        vk.vkCmdBeginRenderPass(cb, vk.VkRenderPassBeginInfo(
            renderPass=self.render_pass, framebuffer=self.framebuffer,
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(self.width, self.height)),
            clearValueCount=2, pClearValues=clear), vk.VK_SUBPASS_CONTENTS_INLINE)
        for d in draws:
            prim = scene.meshes[scene.nodes[d.node].mesh].primitives[d.primitive]
            mat = prim.material
            base = np.asarray(mat.base_color_factor if mat is not None else (1, 1, 1, 1), np.float32)
            colors = (prim.colors if prim.colors is not None
                      else np.ones((prim.vertex_count, 4), np.float32)).astype(np.float32)
            color_buffer = self._host_buffer(colors, vk.VK_BUFFER_USAGE_VERTEX_BUFFER_BIT)
            vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.pipeline(d))
            if d.joint_palette is not None:
                palette = self._host_buffer(np.ascontiguousarray(np.transpose(d.joint_palette, (0, 2, 1)),
                                                                 np.float32), vk.VK_BUFFER_USAGE_STORAGE_BUFFER_BIT)
                ds = vk.vkAllocateDescriptorSets(self.host.device, vk.VkDescriptorSetAllocateInfo(
                    descriptorPool=self.pool, descriptorSetCount=1, pSetLayouts=[self.set_layout]))[0]
                info = vk.VkDescriptorBufferInfo(buffer=palette, offset=0, range=d.joint_palette.nbytes)
                vk.vkUpdateDescriptorSets(self.host.device, 1, [vk.VkWriteDescriptorSet(
                    dstSet=ds, dstBinding=0, descriptorCount=1, descriptorType=vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                    pBufferInfo=[info])], 0, None)
                vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 0, 1, [ds], 0, None)
            # column-major mat4s for GLSL: the transposes of numpy's row-major matrices
            mvp = (view_proj @ d.world).astype(np.float32)
            columns = np.zeros((3, 4), np.float32)
            columns[:, :3] = d.world[:3, :3].T       # column j of the world matrix's 3x3
            push = np.concatenate([mvp.T.reshape(-1), columns.reshape(-1), base])
            vk.vkCmdPushConstants(cb, self.layout, vk.VK_SHADER_STAGE_VERTEX_BIT, 0, PUSH_BYTES,
                                  vk.ffi.from_buffer(np.ascontiguousarray(push, np.float32)))
            vk.vkCmdBindVertexBuffers(cb, 0, 2, [d.vertex_buffer, color_buffer], [d.vertex_offset, 0])
            vk.vkCmdBindIndexBuffer(cb, d.index_buffer, d.index_offset, d.index_type)
            vk.vkCmdDrawIndexed(cb, d.index_count, 1, d.first_index, 0, 0)
        vk.vkCmdEndRenderPass(cb)
        region = vk.VkBufferImageCopy(
            bufferOffset=0, bufferRowLength=0, bufferImageHeight=0,
            imageSubresource=vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0,
                                                         baseArrayLayer=0, layerCount=1),
            imageOffset=vk.VkOffset3D(0, 0, 0), imageExtent=vk.VkExtent3D(self.width, self.height, 1))
        vk.vkCmdCopyImageToBuffer(cb, self.color, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, self.readback, 1, [region])
        to_host = vk.VkMemoryBarrier(srcAccessMask=vk.VK_ACCESS_TRANSFER_WRITE_BIT,
                                     dstAccessMask=vk.VK_ACCESS_HOST_READ_BIT)
        vk.vkCmdPipelineBarrier(cb, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                                [to_host], 0, None, 0, None)

    def pixels(self) -> np.ndarray:
        """(H, W, 4) uint8 sRGB, after the frame's fence signalled."""
        n = self.width * self.height * 4
        ptr = vk.vkMapMemory(self.host.device, self.readback_mem, 0, n, 0)
        out = np.frombuffer(ptr, np.uint8, count=n).copy().reshape(self.height, self.width, 4)
        vk.vkUnmapMemory(self.host.device, self.readback_mem)
        return out

    def destroy(self) -> None:
        for destroy, handle in reversed(self.objects):
            destroy(self.host.device, handle, None)
        self.objects.clear()


def frame_camera(rt: MorphRuntime, aspect: float) -> np.ndarray:
    """The view-projection ``vkmorph render`` frames the model with (vkmorph's orbit camera over the posed world
    bounds, its default yaw and pitch), so the test can compare the two images."""
    from vkmorph.render.camera import OrbitCamera

    lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
    for inst in rt.instances:
        b = rt.bounds(inst.node, inst.prim_index, space="world")
        lo, hi = np.minimum(lo, b[0]), np.maximum(hi, b[1])
    return OrbitCamera.frame(lo, hi).view_proj(aspect)



def most_morphed(rt: MorphRuntime):
    """The morphing primitive with the most stored deltas (a primitive with none would prove nothing)."""
    best = max(rt.morphing, key=lambda i: i.delta_count, default=None)
    return best if best is not None and best.delta_count > 0 else None


def draw_frame(host: Host, ctx: Context, rt: MorphRuntime, scene, args) -> None:
    from PIL import Image

    from vkmorph.anim.player import AnimationPlayer

    w, h = (int(v) for v in args.size.lower().split("x"))
    for node in rt.pose.morph_nodes:              # the file's default weights, as a freshly loaded model has
        dw = scene.nodes[node].default_weights
        n = len(rt.pose.weights(node))
        rt.set_weights(node, dw if dw is not None and len(dw) == n else np.zeros(n))
    if scene.animations:                          # as vkmorph render: the first clip at --time, clamped
        player = AnimationPlayer(scene, rt.pose, rt.skeleton)
        player.clip = scene.animations[0]
        player.apply(min(max(args.time, 0.0), scene.animations[0].duration))
    if args.weights:
        weights = [float(x) for x in args.weights.split(",")]
        for node in rt.pose.morph_nodes:
            rt.set_weights(node, weights)
    drawer = Drawer(host, w, h)
    slot = 0
    vk.vkWaitForFences(host.device, 1, [host.fences[slot]], vk.VK_TRUE, 10**10)
    vk.vkResetFences(host.device, 1, [host.fences[slot]])
    cb = host.cbs[slot]
    vk.vkResetCommandBuffer(cb, 0)
    vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
    rt.record(cb, slot=slot)                      # morph, then the compute -> vertex-input barrier
    drawer.record(cb, scene, rt.draws(slot=slot), frame_camera(rt, w / h))
    vk.vkEndCommandBuffer(cb)
    vk.vkQueueSubmit(host.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cb])],
                     host.fences[slot])
    serial = ctx.last_serial
    vk.vkWaitForFences(host.device, 1, [host.fences[slot]], vk.VK_TRUE, 10**10)
    ctx.completed(serial)
    Image.fromarray(drawer.pixels()).save(args.png)
    drawer.destroy()
    print(f"drew {len(rt.draws())} draws with this host's pipelines -> {args.png} ({w}x{h})")


def parse_args(argv: list[str]):
    ap = argparse.ArgumentParser(prog="embed_example.py", description=__doc__.split("\n\n")[0])
    ap.add_argument("model", nargs="?", help="a model file (default: vkmorph's built-in scene)")
    ap.add_argument("--png", help="also draw a frame with this host's own pipelines and write it here")
    ap.add_argument("--size", default="320x240", help="WxH of the drawn frame")
    ap.add_argument("--time", type=float, default=0.0, help="seconds into the first clip for the drawn frame")
    ap.add_argument("--weights", help="comma-separated weights on every morphing node for the drawn frame")
    return ap.parse_args(argv)


def main(argv: list[str]) -> int:
    args = parse_args(argv)
    try:
        scene = load_scene(args.model)
    except VkmorphError as exc:
        print(f"embed_example: {exc}", file=sys.stderr)
        return 2
    host = Host(os.environ.get("VKMORPH_VALIDATION", "0") == "1")

    # ---- vkmorph: wrap your handles (checked: API version, queue family, features), build the runtime ---------
    ctx = Context.from_external(host.instance, host.physical, host.device, host.queue, host.family,
                                api_version=host.api_version, enabled_features=host.features)
    rt = MorphRuntime(ctx, scene, slots=FRAMES_IN_FLIGHT)       # one output slot per frame in flight
    if not rt.instances:
        print("the file draws no mesh: nothing to check")
        rt.destroy()
        ctx.destroy()
        host.destroy()
        return 0
    inst = most_morphed(rt)
    target = inst if inst is not None else rt.instances[0]
    serials = [0] * FRAMES_IN_FLIGHT
    readbacks, expected = [], []

    # ---- your frame loop ------------------------------------------------------------------------------------
    for frame in range(2 * FRAMES_IN_FLIGHT):
        slot = frame % FRAMES_IN_FLIGHT
        vk.vkWaitForFences(host.device, 1, [host.fences[slot]], vk.VK_TRUE, 10**10)   # this slot's last frame
        ctx.completed(serials[slot])                                                  # ... is done: tell vkmorph
        vk.vkResetFences(host.device, 1, [host.fences[slot]])
        weights = None
        if inst is not None:
            weights = np.linspace(0.2, 0.9, inst.target_count) * (1 + frame) / (2 * FRAMES_IN_FLIGHT)
            rt.set_weights(inst.node, weights)
        cb = host.cbs[slot]
        vk.vkResetCommandBuffer(cb, 0)
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
        rt.record(cb, slot=slot)              # uploads + dispatches + compute -> vertex-input barrier
        for d in rt.draws(slot=slot):         # ... inside your render pass you would, per draw:
            _ = (d.vertex_buffer, d.vertex_offset, d.vertex_input, d.index_buffer, d.index_type, d.index_count,
                 d.world, d.joint_palette)    # vkCmdBindVertexBuffers / BindIndexBuffer / push d.world / draw
        if frame >= FRAMES_IN_FLIGHT:         # for this example: copy the morph output back to check it
            readbacks.append(rt.record_readback(cb, target.node, target.prim_index, slot=slot))
            expected.append(weights)
        vk.vkEndCommandBuffer(cb)
        vk.vkQueueSubmit(host.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cb])],
                         host.fences[slot])
        serials[slot] = ctx.last_serial       # everything vkmorph recorded so far is done once this fence signals

    # ---- check what the GPU produced against an independent numpy morph of the file -------------------------
    vk.vkWaitForFences(host.device, FRAMES_IN_FLIGHT, host.fences, vk.VK_TRUE, 10**10)
    ctx.completed()
    errors = []
    for rb, w in zip(readbacks, expected):
        out = rb.vertices()
        if w is None:
            errors.append(float(np.abs(out["position"] - target.prim.vertices["position"]).max()))
        else:
            p, _, _ = morph_reference(target.prim, w)
            errors.append(float(np.abs(out["position"] - p).max()))
    size = float(np.ptp(target.prim.vertices["position"], axis=0).max()) or 1.0
    what = (f"morph of node {scene.nodes[target.node].name!r} primitive {target.prim_index} "
            f"({target.delta_count} deltas, {target.target_count} targets)" if inst is not None
            else f"rest vertices of node {scene.nodes[target.node].name!r} (the file has no morph targets)")
    stats = rt.memory_stats()
    print(f"checked the {what} in {len(readbacks)} frames in flight; {len(rt.draws())} draws; "
          f"{stats['buffers']} buffers in {stats['allocations']} allocations; "
          f"max error vs numpy reference {max(errors):.2e}")

    # ---- one more frame, drawn by this host: the pose `vkmorph render MODEL --time T [--weights ..]` shows -------
    if args.png:
        draw_frame(host, ctx, rt, scene, args)

    # ---- teardown: vkmorph first (only its own objects), then yours -----------------------------------------
    rt.destroy()
    ctx.destroy()
    host.destroy()
    if host.messages:
        print("\n".join(host.messages), file=sys.stderr)
        return 3
    return 0 if max(errors) <= 1e-5 * size else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
