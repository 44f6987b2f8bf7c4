"""Probe: on lavapipe (llvmpipe), which way of loading the bake's base vertices and storing its three output
planes is cheapest per frame-vertex? (No vkmorph changes; the bake kernel's math on synthetic data.)

A synthetic mesh (V vertices of asset/model.py's SKINNED_VERTEX layout, 1-4 influences) is baked for F frames
(palettes of J random affine joints a frame in a uniform buffer, FRAMES_PER_DRAW frames per dynamic offset, as
bake_ubo.comp) into positions, normals, tangents, by:

- compute (bake_body.glsl's pattern: an invocation owns a quad of 4 vertices, loads them once and loops over the
  frames of its dispatch, each plane's 12 floats as 3 vec4), with every combination of
    in:  the base vertices from a storage buffer (uvec4 loads, today) or a uniform texel buffer (usamplerBuffer,
         R32G32B32A32_UINT, texelFetch);
    out: storage-buffer vec4 stores (today) or imageStore to a storage texel buffer (imageBuffer, rgba32f) with
         the same [plane][frame][vertex][xyz] float layout;
- fragment: a full-screen triangle over three RGBA32F colour attachments (positions, normals, tangents) of
  V x F pixels (pixel (v, f) = vertex v at frame f, xyz + an unused w), one draw per FRAMES_PER_DRAW rows
  (scissor, the window's dynamic offset); the fragment shader reads its vertex through texelFetch on the
  uniform texel buffer, then vkCmdCopyImageToBuffer into one host-visible buffer (3 x F x V x 16 B).

Modes: skinned (four-bone blend as bake.comp: zero weights skipped), rigid (one node matrix: position by it,
normal by its cofactor, tangent by its 3x3, renormalized), copy (loads + stores only). Every result is compared
with a float64 numpy reference (max abs error). Each variant is one prerecorded command buffer timed as submit +
fence wait: wall and process CPU (all threads: on lavapipe the "GPU" is the host's cores), medians of --repeats
after a warm-up, the variants interleaved within a round. A child under the validation layer (synchronization
validation on) records, runs and checks every variant once and prints its messages.

    python bench/bake_raster_probe.py [--frames 64] [--vertices 7168] [--joints 50] [--repeats 9] [--out F.txt]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))
from probe_common import close_probe, emit, median_row  # noqa: E402
from xfb_probe import COPY, FRAMES_PER_DRAW, MODE_NAMES, RIGID, SKIN, compile_glsl, reference, synthetic  # noqa: E402

KINDS = ("compute, in SSBO, out SSBO", "compute, in texel, out SSBO", "compute, in SSBO, out imageStore",
         "compute, in texel, out imageStore", "fragment, RGBA32F, copy to buffer", "fragment, RGB32F, copy to buffer",
         "fragment, RGB32F linear, mapped")
# --palette: in SSBO, out SSBO (today's compute pattern) with the palette in the uniform buffer or a uniform texel
# buffer, the frame loop a loop or written out (UNROLL)
assert FRAMES_PER_DRAW == 16     # COMPUTE's UNROLL writes out 16 frames
# "offset uniform": rigid only, every frame of a dispatch reads the dispatch's first frame's matrix (checked
# against that), so the UBO offset is push constants only: the mechanism without the unrolling's other costs
PALETTE_KINDS = ("compute, palette UBO", "compute, palette texel", "compute, palette UBO, frames unrolled",
                 "compute, palette texel, frames unrolled", "compute, palette UBO, offset uniform")
TARGETS = {KINDS[4]: ("R32G32B32A32_SFLOAT", False), KINDS[5]: ("R32G32B32_SFLOAT", False),
           KINDS[6]: ("R32G32B32_SFLOAT", True)}

COMPUTE = """
layout(local_size_x = 64) in;
#if TEXEL_IN
layout(set = 0, binding = 0) uniform usamplerBuffer srcT;
#define SRC(i) texelFetch(srcT, int(i))
#else
layout(std430, set = 0, binding = 0) readonly buffer Src { uvec4 quads[]; } src;
#define SRC(i) src.quads[i]
#endif
#if PAL_TEXEL
// the palettes of all frames in a uniform texel buffer (RGBA32F): column c of matrix m at texel 4 m + c (no
// dynamic offset for a texel buffer: matrices are counted from frame 0)
layout(set = 0, binding = 1) uniform samplerBuffer palT;
#define PALCOL(m, c) texelFetch(palT, int(4 * (m) + (c)))
#define PAL_BASE(f) ((f) * pc.joints)
#else
layout(std140, set = 0, binding = 1) uniform Pal { mat4 m[FRAMES * JOINTS]; } pal;
#define PAL pal.m
#define PAL_BASE(f) (((f) - pc.frameFirst) * pc.joints)     // the binding starts at frameFirst (dynamic offset)
#endif
#if FIXED_FRAME
// a cost probe of the mechanism, not the bake: every frame of a dispatch reads its first frame's palette, so a
// rigid matrix's offset is push constants only (always uniform) inside the frame loop
#undef PAL_BASE
#define PAL_BASE(f) (0 * (f))
#endif
#if IMAGE_OUT
layout(set = 0, binding = 2, rgba32f) uniform writeonly imageBuffer dstI;
#define STORE(i, v) imageStore(dstI, int(i), v)
#else
layout(std430, set = 0, binding = 2) writeonly buffer Dst { vec4 values[]; } dst;
#define STORE(i, v) dst.values[i] = v
#endif
layout(push_constant) uniform PC { uint vertexCount; uint frameCount; uint joints; uint node; uint frameFirst;
                                   uint frameRun; } pc;
COMMON_HERE
// frame f of quad q: the palette matrices from PAL_BASE(f) on
void frame(uint q, uint f, uint base, vec3 p0[4], vec3 n0[4], vec3 t0[4], uvec4 j[4], vec4 w[4]) {
    vec3 p[4], n[4], t[4];
    uint plane = 3 * pc.vertexCount * pc.frameCount;
#if MODE == 1
    mat4 world = PALMAT(base + pc.node);
    mat3 a = mat3(world);
    mat3 cofactor = mat3(cross(a[1], a[2]), cross(a[2], a[0]), cross(a[0], a[1]));
    for (uint k = 0; k < 4; ++k) {
        p[k] = (world * vec4(p0[k], 1.0)).xyz;
        n[k] = unitOrZero(cofactor * n0[k]);
        t[k] = unitOrZero(a * t0[k]);
    }
#else
    for (uint k = 0; k < 4; ++k) {
        p[k] = p0[k]; n[k] = n0[k]; t[k] = t0[k];
        transformVertex(base, j[k], w[k], p[k], n[k], t[k]);
    }
#endif
    uint o = (3 * (f * pc.vertexCount) + 12 * q) / 4;
    uint pl = plane / 4;
    STORE(o, vec4(p[0], p[1].x)); STORE(o + 1, vec4(p[1].yz, p[2].xy)); STORE(o + 2, vec4(p[2].z, p[3]));
    STORE(pl + o, vec4(n[0], n[1].x)); STORE(pl + o + 1, vec4(n[1].yz, n[2].xy));
    STORE(pl + o + 2, vec4(n[2].z, n[3]));
    STORE(2 * pl + o, vec4(t[0], t[1].x)); STORE(2 * pl + o + 1, vec4(t[1].yz, t[2].xy));
    STORE(2 * pl + o + 2, vec4(t[2].z, t[3]));
}
void main() {
    uint q = gl_GlobalInvocationID.x;
    if (4 * q >= pc.vertexCount) return;
    vec3 p0[4], n0[4], t0[4];
    uvec4 j[4]; vec4 w[4];
    for (uint k = 0; k < 4; ++k) {
        uint b = 5 * (4 * q + k);
        vec4 a = uintBitsToFloat(SRC(b)), bb = uintBitsToFloat(SRC(b + 1)), c = uintBitsToFloat(SRC(b + 2));
        p0[k] = a.xyz; n0[k] = vec3(a.w, bb.xy); t0[k] = vec3(bb.zw, c.x);
#if MODE == 0
        j[k] = SRC(b + 3); w[k] = uintBitsToFloat(SRC(b + 4));
#else
        j[k] = uvec4(0); w[k] = vec4(0.0);
#endif
    }
#if UNROLL
    // the frames written out, FRAMES of them (frameRun is FRAMES in every dispatch): each frame's palette offset
    // is a literal times a push constant, plus push constants, so NIR's nir_src_is_always_uniform holds for a
    // rigid matrix's offset (llvmpipe: one scalar load, broadcast); the loop counter's phi would not
#define FR(i) frame(q, pc.frameFirst + i, PAL_BASE(pc.frameFirst + i), p0, n0, t0, j, w);
    FR(0) FR(1) FR(2) FR(3) FR(4) FR(5) FR(6) FR(7) FR(8) FR(9) FR(10) FR(11) FR(12) FR(13) FR(14) FR(15)
#else
    for (uint f = pc.frameFirst; f < pc.frameFirst + pc.frameRun; ++f) frame(q, f, PAL_BASE(f), p0, n0, t0, j, w);
#endif
}
"""

FULLSCREEN = """
void main() {                      // one triangle over the framebuffer: (-1,-1), (3,-1), (-1,3)
    vec2 uv = vec2((gl_VertexIndex << 1) & 2, gl_VertexIndex & 2);
    gl_Position = vec4(uv * 2.0 - 1.0, 0.0, 1.0);
}
"""

FRAGMENT = """
layout(set = 0, binding = 0) uniform usamplerBuffer srcT;
layout(std140, set = 0, binding = 1) uniform Pal { mat4 m[FRAMES * JOINTS]; } pal;
layout(push_constant) uniform PC { uint vertexCount; uint frameCount; uint joints; uint node; uint frameFirst;
                                   uint frameRun; } pc;
#define PAL pal.m
COMMON_HERE
layout(location = 0) out vec4 outPosition;
layout(location = 1) out vec4 outNormal;
layout(location = 2) out vec4 outTangent;
void main() {
    uint v = uint(gl_FragCoord.x), f = uint(gl_FragCoord.y);
    int b = int(5 * v);
    vec4 a = uintBitsToFloat(texelFetch(srcT, b)), bb = uintBitsToFloat(texelFetch(srcT, b + 1));
    vec4 c = uintBitsToFloat(texelFetch(srcT, b + 2));
    vec3 p = a.xyz, n = vec3(a.w, bb.xy), t = vec3(bb.zw, c.x);
#if MODE == 0
    uvec4 j = texelFetch(srcT, b + 3);
    vec4 w = uintBitsToFloat(texelFetch(srcT, b + 4));
#else
    uvec4 j = uvec4(0); vec4 w = vec4(0.0);
#endif
    transformVertex((f - pc.frameFirst) * pc.joints, j, w, p, n, t);
    outPosition = vec4(p, 0.0); outNormal = vec4(n, 0.0); outTangent = vec4(t, 0.0);
}
"""


def make_context(validation: bool):
    from vkmorph.gpu import context as C
    return C.Context.create(validation=validation, app_name="bake raster probe")


class Probe:
    def __init__(self, ctx, vert, pal, F: int, V: int, J: int, node: int, tmp: Path, skip_zero: int = 1):
        from vkmorph.gpu import barriers as B
        from vkmorph.gpu import graphics as G
        from vkmorph.gpu import memory as M
        from vkmorph.gpu.vk import call, vk
        self.vk, self.B, self.G, self.ctx, self.call = vk, B, G, ctx, call
        self.F, self.V, self.J, self.node, self.tmp, self.skip_zero = F, V, J, node, tmp, skip_zero
        self.group = G.ObjectGroup(ctx, "bake raster probe")
        dev = ctx.device
        self.plane_bytes = F * V * 12
        tb = vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT | vk.VK_BUFFER_USAGE_STORAGE_TEXEL_BUFFER_BIT
        self.src = self.group.own(M.Buffer(ctx, vert.nbytes, M.STORAGE | tb, host=True, name="vertices"))
        self.src.mapped[:] = vert.view(np.uint8)
        pal_cols = np.ascontiguousarray(pal.transpose(0, 1, 3, 2))
        self.pal = self.group.own(M.Buffer(ctx, pal_cols.nbytes, M.UNIFORM |
                                           vk.VK_BUFFER_USAGE_UNIFORM_TEXEL_BUFFER_BIT, host=True, name="palette"))
        self.pal.mapped[:] = pal_cols.view(np.uint8).reshape(-1)
        self.out = self.group.own(M.Buffer(ctx, 3 * self.plane_bytes, M.STORAGE | tb, host=True, name="planes"))
        self.img_bytes = F * V * 16
        self.img_out = self.group.own(M.Buffer(ctx, 3 * self.img_bytes, M.TRANSFER_DST, host=True,
                                               name="attachment readback"))

        def view(buf, fmt, n):
            info = vk.VkBufferViewCreateInfo(buffer=buf.handle, format=fmt, offset=0, range=n)
            return self.group.add(vk.vkDestroyBufferView, call("vkCreateBufferView", dev, info, None))
        self.src_view = view(self.src, vk.VK_FORMAT_R32G32B32A32_UINT, vert.nbytes)
        self.out_view = view(self.out, vk.VK_FORMAT_R32G32B32A32_SFLOAT, 3 * self.plane_bytes)
        self.pal_view = view(self.pal, vk.VK_FORMAT_R32G32B32A32_SFLOAT, pal_cols.nbytes)
        self.fence = self.group.add(vk.vkDestroyFence, call("vkCreateFence", dev, vk.VkFenceCreateInfo(), None))
        all_w = (vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT | vk.VK_ACCESS_HOST_READ_BIT)
        stages = vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT
        self.before = B.Barrier(   # the previous repeat's writes (and the host's read) before this one's writes
            "previous plane writes -> plane writes", stages | vk.VK_PIPELINE_STAGE_HOST_BIT, all_w,
            stages | vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
            vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFER_WRITE_BIT)
        self.after = B.Barrier(    # the planes, written by a dispatch or the attachments' copy, read by the host
            "compute / transfer write -> host read", stages, vk.VK_ACCESS_SHADER_WRITE_BIT |
            vk.VK_ACCESS_TRANSFER_WRITE_BIT, vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT)
        ut, st = vk.VK_DESCRIPTOR_TYPE_UNIFORM_TEXEL_BUFFER, vk.VK_DESCRIPTOR_TYPE_STORAGE_TEXEL_BUFFER
        sb, ud = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC
        self.pool = G.descriptor_pool(ctx, self.group, 16, {ut: 24, st: 16, sb: 32, ud: 16})
        self.chunk_bytes = FRAMES_PER_DRAW * J * 64

        def write(ds, binding, dtype, buf=None, bview=None, size=None):
            if bview is not None:
                w = vk.VkWriteDescriptorSet(dstSet=ds, dstBinding=binding, descriptorCount=1, descriptorType=dtype,
                                            pTexelBufferView=[bview])
                vk.vkUpdateDescriptorSets(dev, 1, [w], 0, None)
            else:
                G.write_buffer(ctx, ds, binding, dtype, buf.handle, 0, buf.size if size is None else size)
        cs = vk.VK_SHADER_STAGE_COMPUTE_BIT
        self.cs_layouts = {}
        for tin in (False, True):
            for iout in (False, True):
                for ptex in (False, True):      # the palette: dynamic uniform buffer, or a uniform texel buffer
                    sl = G.set_layout(ctx, self.group, [(0, ut if tin else sb, cs), (1, ut if ptex else ud, cs),
                                                        (2, st if iout else sb, cs)])
                    pl = G.pipeline_layout(ctx, self.group, [sl], 24, cs)
                    ds = G.allocate_set(ctx, self.pool, sl)
                    write(ds, 0, ut, bview=self.src_view) if tin else write(ds, 0, sb, self.src)
                    write(ds, 1, ut, bview=self.pal_view) if ptex else write(ds, 1, ud, self.pal,
                                                                             size=self.chunk_bytes)
                    write(ds, 2, st, bview=self.out_view) if iout else write(ds, 2, sb, self.out)
                    self.cs_layouts[(tin, iout, ptex)] = (pl, ds)
        fs = vk.VK_SHADER_STAGE_FRAGMENT_BIT
        sl = G.set_layout(ctx, self.group, [(0, ut, fs), (1, ud, fs)])
        self.fs_layout = G.pipeline_layout(ctx, self.group, [sl], 24, fs)
        self.fs_set = G.allocate_set(ctx, self.pool, sl)
        write(self.fs_set, 0, ut, bview=self.src_view)
        write(self.fs_set, 1, ud, self.pal, size=self.chunk_bytes)
        self.targets = {kind: self._target(*spec) for kind, spec in TARGETS.items()}
        self._keep = []

    def _target(self, fmt_name: str, linear: bool) -> dict:
        """Three colour attachments V x F of one format (positions, normals, tangents): optimal tiling, copied to
        a host-visible buffer after the pass; or linear tiling in host-visible memory, mapped (the attachments
        are the readback), GENERAL at the end of the pass."""
        vk, G, dev, V, F = self.vk, self.G, self.ctx.device, self.V, self.F
        fmt = getattr(vk, "VK_FORMAT_" + fmt_name)
        texel = 16 if "A32" in fmt_name else 12
        usage = vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | (0 if linear else vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT)
        images, views, maps, pitch = [], [], [], None
        for _ in range(3):
            info = vk.VkImageCreateInfo(
                imageType=vk.VK_IMAGE_TYPE_2D, format=fmt, extent=vk.VkExtent3D(V, F, 1), mipLevels=1, arrayLayers=1,
                samples=vk.VK_SAMPLE_COUNT_1_BIT,
                tiling=vk.VK_IMAGE_TILING_LINEAR if linear else vk.VK_IMAGE_TILING_OPTIMAL, usage=usage,
                sharingMode=vk.VK_SHARING_MODE_EXCLUSIVE, initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED)
            img = self.group.add(vk.vkDestroyImage, self.call("vkCreateImage", dev, info, None))
            req = vk.vkGetImageMemoryRequirements(dev, img)
            flags = (vk.VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | vk.VK_MEMORY_PROPERTY_HOST_COHERENT_BIT) if linear \
                else vk.VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT
            index = self.ctx.find_memory_type(req.memoryTypeBits, flags)
            mem = self.group.add(vk.vkFreeMemory, self.call("vkAllocateMemory", dev, vk.VkMemoryAllocateInfo(
                allocationSize=req.size, memoryTypeIndex=index), None))
            self.call("vkBindImageMemory", dev, img, mem, 0)
            rng = vk.VkImageSubresourceRange(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1,
                                             baseArrayLayer=0, layerCount=1)
            views.append(self.group.add(vk.vkDestroyImageView, self.call("vkCreateImageView", dev,
                         vk.VkImageViewCreateInfo(image=img, viewType=vk.VK_IMAGE_VIEW_TYPE_2D, format=fmt,
                                                  subresourceRange=rng), None)))
            images.append(img)
            if linear:
                lay = vk.vkGetImageSubresourceLayout(dev, img, vk.VkImageSubresource(
                    aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0, arrayLayer=0))
                pitch = int(lay.rowPitch)
                raw = vk.vkMapMemory(dev, mem, 0, req.size, 0)
                arr = np.frombuffer(raw, np.uint8, count=int(lay.offset) + pitch * F)[int(lay.offset):]
                maps.append(np.lib.stride_tricks.as_strided(arr.view(np.float32), (F, V, 3), (pitch, texel, 4)))
        final = vk.VK_IMAGE_LAYOUT_GENERAL if linear else vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
        atts = [vk.VkAttachmentDescription(format=fmt, samples=vk.VK_SAMPLE_COUNT_1_BIT,
                                           loadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
                                           storeOp=vk.VK_ATTACHMENT_STORE_OP_STORE,
                                           stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
                                           stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE,
                                           initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED, finalLayout=final)
                for _ in range(3)]
        refs = [vk.VkAttachmentReference(attachment=i, layout=vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL)
                for i in range(3)]
        sub = vk.VkSubpassDescription(pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS, colorAttachmentCount=3,
                                      pColorAttachments=refs)
        prev_stage = (vk.VK_PIPELINE_STAGE_HOST_BIT if linear else vk.VK_PIPELINE_STAGE_TRANSFER_BIT)
        after_stage = prev_stage
        after_access = vk.VK_ACCESS_HOST_READ_BIT if linear else vk.VK_ACCESS_TRANSFER_READ_BIT
        deps = [  # the previous repeat's read of the attachments (copy, or the host) before this one's writes
                vk.VkSubpassDependency(srcSubpass=vk.VK_SUBPASS_EXTERNAL, dstSubpass=0, srcStageMask=prev_stage,
                                       dstStageMask=vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                                       srcAccessMask=0, dstAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT),
                # the attachments' writes before their copy to the readback buffer (or the host's read)
                vk.VkSubpassDependency(srcSubpass=0, dstSubpass=vk.VK_SUBPASS_EXTERNAL,
                                       srcStageMask=vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
                                       dstStageMask=after_stage,
                                       srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                                       dstAccessMask=after_access)]
        rp = G._render_pass(self.ctx, self.group, atts, sub, deps)
        fb = G.framebuffer(self.ctx, self.group, rp, views, V, F)
        return {"images": images, "render_pass": rp, "framebuffer": fb, "linear": linear, "texel": texel,
                "maps": maps, "pitch": pitch, "pipelines": {}}

    def _module(self, code: bytes):
        vk = self.vk
        m = self.call("vkCreateShaderModule", self.ctx.device,
                      vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code), None)
        return m

    def compute_pipeline(self, mode: int, tin: bool, iout: bool, ptex: bool = False, unroll: bool = False,
                         fixed: bool = False):
        vk = self.vk
        code = compile_glsl(self.tmp, f"cs_{mode}_{int(tin)}_{int(iout)}_{int(ptex)}_{int(unroll)}_{int(fixed)}",
                            "comp", COMPUTE, {"MODE": mode, "TEXEL_IN": int(tin), "IMAGE_OUT": int(iout),
                                              "PAL_TEXEL": int(ptex), "UNROLL": int(unroll), "FIXED_FRAME": int(fixed),
                                              "SKIP_ZERO": self.skip_zero, "FRAMES": FRAMES_PER_DRAW,
                                              "JOINTS": self.J})
        module = self._module(code)
        try:
            stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                       pName="main")
            info = vk.VkComputePipelineCreateInfo(stage=stage, layout=self.cs_layouts[(tin, iout, ptex)][0])
            pipe = self.call("vkCreateComputePipelines", self.ctx.device, vk.VK_NULL_HANDLE, 1, [info], None)[0]
        finally:
            vk.vkDestroyShaderModule(self.ctx.device, module, None)
        return self.group.add(vk.vkDestroyPipeline, pipe)

    def fragment_pipeline(self, mode: int, target: dict):
        vk = self.vk
        vs = compile_glsl(self.tmp, "vs_full", "vert", FULLSCREEN, {"MODE": 2})
        fsc = compile_glsl(self.tmp, f"fs_{mode}", "frag", FRAGMENT, {"MODE": mode, "FRAMES": FRAMES_PER_DRAW,
                                                                     "JOINTS": self.J, "SKIP_ZERO": self.skip_zero})
        mods = [self._module(vs), self._module(fsc)]
        try:
            stages = [vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_VERTEX_BIT, module=mods[0],
                                                         pName="main"),
                      vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_FRAGMENT_BIT, module=mods[1],
                                                         pName="main")]
            vin = vk.VkPipelineVertexInputStateCreateInfo()
            ia = vk.VkPipelineInputAssemblyStateCreateInfo(topology=vk.VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST)
            vp = vk.VkPipelineViewportStateCreateInfo(viewportCount=1, scissorCount=1)
            rs = vk.VkPipelineRasterizationStateCreateInfo(polygonMode=vk.VK_POLYGON_MODE_FILL,
                                                           cullMode=vk.VK_CULL_MODE_NONE, lineWidth=1.0)
            ms = vk.VkPipelineMultisampleStateCreateInfo(rasterizationSamples=vk.VK_SAMPLE_COUNT_1_BIT)
            cba = [vk.VkPipelineColorBlendAttachmentState(blendEnable=vk.VK_FALSE, colorWriteMask=0xF)
                   for _ in range(3)]
            cb = vk.VkPipelineColorBlendStateCreateInfo(attachmentCount=3, pAttachments=cba)
            dyn = vk.VkPipelineDynamicStateCreateInfo(dynamicStateCount=2, pDynamicStates=[
                vk.VK_DYNAMIC_STATE_VIEWPORT, vk.VK_DYNAMIC_STATE_SCISSOR])
            info = vk.VkGraphicsPipelineCreateInfo(stageCount=2, pStages=stages, pVertexInputState=vin,
                                                   pInputAssemblyState=ia, pViewportState=vp,
                                                   pRasterizationState=rs, pMultisampleState=ms,
                                                   pColorBlendState=cb, pDynamicState=dyn, layout=self.fs_layout,
                                                   renderPass=target["render_pass"], subpass=0)
            pipe = self.call("vkCreateGraphicsPipelines", self.ctx.device, vk.VK_NULL_HANDLE, 1, [info], None)[0]
        finally:
            for m in mods:
                vk.vkDestroyShaderModule(self.ctx.device, m, None)
        return self.group.add(vk.vkDestroyPipeline, pipe)

    def _cb(self):
        vk = self.vk
        cb = self.call("vkAllocateCommandBuffers", self.ctx.device, vk.VkCommandBufferAllocateInfo(
            commandPool=self.ctx.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        self.group.add(lambda d, c, _: vk.vkFreeCommandBuffers(d, self.ctx.command_pool, 1, [c]), cb)
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
        self.B.record(cb, self.before)
        return cb

    def _finish(self, cb):
        self.B.record(cb, self.after)
        self.vk.vkEndCommandBuffer(cb)
        return cb

    def _pc(self, cb, layout, stage, first):
        pc = np.array([self.V, self.F, self.J, self.node, first, min(FRAMES_PER_DRAW, self.F - first)], np.uint32)
        self._keep.append(pc)
        self.vk.vkCmdPushConstants(cb, layout, stage, 0, 24, self.vk.ffi.from_buffer(pc))

    def record_compute(self, mode: int, tin: bool, iout: bool, ptex: bool = False, unroll: bool = False,
                       fixed: bool = False):
        vk = self.vk
        pipe = self.compute_pipeline(mode, tin, iout, ptex, unroll, fixed)
        layout, dset = self.cs_layouts[(tin, iout, ptex)]
        cb = self._cb()
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe)
        groups = -(-self.V // 256)
        for first in range(0, self.F, FRAMES_PER_DRAW):
            if ptex:                   # no dynamic offset: the shader counts the palettes from frame 0
                vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, [dset], 0, None)
            else:
                vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, [dset], 1,
                                           [first * self.J * 64])
            self._pc(cb, layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, first)
            vk.vkCmdDispatch(cb, groups, 1, 1)
        return self._finish(cb)

    def record_fragment(self, mode: int, kind: str):
        vk = self.vk
        tg = self.targets[kind]
        pipe = self.fragment_pipeline(mode, tg)
        cb = self._cb()
        rp = vk.VkRenderPassBeginInfo(renderPass=tg["render_pass"], framebuffer=tg["framebuffer"],
                                      renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0),
                                                             extent=vk.VkExtent2D(self.V, self.F)))
        vk.vkCmdBeginRenderPass(cb, rp, vk.VK_SUBPASS_CONTENTS_INLINE)
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, pipe)
        vk.vkCmdSetViewport(cb, 0, 1, [vk.VkViewport(0, 0, self.V, self.F, 0.0, 1.0)])
        for first in range(0, self.F, FRAMES_PER_DRAW):
            rows = min(FRAMES_PER_DRAW, self.F - first)
            vk.vkCmdSetScissor(cb, 0, 1, [vk.VkRect2D(offset=vk.VkOffset2D(0, first),
                                                      extent=vk.VkExtent2D(self.V, rows))])
            vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.fs_layout, 0, 1, [self.fs_set],
                                       1, [first * self.J * 64])
            self._pc(cb, self.fs_layout, vk.VK_SHADER_STAGE_FRAGMENT_BIT, first)
            vk.vkCmdDraw(cb, 3, 1, 0, 0)
        vk.vkCmdEndRenderPass(cb)
        if tg["linear"]:
            vk.vkEndCommandBuffer(cb)          # the pass's dependency orders its writes before the host's read
            return cb
        for i, im in enumerate(tg["images"]):
            region = vk.VkBufferImageCopy(
                bufferOffset=i * tg["texel"] * self.F * self.V, bufferRowLength=0, bufferImageHeight=0,
                imageSubresource=vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0,
                                                             baseArrayLayer=0, layerCount=1),
                imageOffset=vk.VkOffset3D(0, 0, 0), imageExtent=vk.VkExtent3D(self.V, self.F, 1))
            vk.vkCmdCopyImageToBuffer(cb, im, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, self.img_out.handle, 1,
                                      [region])
        return self._finish(cb)

    def run(self, cb):
        self.ctx.submit([cb], fence=self.fence)
        self.ctx.wait_fence(self.fence)

    def planes(self, kind):
        if kind.startswith("fragment"):
            tg = self.targets[kind]
            if tg["linear"]:
                return np.stack(tg["maps"])
            c = tg["texel"] // 4
            return self.img_out.view(np.float32, 3 * self.F * self.V * c).reshape(3, self.F, self.V, c)[..., :3]
        return self.out.view(np.float32, 3 * self.F * self.V * 3).reshape(3, self.F, self.V, 3)

    def destroy(self):
        self.group.destroy()


def child(a) -> dict:
    F, V, J, node = a.frames, a.vertices, a.joints, 3
    vert, pal = synthetic(V, F, J)
    ctx = make_context(a.validate)
    kinds = PALETTE_KINDS if a.palette else KINDS
    res = {"device": ctx.info.name, "rows": [], "messages": [], "kinds": kinds}
    probe = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            probe = Probe(ctx, vert, pal, F, V, J, node, Path(tmp), a.skip_zero)
            variants = []
            for mode in (SKIN, RIGID, COPY):
                refs = reference(vert, pal, mode, node)
                first_bits = None
                # --palette: copy reads no palette, one kind of it (the floor: loads and stores only)
                for kind in (kinds[:1] if a.palette and mode == COPY else kinds):
                    fixed = "offset uniform" in kind
                    if fixed and mode != RIGID:
                        continue
                    if kind.startswith("compute"):
                        cb = probe.record_compute(mode, "in texel" in kind, "imageStore" in kind,
                                                  "palette texel" in kind, "unrolled" in kind, fixed)
                    else:
                        cb = probe.record_fragment(mode, kind)
                    probe.out.mapped[:] = 0xFF
                    probe.img_out.mapped[:] = 0xFF
                    probe.run(cb)
                    got = np.array(probe.planes(kind))
                    if fixed:        # each dispatch's frames from its first frame's palette
                        held = np.repeat(pal[::FRAMES_PER_DRAW], FRAMES_PER_DRAW, axis=0)
                        err = float(np.max(np.abs(got - reference(vert, held, mode, node))))
                    else:
                        err = float(np.max(np.abs(got - refs)))
                    if first_bits is None:
                        first_bits = got.view(np.uint32)
                    # bit for bit the mode's first kind (today's pattern)?
                    same = None if fixed else bool(got.shape == first_bits.shape and
                                                   np.array_equal(got.view(np.uint32), first_bits))
                    variants.append({"mode": MODE_NAMES[mode], "kind": kind, "cb": cb, "err": err, "same": same,
                                     "wall": [], "cpu": []})
            for v in variants:
                probe.run(v["cb"])
            for _ in range(a.repeats):
                for v in variants:
                    t0, c0 = time.perf_counter(), time.process_time()
                    probe.run(v["cb"])
                    v["wall"].append(time.perf_counter() - t0)
                    v["cpu"].append(time.process_time() - c0)
            probe.vk.vkDeviceWaitIdle(ctx.device)
            if not a.palette:
                # the host's copy of the planes into a (3, F, V, 3) result, from each readback layout
                dst = np.empty((3, F, V, 3), np.float32)
                hc = {}
                for kind in (KINDS[0], *TARGETS):
                    src = probe.planes(kind) if not probe.targets.get(kind, {}).get("linear") else None
                    ts = []
                    for _ in range(max(3, a.repeats)):
                        c0 = time.process_time()
                        if src is None:           # the mapped attachments, one per plane
                            for i, mp in enumerate(probe.targets[kind]["maps"]):
                                dst[i] = mp
                        else:
                            dst[:] = src
                        ts.append(time.process_time() - c0)
                    hc[kind] = float(np.median(ts))
                res["host_copy"] = hc
                res["pitch"] = probe.targets[KINDS[6]]["pitch"]
            for v in variants:
                res["rows"].append(median_row(v))
    finally:
        close_probe(ctx, probe, res)
    return res


def report(res: dict, F: int, V: int, repeats: int) -> list[str]:
    fv = F * V
    kinds = res["kinds"]
    lines = [f"## {res['device']}, host {platform.node()} ({os.cpu_count()} CPUs, load {res['load']:.1f}); {F} frames "
             f"x {V:,} vertices ({fv:,} frame-vertices), 3 planes of xyz; median of {repeats}"]
    by = {}
    for r in res["rows"]:
        by[(r["mode"], r["kind"])] = r
        lines.append(f"  {r['mode']:<8} {r['kind']:<40} wall {r['wall'] * 1e3:7.1f} ms  CPU {r['cpu'] * 1e3:7.1f} ms"
                     f"  CPU per frame-vertex {r['cpu'] / fv * 1e9:6.1f} ns;  max |err| {r['err']:.2e}; "
                     + ("other frames' matrices" if r["same"] is None else
                        f"bits {'=' if r['same'] else '!='} {kinds[0]}"))
    lines.append(f"  CPU relative to the same mode's {kinds[0]}:")
    for mode in ("skinned", "rigid", "copy"):
        base = by[(mode, kinds[0])]["cpu"]
        rel = [f"{k}: {by[(mode, k)]['cpu'] / base:.2f}x" for k in kinds[1:] if (mode, k) in by]
        if rel:
            lines.append(f"    {mode:<8} " + ", ".join(rel))
    if "host_copy" in res:
        hc = res["host_copy"]
        lines.append("  host copy into the (3, F, V, 3) result (CPU): " + ", ".join(
            f"from {k} {v * 1e3:.1f} ms" for k, v in hc.items()))
        lines.append(f"  linear RGB32F row pitch {res['pitch']} B ({12 * V} B of vertices)")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=64)
    ap.add_argument("--vertices", type=int, default=7168)
    ap.add_argument("--joints", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--palette", action="store_true",
                    help="the palette kinds instead: uniform buffer or uniform texel buffer, frame loop or unrolled")
    ap.add_argument("--skip-zero", type=int, choices=(0, 1), default=1,
                    help="1: skinning skips zero weights (GPU bake); 0: reads all four joints (bake on CPU devices)")
    ap.add_argument("--out")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--validate", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--no-validate", action="store_true", help="skip the validation child")
    a = ap.parse_args()
    if a.vertices % 4 or a.frames % FRAMES_PER_DRAW:
        raise SystemExit(f"--vertices must be a multiple of 4, --frames of {FRAMES_PER_DRAW}")
    if a.child:
        print(json.dumps(child(a)))
        return
    flags = (" --palette" if a.palette else "") + f" --skip-zero {a.skip_zero}"
    lines = [f"# bench/bake_raster_probe.py --frames {a.frames} --vertices {a.vertices} --joints {a.joints} --repeats "
             f"{a.repeats}{flags}, {time.strftime('%Y-%m-%d %H:%M')} UTC, this 2-core lavapipe host (shared with "
             "other sessions: CPU time is the cost, wall shows the load). Synthetic mesh, SKINNED_VERTEX layout; "
             "skinned: 1-4 influences, "
             + ("zero weights skipped" if a.skip_zero else "all four joints read (zero weights too)")
             + "; rigid: one node matrix (push-constant index + the frame's base); copy: loads and stores only; "
             + ("palettes in a dynamic uniform buffer "
                f"({FRAMES_PER_DRAW} frames per dynamic offset) or a uniform texel buffer (RGBA32F, all frames); "
                f"frames unrolled: the {FRAMES_PER_DRAW} frames of a dispatch written out (literal offsets)."
                if a.palette else f"palettes in a uniform buffer, {FRAMES_PER_DRAW} frames per dynamic offset.")]
    base = [sys.executable, str(Path(__file__).resolve()), "--child", "--frames", str(a.frames), "--vertices",
            str(a.vertices), "--joints", str(a.joints), "--skip-zero", str(a.skip_zero)] + \
        (["--palette"] if a.palette else [])
    for validate in (False, True):
        if validate and a.no_validate:
            continue
        env = dict(os.environ)
        env["VKMORPH_VALIDATION"] = "1" if validate else "0"
        cmd = base + ["--repeats", "1" if validate else str(a.repeats)] + (["--validate"] if validate else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode:
            raise SystemExit(f"child failed (validate={validate}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        if validate:
            lines.append(f"## validation run (VK_LAYER_KHRONOS_validation + synchronization validation, every variant "
                         f"recorded, run and checked once): {len(res['messages'])} messages; leaks: "
                         f"{res['leaks'] or 'none'}; max |err| {max(r['err'] for r in res['rows']):.2e}")
            lines += [f"  {m[:300]}" for m in res["messages"]]
        else:
            lines += report(res, a.frames, a.vertices, a.repeats)
            if res["messages"] or res["leaks"]:
                lines.append(f"  messages: {res['messages']}; leaks: {res['leaks']}")
    emit(lines, a.out)


if __name__ == "__main__":
    main()
