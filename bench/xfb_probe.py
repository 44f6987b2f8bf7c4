"""Probe: on lavapipe (llvmpipe), is a vertex shader with transform feedback (VK_EXT_transform_feedback, rasterizer
discard) cheaper per frame-vertex than a compute kernel with storage-buffer stores, for the bake's work?

A synthetic mesh (V vertices of asset/model.py's SKINNED_VERTEX layout, 1-4 influences) is baked for F frames
(palettes of J joints per frame, random affine matrices) into three float32 planes [frame][vertex][xyz]
(positions, normals, tangents), the layout of a Bake's arrays, by:

- compute, one vertex per invocation (the seed layout of bake.comp): an invocation reads its vertex once and
  loops over the frames, 9 scalar float stores per frame; palette in a storage buffer;
- compute, a quad of 4 vertices per invocation (today's bake.comp pattern: each plane's 12 floats as 3 vec4
  stores, a rigid matrix read once per quad and frame); palette in a storage buffer;
- vertex shader + transform feedback: point list, non-indexed, frames as instances (instance i's vertices land
  after instance i-1's, so each XFB buffer *is* one plane), rasterizerDiscardEnable, three XFB buffers of stride
  12; the palette in a uniform buffer (16 frames per draw: maxUniformBufferRange is 64 KiB; dynamic offset) or
  a storage buffer (same draws), both bound per draw with a dynamic offset.

Modes: skinned (four-bone linear blend as bake.comp: zero weights skipped, normal/tangent by the 3x3, renormalized,
input kept when degenerate), rigid (one node matrix for the whole mesh, from the frame's palette: position by it,
normal by its cofactor, tangent by its 3x3, both renormalized, zero when degenerate), copy (stores only).
Every result is compared with a float64 numpy reference (max abs error printed). Each variant is one prerecorded
command buffer timed as submit + fence wait: wall (perf_counter), process CPU (all threads: on lavapipe the
"GPU" is the host's cores) and this thread's CPU (the Python thread), medians of --repeats rounds after a
warm-up, the variants interleaved within a round so load changes hit all alike. The parent re-runs itself with
LP_NUM_THREADS unset and set to 1 (the driver reads it at device creation), and once under the Khronos
validation layer (synchronization validation on) with the messages printed.

    python bench/xfb_probe.py [--frames 64] [--vertices 7168] [--joints 50] [--repeats 9] [--out FILE.txt]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_common import close_probe, emit, median_row  # noqa: E402

SKIN, RIGID, COPY = 0, 1, 2
MODE_NAMES = {SKIN: "skinned", RIGID: "rigid", COPY: "copy"}
KINDS = ("compute, vertex/inv, SSBO", "compute, vertex/inv, UBO", "compute, quad/inv, SSBO", "compute, quad/inv, UBO",
         "xfb, palette SSBO", "xfb, palette UBO")
FRAMES_PER_DRAW = 16          # UBO palette chunk: 16 frames x 50 joints x 64 B = 51,200 B <= 64 KiB

COMMON = """
#version 450
const uint SKIN = 0u, RIGID = 1u, COPY = 2u;
vec3 unitOrZero(vec3 v) { float l = length(v); return l > 1e-20 ? v / l : vec3(0.0); }
// bake.comp's skinVertex (skinning.glsl): position by the weighted matrix, normal/tangent by its 3x3
void skinVertex(mat4 skin, inout vec3 position, inout vec3 normal, inout vec3 tangent) {
    position = (skin * vec4(position, 1.0)).xyz;
    mat3 r = mat3(skin);
    vec3 n = r * normal;
    vec3 t = r * tangent;
    normal = dot(n, n) > 1e-12 ? normalize(n) : normal;
    tangent = dot(t, t) > 1e-12 ? normalize(t) : tangent;
}
// column c of palette matrix m (bake_raster_probe.py defines it for a palette in a uniform texel buffer)
#ifndef PALCOL
#define PALCOL(m, c) PAL[m][c]
#endif
#define PALMAT(m) mat4(PALCOL(m, 0), PALCOL(m, 1), PALCOL(m, 2), PALCOL(m, 3))
// SKIP_ZERO 0: all four joints read, zero weights too (bake_wide.comp on CPU devices, BAKE_SKIP_ZERO off)
#ifndef SKIP_ZERO
#define SKIP_ZERO 1
#endif
#define WEIGHTED(m, w) mat4(vec4((w) * PALCOL(m, 0).xyz, 0.0), vec4((w) * PALCOL(m, 1).xyz, 0.0), \\
                            vec4((w) * PALCOL(m, 2).xyz, 0.0), vec4((w) * PALCOL(m, 3).xyz, (w)))
void transformVertex(uint base, uvec4 j, vec4 w, inout vec3 p, inout vec3 n, inout vec3 t) {
#if MODE == 0
    uvec4 jj = j + base;
    mat4 skin = WEIGHTED(jj.x, w.x);
    if (SKIP_ZERO == 0 || w.y != 0.0) skin += WEIGHTED(jj.y, w.y);
    if (SKIP_ZERO == 0 || w.z != 0.0) skin += WEIGHTED(jj.z, w.z);
    if (SKIP_ZERO == 0 || w.w != 0.0) skin += WEIGHTED(jj.w, w.w);
    skinVertex(skin, p, n, t);
#elif MODE == 1
    mat4 world = PALMAT(base + pc.node);
    mat3 a = mat3(world);
    mat3 cofactor = mat3(cross(a[1], a[2]), cross(a[2], a[0]), cross(a[0], a[1]));
    p = (world * vec4(p, 1.0)).xyz;
    n = unitOrZero(cofactor * n);
    t = unitOrZero(a * t);
#endif
}
"""

COMPUTE = """
layout(local_size_x = 64) in;
layout(std430, set = 0, binding = 0) readonly buffer Src { uvec4 quads[]; } src;     // SKINNED_VERTEX: 5 uvec4
#if UBO
layout(std140, set = 0, binding = 1) uniform Pal { mat4 m[FRAMES * JOINTS]; } pal;    // a run of frames
#else
layout(std430, set = 0, binding = 1) readonly buffer Pal { mat4 m[]; } pal;
#endif
#if QUAD
layout(std430, set = 0, binding = 2) writeonly buffer Dst { vec4 values[]; } dst;
#else
layout(std430, set = 0, binding = 2) writeonly buffer Dst { float values[]; } dst;
#endif
// frameCount: frames of the planes; frames frameFirst .. frameFirst + frameRun - 1 of them in this dispatch
layout(push_constant) uniform PC { uint vertexCount; uint frameCount; uint joints; uint node; uint frameFirst;
                                   uint frameRun; } pc;
#define PAL pal.m
#if UBO
#define PAL_FRAME(f) (f - pc.frameFirst)   // the UBO binding starts at frameFirst's palette (dynamic offset)
#else
#define PAL_FRAME(f) (f)
#endif
COMMON_HERE
void load(uint v, out vec3 p, out vec3 n, out vec3 t, out uvec4 j, out vec4 w) {
    uint b = 5 * v;
    vec4 a = uintBitsToFloat(src.quads[b]), bb = uintBitsToFloat(src.quads[b + 1]);
    vec4 c = uintBitsToFloat(src.quads[b + 2]);
    p = a.xyz; n = vec3(a.w, bb.xy); t = vec3(bb.zw, c.x);
#if MODE == 0
    j = src.quads[b + 3]; w = uintBitsToFloat(src.quads[b + 4]);
#else
    j = uvec4(0); w = vec4(0.0);
#endif
}
void main() {
    uint plane = 3 * pc.vertexCount * pc.frameCount;
#if QUAD
    uint q = gl_GlobalInvocationID.x;
    if (4 * q >= pc.vertexCount) return;
    vec3 p0[4], n0[4], t0[4], p[4], n[4], t[4];
    uvec4 j[4]; vec4 w[4];
    for (uint k = 0; k < 4; ++k) load(4 * q + k, p0[k], n0[k], t0[k], j[k], w[k]);
    for (uint f = pc.frameFirst; f < pc.frameFirst + pc.frameRun; ++f) {
        uint base = PAL_FRAME(f) * pc.joints;
#if MODE == 1
        // a rigid matrix once per quad and frame (bake.comp)
        mat4 world = PAL[base + pc.node];
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
        dst.values[o] = vec4(p[0], p[1].x); dst.values[o + 1] = vec4(p[1].yz, p[2].xy);
        dst.values[o + 2] = vec4(p[2].z, p[3]);
        dst.values[pl + o] = vec4(n[0], n[1].x); dst.values[pl + o + 1] = vec4(n[1].yz, n[2].xy);
        dst.values[pl + o + 2] = vec4(n[2].z, n[3]);
        dst.values[2 * pl + o] = vec4(t[0], t[1].x); dst.values[2 * pl + o + 1] = vec4(t[1].yz, t[2].xy);
        dst.values[2 * pl + o + 2] = vec4(t[2].z, t[3]);
    }
#else
    uint v = gl_GlobalInvocationID.x;
    if (v >= pc.vertexCount) return;
    vec3 p0, n0, t0; uvec4 j; vec4 w;
    load(v, p0, n0, t0, j, w);
    for (uint f = pc.frameFirst; f < pc.frameFirst + pc.frameRun; ++f) {
        vec3 p = p0, n = n0, t = t0;
        transformVertex(PAL_FRAME(f) * pc.joints, j, w, p, n, t);
        uint o = 3 * (f * pc.vertexCount + v);
        for (uint c = 0; c < 3; ++c) {
            dst.values[o + c] = p[c];
            dst.values[plane + o + c] = n[c];
            dst.values[2 * plane + o + c] = t[c];
        }
    }
#endif
}
"""

VERTEX = """
layout(location = 0) in vec3 inPosition;
layout(location = 1) in vec3 inNormal;
layout(location = 2) in vec3 inTangent;
#if MODE == 0
layout(location = 3) in uvec4 inJoints;
layout(location = 4) in vec4 inWeights;
#endif
#if UBO
layout(std140, set = 0, binding = 0) uniform Pal { mat4 m[FRAMES * JOINTS]; } pal;
#else
layout(std430, set = 0, binding = 0) readonly buffer Pal { mat4 m[]; } pal;
#endif
layout(push_constant) uniform PC { uint joints; uint node; } pc;
#define PAL pal.m
COMMON_HERE
layout(location = 0, xfb_buffer = 0, xfb_offset = 0, xfb_stride = 12) out vec3 outPosition;
layout(location = 1, xfb_buffer = 1, xfb_offset = 0, xfb_stride = 12) out vec3 outNormal;
layout(location = 2, xfb_buffer = 2, xfb_offset = 0, xfb_stride = 12) out vec3 outTangent;
void main() {
    vec3 p = inPosition, n = inNormal, t = inTangent;
#if MODE == 0
    transformVertex(uint(gl_InstanceIndex) * pc.joints, inJoints, inWeights, p, n, t);
#else
    transformVertex(uint(gl_InstanceIndex) * pc.joints, uvec4(0), vec4(0.0), p, n, t);
#endif
    outPosition = p; outNormal = n; outTangent = t;
    gl_PointSize = 1.0;      // point list: a vertex shader writes PointSize (not captured, nothing rasterized)
}
"""


def compile_glsl(tmp: Path, name: str, stage: str, body: str, defines: dict) -> bytes:
    """glslangValidator -V --target-env vulkan1.2 (as tools/compile_shaders.py), -D per define."""
    exe = shutil.which("glslangValidator")
    if exe is None:
        raise SystemExit("glslangValidator not found: apt-get install glslang-tools")
    src = tmp / f"{name}.{stage}"
    head, rest = COMMON.split("\n", 2)[1], COMMON.split("\n", 2)[2]
    src.write_text(head + "\n" + body.replace("COMMON_HERE", rest))
    out = tmp / f"{name}.spv"
    args = [exe, "-V", "--target-env", "vulkan1.2", *[f"-D{k}={v}" for k, v in defines.items()], "-o", str(out),
            str(src)]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{name}: glslang failed:\n{proc.stdout}{proc.stderr}")
    return out.read_bytes()


# --------------------------------------------------------------------------------------------- data + reference
def synthetic(V: int, F: int, J: int, seed: int = 7):
    from vkmorph.asset.model import SKINNED_VERTEX
    rng = np.random.default_rng(seed)
    vert = np.zeros(V, SKINNED_VERTEX)
    vert["position"] = rng.uniform(-1, 1, (V, 3))
    n = rng.normal(size=(V, 3))
    vert["normal"] = n / np.linalg.norm(n, axis=1, keepdims=True)
    t = np.cross(vert["normal"], rng.normal(size=(V, 3)))
    vert["tangent"][:, :3] = t / np.linalg.norm(t, axis=1, keepdims=True)
    vert["tangent"][:, 3] = 1.0
    vert["texcoord"] = rng.uniform(0, 1, (V, 2))
    vert["joints"] = rng.integers(0, J, (V, 4))
    count = rng.choice([1, 2, 3, 4], V, p=[0.4, 0.35, 0.15, 0.1])     # influences: mostly one or two
    w = rng.uniform(0.1, 1.0, (V, 4)) * (np.arange(4)[None, :] < count[:, None])
    w = -np.sort(-w, axis=1)
    vert["weights"] = w / w.sum(axis=1, keepdims=True)
    # palettes: F x J affine matrices (rotation x scale + translation), bottom row (0, 0, 0, 1)
    q = rng.normal(size=(F, J, 4))
    q /= np.linalg.norm(q, axis=2, keepdims=True)
    a, b, c, d = np.moveaxis(q, 2, 0)
    rot = np.stack([np.stack([1 - 2 * (c * c + d * d), 2 * (b * c - a * d), 2 * (b * d + a * c)], -1),
                    np.stack([2 * (b * c + a * d), 1 - 2 * (b * b + d * d), 2 * (c * d - a * b)], -1),
                    np.stack([2 * (b * d - a * c), 2 * (c * d + a * b), 1 - 2 * (b * b + c * c)], -1)], -2)
    m = np.zeros((F, J, 4, 4))
    m[..., :3, :3] = rot * rng.uniform(0.5, 2.0, (F, J, 1, 3))
    m[..., :3, 3] = rng.uniform(-2, 2, (F, J, 3))
    m[..., 3, 3] = 1.0
    return vert, m.astype(np.float32)


def _unit(v, fallback):
    ln = np.linalg.norm(v, axis=-1, keepdims=True)
    if fallback is None:
        return np.where(ln > 1e-20, v / np.where(ln > 0, ln, 1), 0.0)
    return np.where(ln * ln > 1e-12, v / np.where(ln > 0, ln, 1), fallback)


def reference(vert, pal, mode: int, node: int):
    """(3, F, V, 3) float64: positions, normals, tangents."""
    p, n, t = (vert[k][:, :3].astype(np.float64) for k in ("position", "normal", "tangent"))
    F = pal.shape[0]
    m = pal.astype(np.float64)
    if mode == COPY:
        return np.broadcast_to(np.stack([p, n, t])[:, None], (3, F) + p.shape)
    if mode == RIGID:
        world = m[:, node]                                                    # (F, 4, 4)
        a = world[:, :3, :3]
        cof = np.linalg.det(a)[:, None, None] * np.linalg.inv(a).transpose(0, 2, 1)
        P = np.einsum("fij,vj->fvi", a, p) + world[:, None, :3, 3]
        return np.stack([P, _unit(np.einsum("fij,vj->fvi", cof, n), None),
                         _unit(np.einsum("fij,vj->fvi", a, t), None)])
    skin = np.einsum("vk,fvkij->fvij", vert["weights"].astype(np.float64), m[:, vert["joints"]])  # (F, V, 4, 4)
    P = np.einsum("fvij,vj->fvi", skin[..., :3, :3], p) + skin[..., :3, 3]
    N = np.einsum("fvij,vj->fvi", skin[..., :3, :3], n)
    T = np.einsum("fvij,vj->fvi", skin[..., :3, :3], t)
    return np.stack([P, _unit(N, np.broadcast_to(n, N.shape)), _unit(T, np.broadcast_to(t, T.shape))])


# --------------------------------------------------------------------------------------------- Vulkan
def make_context(validation: bool):
    """vkmorph's Context (instance, validation + messenger, device pick), with the device created with
    VK_EXT_transform_feedback and its transformFeedback feature (Context.create enables no feature chain)."""
    from vkmorph.gpu import context as C
    from vkmorph.gpu.vk import call, vk

    class XfbContext(C.Context):
        def _create_device(self) -> None:
            queue_ci = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.queue_family_index, queueCount=1,
                                                  pQueuePriorities=[1.0])
            exts = ["VK_EXT_transform_feedback"]
            xfb = vk.VkPhysicalDeviceTransformFeedbackFeaturesEXT(transformFeedback=vk.VK_TRUE,
                                                                  geometryStreams=vk.VK_FALSE)
            info = vk.VkDeviceCreateInfo(pNext=xfb, queueCreateInfoCount=1, pQueueCreateInfos=[queue_ci],
                                         enabledExtensionCount=1, ppEnabledExtensionNames=exts,
                                         pEnabledFeatures=vk.VkPhysicalDeviceFeatures())
            self._callback_keepalive.extend([queue_ci, xfb, info])
            self.device = call("vkCreateDevice", self.physical_device, info, None, what="xfb probe")
            self._owns_device = True
            self.queue = vk.vkGetDeviceQueue(self.device, self.queue_family_index, 0)

    return XfbContext.create(validation=validation, app_name="xfb probe")


def device_facts(ctx) -> dict:
    from vkmorph.gpu.vk import vk
    pd = ctx.physical_device
    exts = {e.extensionName: e.specVersion for e in vk.vkEnumerateDeviceExtensionProperties(pd, None)}
    feat = vk.VkPhysicalDeviceTransformFeedbackFeaturesEXT()
    vk.vkGetPhysicalDeviceFeatures2(pd, vk.VkPhysicalDeviceFeatures2(pNext=feat))
    prop = vk.VkPhysicalDeviceTransformFeedbackPropertiesEXT()
    vk.vkGetPhysicalDeviceProperties2(pd, vk.VkPhysicalDeviceProperties2(pNext=prop))
    lim = vk.vkGetPhysicalDeviceProperties(pd).limits
    out = {"VK_EXT_transform_feedback": exts.get("VK_EXT_transform_feedback"),
           "transformFeedback": feat.transformFeedback, "geometryStreams": feat.geometryStreams}
    for k in ("maxTransformFeedbackStreams", "maxTransformFeedbackBuffers", "maxTransformFeedbackBufferSize",
              "maxTransformFeedbackStreamDataSize", "maxTransformFeedbackBufferDataSize",
              "maxTransformFeedbackBufferDataStride", "transformFeedbackQueries", "transformFeedbackDraw"):
        out[k] = int(getattr(prop, k))
    out["maxVertexOutputComponents"] = lim.maxVertexOutputComponents
    out["maxUniformBufferRange"] = lim.maxUniformBufferRange
    out["maxStorageBufferRange"] = lim.maxStorageBufferRange
    return out


class Probe:
    def __init__(self, ctx, vert, pal, F: int, V: int, J: int, node: int, tmp: Path):
        from vkmorph.gpu import barriers as B
        from vkmorph.gpu import graphics as G
        from vkmorph.gpu import memory as M
        from vkmorph.gpu.vk import call, vk
        self.vk, self.B, self.ctx = vk, B, ctx
        self.F, self.V, self.J, self.node = F, V, J, node
        self.group = G.ObjectGroup(ctx, "xfb probe")
        dev = ctx.device
        self.plane_bytes = F * V * 12
        xfb_usage = vk.VK_BUFFER_USAGE_TRANSFORM_FEEDBACK_BUFFER_BIT_EXT
        self.src = self.group.own(M.Buffer(ctx, vert.nbytes, M.STORAGE | M.VERTEX, host=True, name="vertices"))
        self.src.mapped[:] = vert.view(np.uint8)
        pal_cols = np.ascontiguousarray(pal.transpose(0, 1, 3, 2))            # GLSL mat4: column-major
        self.pal = self.group.own(M.Buffer(ctx, pal_cols.nbytes, M.STORAGE | M.UNIFORM, host=True, name="palette"))
        self.pal.mapped[:] = pal_cols.view(np.uint8).reshape(-1)
        self.out = self.group.own(M.Buffer(ctx, 3 * self.plane_bytes, M.STORAGE | xfb_usage, host=True,
                                           name="planes"))
        self.fence = self.group.add(vk.vkDestroyFence, call("vkCreateFence", dev, vk.VkFenceCreateInfo(), None))
        # barriers of this probe, named by what they order (vkmorph/gpu/barriers.py's Barrier)
        self.before = B.Barrier(   # the previous repeat's writes of the planes (WAW) come before this one's
            "previous plane writes -> plane writes",
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFORM_FEEDBACK_BIT_EXT,
            vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFORM_FEEDBACK_WRITE_BIT_EXT,
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFORM_FEEDBACK_BIT_EXT,
            vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFORM_FEEDBACK_WRITE_BIT_EXT)
        self.after = B.Barrier(    # the planes, written by a dispatch or captured by XFB, read by the CPU
            "compute / transform feedback write -> host read",
            vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFORM_FEEDBACK_BIT_EXT,
            vk.VK_ACCESS_SHADER_WRITE_BIT | vk.VK_ACCESS_TRANSFORM_FEEDBACK_WRITE_BIT_EXT,
            vk.VK_PIPELINE_STAGE_HOST_BIT, vk.VK_ACCESS_HOST_READ_BIT)
        gd = vk.vkGetDeviceProcAddr
        self.bind_xfb = gd(dev, "vkCmdBindTransformFeedbackBuffersEXT")
        self.begin_xfb = gd(dev, "vkCmdBeginTransformFeedbackEXT")
        self.end_xfb = gd(dev, "vkCmdEndTransformFeedbackEXT")
        self.pool = G.descriptor_pool(ctx, self.group, 32, {vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER: 64,
                                                            vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC: 16,
                                                            vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC: 16})
        self.chunk_bytes = FRAMES_PER_DRAW * J * 64
        # compute: src, palette (the whole storage buffer; or a uniform buffer of FRAMES_PER_DRAW frames at a
        # dynamic offset per dispatch), planes
        st = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
        cs_stage = vk.VK_SHADER_STAGE_COMPUTE_BIT
        self.cs_layouts = {}
        for ubo in (True, False):
            pt = vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC if ubo else st
            sl = G.set_layout(ctx, self.group, [(0, st, cs_stage), (1, pt, cs_stage), (2, st, cs_stage)])
            pl = G.pipeline_layout(ctx, self.group, [sl], 24, cs_stage)
            ds = G.allocate_set(ctx, self.pool, sl)
            G.write_buffer(ctx, ds, 0, st, self.src.handle)
            G.write_buffer(ctx, ds, 1, pt, self.pal.handle, 0, self.chunk_bytes if ubo else self.pal.size)
            G.write_buffer(ctx, ds, 2, st, self.out.handle)
            self.cs_layouts[ubo] = (pl, ds)
        # vertex: one palette binding, dynamic offset per draw of FRAMES_PER_DRAW frames
        self.vs_layouts = {}
        for ubo in (True, False):
            t = vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER_DYNAMIC if ubo else vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC
            sl = G.set_layout(ctx, self.group, [(0, t, vk.VK_SHADER_STAGE_VERTEX_BIT)])
            pl = G.pipeline_layout(ctx, self.group, [sl], 8, vk.VK_SHADER_STAGE_VERTEX_BIT)
            ds = G.allocate_set(ctx, self.pool, sl)
            G.write_buffer(ctx, ds, 0, t, self.pal.handle, 0, self.chunk_bytes)
            self.vs_layouts[ubo] = (pl, ds)
        # a render pass without attachments (draws need one; nothing is rasterized)
        sub = vk.VkSubpassDescription(pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS)
        rp_info = vk.VkRenderPassCreateInfo(subpassCount=1, pSubpasses=[sub])
        self.render_pass = self.group.add(vk.vkDestroyRenderPass, call("vkCreateRenderPass", dev, rp_info, None))
        fb_info = vk.VkFramebufferCreateInfo(renderPass=self.render_pass, attachmentCount=0, width=1, height=1,
                                             layers=1)
        self.framebuffer = self.group.add(vk.vkDestroyFramebuffer, call("vkCreateFramebuffer", dev, fb_info, None))
        self.tmp = tmp
        self.cbs = {}

    # ---- pipelines
    def _module(self, code: bytes):
        vk = self.vk
        return vk.vkCreateShaderModule(self.ctx.device, vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code),
                                       None)

    def compute_pipeline(self, mode: int, quad: bool, ubo: bool):
        from vkmorph.gpu.vk import call
        vk = self.vk
        code = compile_glsl(self.tmp, f"cs_{mode}_{int(quad)}_{int(ubo)}", "comp", COMPUTE,
                            {"MODE": mode, "QUAD": int(quad), "UBO": int(ubo), "FRAMES": FRAMES_PER_DRAW,
                             "JOINTS": self.J})
        module = self._module(code)
        try:
            stage = vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_COMPUTE_BIT, module=module,
                                                       pName="main")
            info = vk.VkComputePipelineCreateInfo(stage=stage, layout=self.cs_layouts[ubo][0])
            pipe = call("vkCreateComputePipelines", self.ctx.device, vk.VK_NULL_HANDLE, 1, [info], None)[0]
        finally:
            vk.vkDestroyShaderModule(self.ctx.device, module, None)
        return self.group.add(vk.vkDestroyPipeline, pipe)

    def xfb_pipeline(self, mode: int, ubo: bool):
        from vkmorph.gpu.vk import call
        vk = self.vk
        code = compile_glsl(self.tmp, f"vs_{mode}_{int(ubo)}", "vert", VERTEX,
                            {"MODE": mode, "UBO": int(ubo), "FRAMES": FRAMES_PER_DRAW, "JOINTS": self.J})
        module = self._module(code)
        try:
            stages = [vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_VERTEX_BIT, module=module,
                                                         pName="main")]
            f3, u4, f4 = vk.VK_FORMAT_R32G32B32_SFLOAT, vk.VK_FORMAT_R32G32B32A32_UINT, vk.VK_FORMAT_R32G32B32A32_SFLOAT
            attrs = [(0, f3, 0), (1, f3, 12), (2, f3, 24)] + ([(3, u4, 48), (4, f4, 64)] if mode == SKIN else [])
            adesc = [vk.VkVertexInputAttributeDescription(location=loc, binding=0, format=fmt, offset=off)
                     for loc, fmt, off in attrs]
            bdesc = [vk.VkVertexInputBindingDescription(binding=0, stride=80, inputRate=vk.VK_VERTEX_INPUT_RATE_VERTEX)]
            vin = vk.VkPipelineVertexInputStateCreateInfo(vertexBindingDescriptionCount=1,
                                                          pVertexBindingDescriptions=bdesc,
                                                          vertexAttributeDescriptionCount=len(adesc),
                                                          pVertexAttributeDescriptions=adesc)
            ia = vk.VkPipelineInputAssemblyStateCreateInfo(topology=vk.VK_PRIMITIVE_TOPOLOGY_POINT_LIST)
            rs = vk.VkPipelineRasterizationStateCreateInfo(rasterizerDiscardEnable=vk.VK_TRUE,
                                                           polygonMode=vk.VK_POLYGON_MODE_FILL,
                                                           cullMode=vk.VK_CULL_MODE_NONE, lineWidth=1.0)
            info = vk.VkGraphicsPipelineCreateInfo(stageCount=1, pStages=stages, pVertexInputState=vin,
                                                   pInputAssemblyState=ia, pRasterizationState=rs,
                                                   layout=self.vs_layouts[ubo][0], renderPass=self.render_pass,
                                                   subpass=0)
            pipe = call("vkCreateGraphicsPipelines", self.ctx.device, vk.VK_NULL_HANDLE, 1, [info], None)[0]
        finally:
            vk.vkDestroyShaderModule(self.ctx.device, module, None)
        return self.group.add(vk.vkDestroyPipeline, pipe)

    # ---- command buffers
    def _cb(self):
        from vkmorph.gpu.vk import call
        vk = self.vk
        cb = call("vkAllocateCommandBuffers", self.ctx.device, vk.VkCommandBufferAllocateInfo(
            commandPool=self.ctx.command_pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
        self.group.add(lambda d, c, _: vk.vkFreeCommandBuffers(d, self.ctx.command_pool, 1, [c]), cb)
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
        self.B.record(cb, self.before)
        return cb

    def _finish(self, cb):
        self.B.record(cb, self.after)
        self.vk.vkEndCommandBuffer(cb)
        return cb

    def record_compute(self, mode: int, quad: bool, ubo: bool):
        """One dispatch over all frames (SSBO palette, as the bake on a CPU device), or one per FRAMES_PER_DRAW
        frames (UBO palette: 64 KiB)."""
        vk = self.vk
        pipe = self.compute_pipeline(mode, quad, ubo)
        layout, dset = self.cs_layouts[ubo]
        cb = self._cb()
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, pipe)
        run = FRAMES_PER_DRAW if ubo else self.F
        groups = -(-self.V // (64 * (4 if quad else 1)))
        self._keep = getattr(self, "_keep", [])
        for first in range(0, self.F, run):
            if ubo or first == 0:
                vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_COMPUTE, layout, 0, 1, [dset],
                                           1 if ubo else 0, [first * self.J * 64] if ubo else None)
            pc = np.array([self.V, self.F, self.J, self.node, first, min(run, self.F - first)], np.uint32)
            self._keep.append(pc)
            vk.vkCmdPushConstants(cb, layout, vk.VK_SHADER_STAGE_COMPUTE_BIT, 0, 24, vk.ffi.from_buffer(pc))
            vk.vkCmdDispatch(cb, groups, 1, 1)
        return self._finish(cb)

    def record_xfb(self, mode: int, ubo: bool):
        vk = self.vk
        pipe = self.xfb_pipeline(mode, ubo)
        layout, dset = self.vs_layouts[ubo]
        cb = self._cb()
        rp = vk.VkRenderPassBeginInfo(renderPass=self.render_pass, framebuffer=self.framebuffer,
                                      renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(1, 1)))
        vk.vkCmdBeginRenderPass(cb, rp, vk.VK_SUBPASS_CONTENTS_INLINE)
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, pipe)
        vk.vkCmdBindVertexBuffers(cb, 0, 1, [self.src.handle], [0])
        pb = self.plane_bytes
        self.bind_xfb(cb, 0, 3, [self.out.handle] * 3, [0, pb, 2 * pb], [pb, pb, pb])
        pc = np.array([self.J, self.node], np.uint32)
        vk.vkCmdPushConstants(cb, layout, vk.VK_SHADER_STAGE_VERTEX_BIT, 0, 8, vk.ffi.from_buffer(pc))
        self.begin_xfb(cb, 0, 0, None, None)
        for first in range(0, self.F, FRAMES_PER_DRAW):    # captured vertices append: instance-major = planes
            vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, layout, 0, 1, [dset], 1,
                                       [first * self.J * 64])
            vk.vkCmdDraw(cb, self.V, min(FRAMES_PER_DRAW, self.F - first), 0, 0)
        self.end_xfb(cb, 0, 0, None, None)
        vk.vkCmdEndRenderPass(cb)
        return self._finish(cb)

    def run(self, cb):
        self.ctx.submit([cb], fence=self.fence)
        self.ctx.wait_fence(self.fence)

    def planes(self):
        return self.out.view(np.float32).reshape(3, self.F, self.V, 3)

    def destroy(self):
        self.group.destroy()


def child(a) -> dict:
    F, V, J, node = a.frames, a.vertices, a.joints, 3
    vert, pal = synthetic(V, F, J)
    ctx = make_context(a.validate)
    res = {"lp_num_threads": os.environ.get("LP_NUM_THREADS", "unset"), "device": ctx.info.name,
           "facts": device_facts(ctx), "rows": [], "messages": []}
    probe = None
    try:
        with tempfile.TemporaryDirectory() as tmp:
            probe = Probe(ctx, vert, pal, F, V, J, node, Path(tmp))
            variants = []
            for mode in (SKIN, RIGID, COPY):
                refs = reference(vert, pal, mode, node)
                for kind in KINDS:
                    ubo = "UBO" in kind
                    if mode == COPY and ubo:
                        continue                  # copy reads no palette: one row per kernel
                    if kind.startswith("compute"):
                        cb = probe.record_compute(mode, "quad" in kind, ubo)
                    else:
                        cb = probe.record_xfb(mode, ubo)
                    probe.out.mapped[:] = 0xFF    # NaN: a plane not written shows
                    probe.run(cb)
                    err = float(np.max(np.abs(probe.planes() - refs)))
                    variants.append({"mode": MODE_NAMES[mode], "kind": kind, "cb": cb, "err": err,
                                     "wall": [], "cpu": [], "thread": []})
            for v in variants:                    # warm-up
                probe.run(v["cb"])
            for _ in range(a.repeats):
                for v in variants:
                    t0, c0, h0 = time.perf_counter(), time.process_time(), time.thread_time()
                    probe.run(v["cb"])
                    v["wall"].append(time.perf_counter() - t0)
                    v["cpu"].append(time.process_time() - c0)
                    v["thread"].append(time.thread_time() - h0)
            vk = probe.vk
            vk.vkDeviceWaitIdle(ctx.device)
            if a.validate:
                # the layer is live: a deliberately misaligned XFB bind (offset 2: VUID ...-pOffsets-02359) in a
                # command buffer that is recorded, never submitted; its messages are counted apart
                before = len(ctx.messages)
                cb = probe._cb()
                probe.bind_xfb(cb, 0, 1, [probe.out.handle], [2], [probe.plane_bytes])
                probe._finish(cb)
                res["negative"] = [str(m)[:160] for m in ctx.messages[before:]]
                del ctx.messages[before:]
            for v in variants:
                res["rows"].append(median_row(v))
    finally:
        close_probe(ctx, probe, res)
    return res


def report(res: dict, F: int, V: int, repeats: int) -> list[str]:
    fv = F * V
    lines = [f"## LP_NUM_THREADS={res['lp_num_threads']}: {res['device']}, host {platform.node()} "
             f"({os.cpu_count()} CPUs, load {res['load']:.1f}); {F} frames x {V:,} vertices ({fv:,} frame-vertices), "
             f"3 planes of float x 3; median of {repeats}"]
    by = {}
    for r in res["rows"]:
        by[(r["mode"], r["kind"])] = r
        lines.append(f"  {r['mode']:<8} {r['kind']:<27} wall {r['wall'] * 1e3:7.1f} ms  CPU {r['cpu'] * 1e3:7.1f} ms"
                     f"  per frame-vertex: CPU {r['cpu'] / fv * 1e9:6.1f} ns, wall {r['wall'] / fv * 1e9:6.1f} ns;"
                     f"  python thread CPU {r['thread'] * 1e3:5.1f} ms;  max |err| {r['err']:.2e}")
    lines.append("  ratios, compute CPU / xfb CPU (wall / wall in brackets); copy reads no palette:")
    for mode in ("skinned", "rigid", "copy"):
        xk = ("xfb, palette SSBO", "xfb, palette UBO") if mode != "copy" else ("xfb, palette SSBO",)
        for ck in (k for k in KINDS if k.startswith("compute") and (mode, k) in by):
            c = by[(mode, ck)]
            cells = "   ".join(f"/ {k[5:]}: {c['cpu'] / by[(mode, k)]['cpu']:5.2f}x "
                               f"({c['wall'] / by[(mode, k)]['wall']:5.2f}x)" for k in xk)
            lines.append(f"    {mode:<8} {ck:<26} {cells}")
    return lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--frames", type=int, default=64)
    ap.add_argument("--vertices", type=int, default=7168)
    ap.add_argument("--joints", type=int, default=50)
    ap.add_argument("--repeats", type=int, default=9)
    ap.add_argument("--out")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--validate", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.vertices % 4 or a.frames % FRAMES_PER_DRAW:
        raise SystemExit(f"--vertices must be a multiple of 4 (the quad kernel), --frames of {FRAMES_PER_DRAW} "
                         "(the UBO palette's runs of frames)")
    if a.child:
        print(json.dumps(child(a)))
        return
    lines = [f"# bench/xfb_probe.py --frames {a.frames} --vertices {a.vertices} --joints {a.joints} --repeats "
             f"{a.repeats}, {time.strftime('%Y-%m-%d %H:%M')} UTC, on this 2-core lavapipe host (shared with other "
             "sessions: CPU time is the cost, wall shows the load). Synthetic mesh, SKINNED_VERTEX layout; skinned: "
             "1-4 influences (40/35/15/10%), rigid: one node matrix; copy: stores only."]
    base = [sys.executable, str(Path(__file__).resolve()), "--child", "--frames", str(a.frames), "--vertices",
            str(a.vertices), "--joints", str(a.joints)]
    facts = None
    for lp, validate in ((None, False), ("1", False), (None, True)):
        env = dict(os.environ)
        env.pop("LP_NUM_THREADS", None)
        env["VKMORPH_VALIDATION"] = "1" if validate else "0"
        if lp is not None:
            env["LP_NUM_THREADS"] = lp
        cmd = base + ["--repeats", "1" if validate else str(a.repeats)] + (["--validate"] if validate else [])
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
        if proc.returncode:
            raise SystemExit(f"child failed ({lp}, validate={validate}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        facts = res["facts"]
        if validate:
            lines.append(f"## validation run (VK_LAYER_KHRONOS_validation + synchronization validation, every variant "
                         f"recorded, run and checked once): {len(res['messages'])} messages; leaks: "
                         f"{res['leaks'] or 'none'}")
            lines.append(f"  max |err| over the {len(res['rows'])} variants under the layer: "
                         f"{max(r['err'] for r in res['rows']):.2e}")
            lines += [f"  {m}" for m in res["messages"]]
            lines.append(f"  the layer is live: a deliberately misaligned vkCmdBindTransformFeedbackBuffersEXT offset "
                         f"(recorded apart, not submitted) gave {len(res['negative'])} message(s), e.g.: "
                         f"{res['negative'][0] if res['negative'] else 'NONE (layer not checking!)'}")
        else:
            lines += report(res, a.frames, a.vertices, a.repeats)
            if res["messages"] or res["leaks"]:
                lines.append(f"  messages: {res['messages']}; leaks: {res['leaks']}")
    lines.append("## device facts (VkPhysicalDeviceTransformFeedback{Features,Properties}EXT, limits)")
    lines.append("  " + ", ".join(f"{k} {v}" for k, v in facts.items()))
    emit(lines, a.out)


if __name__ == "__main__":
    main()
