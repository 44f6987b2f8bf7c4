"""Probe (issue 25): why do the raster passes of a LOD crowd grow faster than their triangle count? On an H200,
10,000 RobotExpressives at the coarsest level (322 triangles each, 19 instanced draws per pass) cost ~25 ms per
pass (7.7 ns per triangle) while 1,000 cost 0.46 ms (1.4 ns): 54x for 10x the triangles
(bench/2026-12-02d-h200-crowd-passes.md); full detail is linear at ~3 ns per triangle. This probe draws the same
triangles in several ways, each at several instance counts N, in one window, so the factor that removes the
superlinearity shows up as the row whose time stays proportional to N.

What is drawn: RobotExpressive's primitives at rest (world space, the skeleton's rest pose, STATIC_VERTEX layout,
48 B), at the coarsest LOD level as vkmorph.asset.lod builds it (index lists into each primitive's ORIGINAL
vertices, as render/crowd_lod.py draws them) or at full detail (level 0). N instances, each with a mat4 from a
storage buffer read by gl_InstanceIndex, one vkCmdDrawIndexed with instanceCount N per draw group. Two passes as
the crowd renderer records them: a depth-only pass into a 512x512 D32 shadow map (the light's orthographic view,
depth bias, no culling, no fragment shader) and a colour + depth pass (RGBA8 + D32; the camera framing the crowd,
back faces culled, a fragment shader with one shadow-map lookup). The timed command buffer of a configuration is
[serialise, timestamp, shadow pass, serialise, timestamp, forward pass, timestamp]: the passes never overlap each
other or the previous configuration, so each pair of timestamps brackets one pass alone.

Variants (one factor changed at a time from the first, the crowd's vertex path at the coarsest level):

* mesh: ``split`` (19 primitives, 19 instanced draws per pass, as the crowd), ``material`` (the same triangles
  merged per material: 3 draws), ``merged`` (one draw); level ``lod`` (the coarsest, 322 triangles) or ``full``
  (3,237);
* vertex input: ``attr`` (vertex attributes, binding rate vertex, one shared vertex buffer: every instance reads
  the same vertices), ``pulled`` (one storage buffer holding every instance's own copy of its vertices, instance
  i's at i x vertexCount, read at gl_InstanceIndex x stride + gl_VertexIndex as crowd_pull.vert reads the
  compute-skinning output), ``flat`` (no instancing: one non-instanced draw over an index list of N copies of
  the merged compacted level, copy i offset by i x its vertex count, the instance taken from gl_VertexIndex);
* index list: ``scattered`` (as built: indices into each primitive's original vertices, a few dozen of hundreds
  used, spread over the range) or ``compact`` (the level's vertices only, re-indexed 0..k-1 in first-use order);
* screen coverage: ``grid`` (crowd_driver's grid, the camera and the light framing it, 320x240), ``grid-hi``
  (the same at 1280x960: 16x the pixels per instance; the shadow pass is the same as ``grid``'s, a control),
  ``stacked`` (all N instances jittered over a square two grid pitches wide at the grid's centre, the same
  camera: the same pixels per instance, all of them on a few screen tiles), ``offscreen`` (the grid moved out of
  both views: the vertex work without any rasterization);
* instances per draw: ``chunked`` (each instanced draw split into draws of --chunk instances through
  firstInstance; default the smallest count, so that count's row is the base's own).

Per row: N, the variant, ms per pass (median of the repeats), ns per triangle and per instance-draw (N x draws;
flat: N), the triangles drawn (from the recorded draws), the share of pixels covered, and a check: each
configuration is also run once with its depth images read back, and every variant's shadow map and forward
depth must match the first variant's of the same level, N and coverage (the same triangles, however drawn).
Rounds run every configuration once, in one submission, order rotated per round; a warm-up round first. A child
under the Khronos validation layer (synchronization validation on) records, runs and checks every variant once
at a small N; its message count is printed and must be 0. The closing paragraph is computed from the numbers.

    python3 bench/raster_probe.py [--counts 1000,2000,4000,7000,10000] [--repeats 7] [--budget-s 60]
                                  [--variants NAME,...] [--chunk K] [--json F] [--out F.txt]
    python3 bench/raster_probe.py --quick          # lavapipe: N in {10, 40}, 3 repeats

--budget-s bounds the timed rounds: after the warm-up round the repeats are cut (to no fewer than 3, or 2 when a
round takes over a third of the budget) so that they fit it, which keeps the whole probe within a few minutes on
any GPU (the cut is printed).
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
from dataclasses import dataclass
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from probe_common import close_probe, emit  # noqa: E402

COUNTS, COUNTS_QUICK = (1000, 2000, 4000, 7000, 10000), (10, 40)
SHADOW_SIZE = 512
SIZES = {"grid": (320, 240), "grid-hi": (1280, 960), "stacked": (320, 240), "offscreen": (320, 240)}
VALIDATE_COUNT, VALIDATE_CHUNK = 6, 2
GROWTH_SUPERLINEAR = 1.5      # time(N max) / time(N min) over N max / N min: above this a row is "superlinear"
GROWTH_LINEAR = 1.25          # at most this: "about linear"
DEPTH_EPS, MISMATCH_OK = 1e-5, 0.002    # a pixel differs when depth differs by more; at most this share may


@dataclass(frozen=True)
class Variant:
    level: str        # "lod" (the coarsest level) | "full" (level 0)
    structure: str    # "split" | "material" | "merged"
    vin: str          # "attr" | "pulled" | "flat"
    index: str        # "scattered" | "compact"
    coverage: str     # "grid" | "grid-hi" | "stacked" | "offscreen"
    chunked: bool = False   # each instanced draw split into draws of --chunk instances (firstInstance)

    @property
    def name(self) -> str:
        return f"{self.level} {self.structure} {self.vin} {self.index} {self.coverage}" + (" chunked" if self.chunked
                                                                                        else "")

    @property
    def vertex_set(self) -> tuple:
        """What its pulled copies hold: the groups' original vertices (any level) or one level's compacted ones."""
        return (self.structure, "orig") if self.index == "scattered" else (self.structure, "compact", self.level)


VARIANTS = (
    Variant("lod", "split", "attr", "scattered", "grid"),        # the crowd's vertex path at the coarsest level
    Variant("lod", "material", "attr", "scattered", "grid"),
    Variant("lod", "merged", "attr", "scattered", "grid"),
    Variant("lod", "split", "attr", "compact", "grid"),
    Variant("lod", "merged", "attr", "compact", "grid"),
    Variant("lod", "split", "attr", "scattered", "grid-hi"),
    Variant("lod", "split", "attr", "scattered", "stacked"),
    Variant("lod", "split", "attr", "scattered", "offscreen"),
    Variant("lod", "split", "attr", "scattered", "grid", chunked=True),
    Variant("lod", "split", "pulled", "scattered", "grid"),      # the crowd's compute path at the coarsest level
    Variant("lod", "split", "pulled", "compact", "grid"),
    Variant("lod", "merged", "pulled", "scattered", "grid"),
    Variant("lod", "merged", "pulled", "compact", "grid"),
    Variant("lod", "merged", "flat", "compact", "grid"),
    Variant("full", "split", "attr", "scattered", "grid"),
    Variant("full", "merged", "attr", "scattered", "grid"),
    Variant("full", "split", "pulled", "scattered", "grid"),
)
BASE = VARIANTS[0]

VERTEX = """
#version 450
// set 0: per-instance transforms (region at xfBase: view-proj, light view-proj, then one mat4 per instance) and
// the pulled vertices (a dynamic offset per draw group: that group's region)
layout(std430, set = 0, binding = 0) readonly buffer Xf { mat4 m[]; } xf;
#if PULL
layout(std430, set = 0, binding = 1) readonly buffer Pulled { vec4 v[]; } pulled;
#else
layout(location = 0) in vec3 inPosition;
layout(location = 1) in vec3 inNormal;
layout(location = 2) in vec2 inTexcoord;
#endif
layout(push_constant) uniform PC { uint xfBase; uint strideVec4; uint flatVertices; uint unused; } pc;
#if !SHADOW
layout(location = 0) out vec3 vNormal;
layout(location = 1) out vec4 vShadow;
layout(location = 2) out vec2 vTexcoord;
#endif
void main() {
#if FLAT
    uint inst = uint(gl_VertexIndex) / pc.flatVertices;      // copy i of the level at i x its vertex count
    uint at = uint(gl_VertexIndex) * 3u;
#else
    uint inst = uint(gl_InstanceIndex);
    uint at = inst * pc.strideVec4 + uint(gl_VertexIndex) * 3u;
#endif
#if PULL
    vec4 a = pulled.v[at], b = pulled.v[at + 1u], c = pulled.v[at + 2u];   // STATIC_VERTEX as crowd_pull.vert
    vec3 position = a.xyz, normal = vec3(a.w, b.xy);
    vec2 texcoord = c.zw;
#else
    vec3 position = inPosition, normal = inNormal;
    vec2 texcoord = inTexcoord;
#endif
    mat4 model = xf.m[pc.xfBase + 2u + inst];
    vec4 world = model * vec4(position, 1.0);
#if SHADOW
    gl_Position = xf.m[pc.xfBase + 1u] * world;
#else
    gl_Position = xf.m[pc.xfBase] * world;
    vNormal = mat3(model) * normal;
    vShadow = xf.m[pc.xfBase + 1u] * world;
    vTexcoord = texcoord;
#endif
}
"""

FRAGMENT = """
#version 450
layout(set = 1, binding = 0) uniform sampler2DShadow shadowMap;
layout(location = 0) in vec3 vNormal;
layout(location = 1) in vec4 vShadow;
layout(location = 2) in vec2 vTexcoord;
layout(location = 0) out vec4 outColor;
const vec3 TO_LIGHT = normalize(vec3(0.45, 1.0, 0.35));
void main() {
    vec3 s = vShadow.xyz / vShadow.w;
    float lit = texture(shadowMap, vec3(s.xy * 0.5 + 0.5, s.z));
    float d = max(dot(normalize(vNormal), TO_LIGHT), 0.0);
    outColor = vec4(vec3(0.59, 0.29, 0.04) * (0.15 + 0.85 * d * lit) + vec3(0.0, 0.0, 0.01 * vTexcoord.x), 1.0);
}
"""
VS_KINDS = {"attr": {"PULL": 0, "FLAT": 0}, "pulled": {"PULL": 1, "FLAT": 0}, "flat": {"PULL": 1, "FLAT": 1}}


def compile_glsl(tmp: Path, name: str, stage: str, src: str, defines: dict) -> bytes:
    """glslangValidator -V --target-env vulkan1.2 (as tools/compile_shaders.py), -D per define."""
    exe = shutil.which("glslangValidator")
    if exe is None:
        raise SystemExit("glslangValidator not found: apt-get install glslang-tools (or put it on PATH)")
    path = tmp / f"{name}.{stage}"
    path.write_text(src)
    out = tmp / f"{name}.spv"
    args = [exe, "-V", "--target-env", "vulkan1.2", *[f"-D{k}={v}" for k, v in defines.items()], "-o", str(out),
            str(path)]
    proc = subprocess.run(args, capture_output=True, text=True)
    if proc.returncode:
        raise SystemExit(f"{name}: glslang failed:\n{proc.stdout}{proc.stderr}")
    return out.read_bytes()


# --------------------------------------------------------------------------------------------- the mesh (numpy)
@dataclass
class Prim:
    name: str
    material: str
    vertices: np.ndarray          # (V,) STATIC_VERTEX, world space at rest
    levels: tuple                 # uint32 index lists: level 0 (the primitive's own) .. the coarsest


def load_robot() -> list[Prim]:
    """RobotExpressive's primitives at the rest pose in world space (skinned ones by the rest palette, rigid ones
    by their node's world matrix) with their LOD levels (asset/lod.primitive_lods, the crowd's defaults)."""
    from vkmorph import load_scene
    from vkmorph.anim.skeleton import Skeleton
    from vkmorph.app.bench_data import find_model
    from vkmorph.asset.lod import primitive_lods
    from vkmorph.asset.model import STATIC_VERTEX

    path = find_model("RobotExpressive")
    if path is None:
        raise SystemExit("RobotExpressive not found (tests/assets, $VKMORPH_ASSETS or ../shared/assets)")
    scene = load_scene(str(path))
    sk = Skeleton(scene)
    world = sk.world_matrices()
    prims = []
    for ni, node in enumerate(scene.nodes):
        if node.mesh is None:
            continue
        for k, p in enumerate(scene.meshes[node.mesh].primitives):
            v = p.vertices
            if p.is_skinned:
                pal = sk.skin_matrices(p.skin).astype(np.float64)
                m = np.einsum("vk,vkij->vij", v["weights"].astype(np.float64), pal[v["joints"]])
            else:
                m = np.broadcast_to(world[ni], (len(v), 4, 4))
            out = np.zeros(len(v), STATIC_VERTEX)
            out["position"] = np.einsum("vij,vj->vi", m[:, :3, :3], v["position"]) + m[:, :3, 3]
            n = np.einsum("vij,vj->vi", m[:, :3, :3], v["normal"])
            out["normal"] = n / np.maximum(np.linalg.norm(n, axis=1, keepdims=True), 1e-12)
            out["tangent"] = v["tangent"]
            out["texcoord"] = v["texcoord"]
            mat = p.material.name if p.material is not None else "none"
            prims.append(Prim(f"{node.name} p{k}", mat, out, tuple(primitive_lods(p))))
    return prims


def groups_of(prims: list[Prim], structure: str) -> list[list[int]]:
    """Primitive indices per draw: one each (split), one list per material in first-use order, or all."""
    if structure == "split":
        return [[i] for i in range(len(prims))]
    if structure == "merged":
        return [list(range(len(prims)))]
    by: dict[str, list[int]] = {}
    for i, p in enumerate(prims):
        by.setdefault(p.material, []).append(i)
    return list(by.values())


def group_geometry(prims: list[Prim], members: list[int], level: int, compact: bool):
    """(vertices (k,) STATIC_VERTEX, uint32 indices into them) of one draw group at ``level``: the members'
    original vertices one after the other and their level's indices rebased (scattered), or only the vertices
    the level uses, in first-use order, re-indexed 0..k-1 (compact)."""
    verts = np.concatenate([prims[m].vertices for m in members])
    base = np.cumsum([0] + [len(prims[m].vertices) for m in members[:-1]])
    idx = np.concatenate([prims[m].levels[level].astype(np.int64) + b for m, b in zip(members, base)])
    if compact:
        used, first = np.unique(idx, return_index=True)
        order = used[np.argsort(first, kind="stable")]          # first-use order
        remap = np.empty(len(verts), np.int64)
        remap[order] = np.arange(len(order))
        verts, idx = verts[order], remap[idx]
    return np.ascontiguousarray(verts), np.ascontiguousarray(idx, np.uint32)


def level_index(prims: list[Prim], level: str) -> int:
    return 0 if level == "full" else len(prims[0].levels) - 1


# --------------------------------------------------------------------------------------------- layouts (numpy)
def rest_bounds(prims: list[Prim]) -> tuple[np.ndarray, np.ndarray]:
    p = np.concatenate([x.vertices["position"] for x in prims]).astype(np.float64)
    return p.min(axis=0), p.max(axis=0)


def views(lo: np.ndarray, hi: np.ndarray, aspect: float) -> tuple[np.ndarray, np.ndarray]:
    """(camera view-proj, light view-proj) framing the box [lo, hi] as SceneRenderer.frame_camera and update do."""
    from vkmorph.render.camera import OrbitCamera, light_view_proj

    cam = OrbitCamera.frame(lo, hi)
    center = (lo + hi) / 2
    radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3) * 1.6
    return cam.view_proj(aspect), light_view_proj(np.array([-0.45, -1.0, -0.35]), center, radius)


def placements(N: int, coverage: str, lo: np.ndarray, hi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(instance matrices (N, 4, 4), camera view-proj, light view-proj) of one coverage; the views are always the
    grid's of that N (module docstring)."""
    from vkmorph.app.crowd_driver import SPACING, grid_transforms

    footprint = float(max(hi[0] - lo[0], hi[2] - lo[2]))
    grid = grid_transforms(N, footprint)
    t = grid[:, :3, 3]
    cam, light = views(lo + t.min(axis=0), hi + t.max(axis=0), 4.0 / 3.0)
    m = grid.copy()
    if coverage == "stacked":
        pitch = SPACING * footprint
        rng = np.random.default_rng(N)
        m[:, 0, 3] = rng.uniform(-pitch, pitch, N)
        m[:, 2, 3] = rng.uniform(-pitch, pitch, N)
    elif coverage == "offscreen":
        width = float(t[:, 0].max() - t[:, 0].min()) + footprint
        m[:, 0, 3] += 10.0 * width + 10.0 * footprint
        corners = np.array([[x, y, z, 1.0] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        for vp in (cam, light):       # every instance's box wholly outside one clip plane of both views
            c = np.einsum("ij,nkj->nki", vp, np.einsum("nij,kj->nki", m, corners))
            x, y, z, w = np.moveaxis(c, -1, 0)
            outside = np.stack([x < -w, x > w, y < -w, y > w, z < 0, z > w]).all(axis=2).any(axis=0)
            if not outside.all():
                raise SystemExit("offscreen placement: an instance may reach a view (probe bug)")
    return m, cam, light


# --------------------------------------------------------------------------------------------- Vulkan
def make_context(validation: bool):
    from vkmorph.gpu import context as C
    return C.Context.create(validation=validation, app_name="raster probe")


class Probe:
    """Targets, pipelines, buffers and the command buffers of every configuration (variant, N)."""

    def __init__(self, ctx, prims: list[Prim], variants, counts, tmp: Path, chunk: int | None = None):
        from vkmorph.gpu import barriers as B
        from vkmorph.gpu import graphics as G
        from vkmorph.gpu import image as I
        from vkmorph.gpu import memory as M
        from vkmorph.gpu.vk import call, vk
        self.vk, self.B, self.G, self.M, self.call, self.ctx = vk, B, G, M, call, ctx
        self.prims, self.tmp, self.counts = prims, tmp, tuple(counts)
        self.n_max = max(counts)
        self.chunk = max(1, int(chunk or min(counts)))     # instances per draw of the chunked variants
        self.group = G.ObjectGroup(ctx, "raster probe")
        self._owned: list = []               # vkmorph Buffers / Images / Samplers / Timestamps, destroyed last-first
        self._keep: list = []                # push-constant arrays
        lim = ctx.info.limits
        self.max_range = int(lim["maxStorageBufferRange"])
        self.align = max(256, int(lim["minStorageBufferOffsetAlignment"]))
        if not ctx.info.timestamp_valid:
            raise SystemExit(f"{ctx.info.name}: the queue has no timestamps")
        # ---- barriers of this probe, named by what they order (vkmorph/gpu/barriers.py's Barrier)
        self.serialise = B.Barrier(   # execution only: the next pass starts after everything before it ended, so
            # each pair of timestamps brackets one pass alone (the forward pass never overlaps the shadow pass)
            "everything before -> everything after (timing)", vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0,
            vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0)
        self.sampled_to_copy = B.ImageBarrier(   # the check: the forward pass sampled the shadow map; copy it out
            "sampled shadow map -> readback copy", vk.VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT, 0,
            vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_ACCESS_TRANSFER_READ_BIT,
            vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL)
        # ---- targets
        depth_att = vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT
        aspect_d = vk.VK_IMAGE_ASPECT_DEPTH_BIT
        self.shadow_map = self._own(I.Image(ctx, SHADOW_SIZE, SHADOW_SIZE, I.DEPTH_FORMAT,
                                            depth_att | vk.VK_IMAGE_USAGE_SAMPLED_BIT, aspect_d, name="shadow map"))
        self.shadow_rp = self._shadow_render_pass()
        self.forward_rp = self._forward_render_pass()
        self.shadow_fb = G.framebuffer(ctx, self.group, self.shadow_rp, [self.shadow_map.view], SHADOW_SIZE,
                                       SHADOW_SIZE)
        self.targets = {}
        for size in sorted(set(SIZES[v.coverage] for v in variants)):
            w, h = size
            color = self._own(I.Image(ctx, w, h, vk.VK_FORMAT_R8G8B8A8_UNORM, vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT
                                      | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT, vk.VK_IMAGE_ASPECT_COLOR_BIT,
                                      name=f"colour {w}x{h}"))
            depth = self._own(I.Image(ctx, w, h, I.DEPTH_FORMAT, depth_att, aspect_d, name=f"depth {w}x{h}"))
            fb = G.framebuffer(ctx, self.group, self.forward_rp, [color.view, depth.view], w, h)
            self.targets[size] = (color, depth, fb)
        big = max(w * h for w, h in self.targets) * 4
        self.readback = self._own(M.host_buffer(ctx, SHADOW_SIZE * SHADOW_SIZE * 4 + big, M.TRANSFER_DST,
                                                name="depth readback"))
        self.sampler = self._own(I.Sampler(ctx, compare=True))
        # ---- descriptors and pipelines
        vs = vk.VK_SHADER_STAGE_VERTEX_BIT
        sb, sbd = vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC
        cis = vk.VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER
        self.set0_layout = G.set_layout(ctx, self.group, [(0, sb, vs), (1, sbd, vs)])
        self.set1_layout = G.set_layout(ctx, self.group, [(0, cis, vk.VK_SHADER_STAGE_FRAGMENT_BIT)])
        self.layout = G.pipeline_layout(ctx, self.group, [self.set0_layout, self.set1_layout], 16, vs)
        self.pool = G.descriptor_pool(ctx, self.group, 16, {sb: 16, sbd: 16, cis: 2})
        self.set1 = G.allocate_set(ctx, self.pool, self.set1_layout)
        G.write_image(ctx, self.set1, 0, self.shadow_map.view, self.sampler.handle,
                      vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL)
        self.pipelines = {}
        for kind in sorted(set(v.vin for v in variants)):
            for shadow in (True, False):
                self.pipelines[(kind, shadow)] = self._pipeline(kind, shadow)
        # ---- transforms: per (N, coverage) a region [camera, light, N instance matrices]
        lo, hi = rest_bounds(prims)
        mats, self.xf_base = [], {}
        at = 0
        for N in self.counts:
            for cov in sorted(set("grid" if v.coverage == "grid-hi" else v.coverage for v in variants)):
                m, cam, light = placements(N, cov, lo, hi)
                self.xf_base[(N, cov)] = at
                mats += [cam[None], light[None], m]
                at += 2 + N
        xf = np.concatenate(mats).astype(np.float32).transpose(0, 2, 1)     # std430 mat4: column-major
        self.transforms = self._own(M.device_buffer(ctx, np.ascontiguousarray(xf), M.STORAGE, name="transforms"))
        self.dummy = self._own(M.device_buffer(ctx, np.zeros(64, np.uint8), M.STORAGE, name="no pulled vertices"))
        self.sets = {None: self._set0(self.dummy, 16)}
        self.pulled: dict[tuple, dict] = {}      # per vertex set: buffer, region offsets, or why there is none
        # ---- geometry per (level, structure, index): groups, index buffer, attribute vertices, pulled copies
        self.geom = {}
        for v in variants:
            self._geometry(v)
        self.ts = None
        self.configs: list[tuple[Variant, int]] = []

    # ------------------------------------------------------------------ set-up helpers
    def _own(self, obj):
        self._owned.append(obj)
        return obj

    def _dependency(self, src_stage, src_access, dst_stage, dst_access, external_first: bool):
        vk = self.vk
        return vk.VkSubpassDependency(srcSubpass=vk.VK_SUBPASS_EXTERNAL if external_first else 0,
                                      dstSubpass=0 if external_first else vk.VK_SUBPASS_EXTERNAL,
                                      srcStageMask=src_stage, dstStageMask=dst_stage, srcAccessMask=src_access,
                                      dstAccessMask=dst_access)

    def _shadow_render_pass(self):
        """D32, cleared, stored, left SHADER_READ_ONLY for the forward pass's lookup."""
        vk = self.vk
        from vkmorph.gpu.image import DEPTH_FORMAT
        tests = vk.VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT | vk.VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT
        rw = vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT | vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT
        att = vk.VkAttachmentDescription(
            format=DEPTH_FORMAT, samples=vk.VK_SAMPLE_COUNT_1_BIT, loadOp=vk.VK_ATTACHMENT_LOAD_OP_CLEAR,
            storeOp=vk.VK_ATTACHMENT_STORE_OP_STORE, stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
            stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE, initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
            finalLayout=vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL)
        ref = vk.VkAttachmentReference(attachment=0, layout=vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
        sub = vk.VkSubpassDescription(pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS,
                                      pDepthStencilAttachment=[ref])
        deps = [
            # the previous configuration's lookup (fragment shader), readback copy and depth writes of the map
            # before this pass clears and writes it
            self._dependency(vk.VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT | tests | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                             vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT, tests, rw, True),
            # this pass's depth writes before the forward pass's lookup and the check's copy
            self._dependency(tests, vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT,
                             vk.VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT | vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                             vk.VK_ACCESS_SHADER_READ_BIT | vk.VK_ACCESS_TRANSFER_READ_BIT, False)]
        info = vk.VkRenderPassCreateInfo(attachmentCount=1, pAttachments=[att], subpassCount=1, pSubpasses=[sub],
                                         dependencyCount=len(deps), pDependencies=deps)
        return self.group.add(vk.vkDestroyRenderPass, self.call("vkCreateRenderPass", self.ctx.device, info, None))

    def _forward_render_pass(self):
        """RGBA8 + D32, cleared, stored, left TRANSFER_SRC for the check's copy."""
        vk = self.vk
        from vkmorph.gpu.image import DEPTH_FORMAT
        tests = vk.VK_PIPELINE_STAGE_EARLY_FRAGMENT_TESTS_BIT | vk.VK_PIPELINE_STAGE_LATE_FRAGMENT_TESTS_BIT
        out = vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT
        writes = vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT | vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_WRITE_BIT

        def att(fmt):
            return vk.VkAttachmentDescription(
                format=fmt, samples=vk.VK_SAMPLE_COUNT_1_BIT, loadOp=vk.VK_ATTACHMENT_LOAD_OP_CLEAR,
                storeOp=vk.VK_ATTACHMENT_STORE_OP_STORE, stencilLoadOp=vk.VK_ATTACHMENT_LOAD_OP_DONT_CARE,
                stencilStoreOp=vk.VK_ATTACHMENT_STORE_OP_DONT_CARE, initialLayout=vk.VK_IMAGE_LAYOUT_UNDEFINED,
                finalLayout=vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL)
        cref = vk.VkAttachmentReference(attachment=0, layout=vk.VK_IMAGE_LAYOUT_COLOR_ATTACHMENT_OPTIMAL)
        dref = vk.VkAttachmentReference(attachment=1, layout=vk.VK_IMAGE_LAYOUT_DEPTH_STENCIL_ATTACHMENT_OPTIMAL)
        sub = vk.VkSubpassDescription(pipelineBindPoint=vk.VK_PIPELINE_BIND_POINT_GRAPHICS, colorAttachmentCount=1,
                                      pColorAttachments=[cref], pDepthStencilAttachment=[dref])
        deps = [
            # the previous configuration's attachment writes and readback copy before this pass clears them
            self._dependency(out | tests | vk.VK_PIPELINE_STAGE_TRANSFER_BIT, writes, out | tests,
                             writes | vk.VK_ACCESS_COLOR_ATTACHMENT_READ_BIT
                             | vk.VK_ACCESS_DEPTH_STENCIL_ATTACHMENT_READ_BIT, True),
            # this pass's writes before the check's copy
            self._dependency(out | tests, writes, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_ACCESS_TRANSFER_READ_BIT,
                             False)]
        info = vk.VkRenderPassCreateInfo(attachmentCount=2, pAttachments=[att(vk.VK_FORMAT_R8G8B8A8_UNORM),
                                                                          att(DEPTH_FORMAT)],
                                         subpassCount=1, pSubpasses=[sub], dependencyCount=len(deps),
                                         pDependencies=deps)
        return self.group.add(vk.vkDestroyRenderPass, self.call("vkCreateRenderPass", self.ctx.device, info, None))

    def _module(self, code: bytes):
        vk = self.vk
        return self.call("vkCreateShaderModule", self.ctx.device,
                         vk.VkShaderModuleCreateInfo(codeSize=len(code), pCode=code), None)

    def _pipeline(self, kind: str, shadow: bool):
        """The shadow pass's (depth bias, no culling, no fragment shader) or the forward pass's (back faces
        culled, counter-clockwise front) pipeline of one vertex-input kind, as the renderer's crowd pipelines."""
        vk = self.vk
        defines = dict(VS_KINDS[kind], SHADOW=int(shadow))
        codes = [compile_glsl(self.tmp, f"vs_{kind}_{int(shadow)}", "vert", VERTEX, defines)]
        if not shadow:
            codes.append(compile_glsl(self.tmp, "fs", "frag", FRAGMENT, {}))
        mods = [self._module(c) for c in codes]
        try:
            stages = [vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_VERTEX_BIT, module=mods[0],
                                                         pName="main")]
            if not shadow:
                stages.append(vk.VkPipelineShaderStageCreateInfo(stage=vk.VK_SHADER_STAGE_FRAGMENT_BIT,
                                                                 module=mods[1], pName="main"))
            if kind == "attr":
                bind = [vk.VkVertexInputBindingDescription(binding=0, stride=48,
                                                           inputRate=vk.VK_VERTEX_INPUT_RATE_VERTEX)]
                attrs = [vk.VkVertexInputAttributeDescription(location=0, binding=0,
                                                              format=vk.VK_FORMAT_R32G32B32_SFLOAT, offset=0),
                         vk.VkVertexInputAttributeDescription(location=1, binding=0,
                                                              format=vk.VK_FORMAT_R32G32B32_SFLOAT, offset=12),
                         vk.VkVertexInputAttributeDescription(location=2, binding=0,
                                                              format=vk.VK_FORMAT_R32G32_SFLOAT, offset=40)]
                vin = vk.VkPipelineVertexInputStateCreateInfo(vertexBindingDescriptionCount=1,
                                                              pVertexBindingDescriptions=bind,
                                                              vertexAttributeDescriptionCount=len(attrs),
                                                              pVertexAttributeDescriptions=attrs)
            else:
                vin = vk.VkPipelineVertexInputStateCreateInfo()
            ia = vk.VkPipelineInputAssemblyStateCreateInfo(topology=vk.VK_PRIMITIVE_TOPOLOGY_TRIANGLE_LIST)
            vp = vk.VkPipelineViewportStateCreateInfo(viewportCount=1, scissorCount=1)
            rs = vk.VkPipelineRasterizationStateCreateInfo(
                polygonMode=vk.VK_POLYGON_MODE_FILL,
                cullMode=vk.VK_CULL_MODE_NONE if shadow else vk.VK_CULL_MODE_BACK_BIT,
                frontFace=vk.VK_FRONT_FACE_COUNTER_CLOCKWISE, lineWidth=1.0,
                depthBiasEnable=vk.VK_TRUE if shadow else vk.VK_FALSE,
                depthBiasConstantFactor=1.25 if shadow else 0.0, depthBiasSlopeFactor=1.75 if shadow else 0.0)
            ms = vk.VkPipelineMultisampleStateCreateInfo(rasterizationSamples=vk.VK_SAMPLE_COUNT_1_BIT)
            ds = vk.VkPipelineDepthStencilStateCreateInfo(depthTestEnable=vk.VK_TRUE, depthWriteEnable=vk.VK_TRUE,
                                                          depthCompareOp=vk.VK_COMPARE_OP_LESS)
            blend = vk.VkPipelineColorBlendAttachmentState(blendEnable=vk.VK_FALSE, colorWriteMask=0xF)
            cb = vk.VkPipelineColorBlendStateCreateInfo(attachmentCount=0 if shadow else 1,
                                                        pAttachments=None if shadow else [blend])
            dyn = vk.VkPipelineDynamicStateCreateInfo(dynamicStateCount=2, pDynamicStates=[
                vk.VK_DYNAMIC_STATE_VIEWPORT, vk.VK_DYNAMIC_STATE_SCISSOR])
            info = vk.VkGraphicsPipelineCreateInfo(
                stageCount=len(stages), pStages=stages, pVertexInputState=vin, pInputAssemblyState=ia,
                pViewportState=vp, pRasterizationState=rs, pMultisampleState=ms, pDepthStencilState=ds,
                pColorBlendState=cb, pDynamicState=dyn, layout=self.layout,
                renderPass=self.shadow_rp if shadow else self.forward_rp, subpass=0)
            pipe = self.call("vkCreateGraphicsPipelines", self.ctx.device, vk.VK_NULL_HANDLE, 1, [info], None)[0]
        finally:
            for m in mods:
                vk.vkDestroyShaderModule(self.ctx.device, m, None)
        return self.group.add(vk.vkDestroyPipeline, pipe)

    def _set0(self, pulled, pulled_range: int):
        vk, G = self.vk, self.G
        s = G.allocate_set(self.ctx, self.pool, self.set0_layout)
        G.write_buffer(self.ctx, s, 0, vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, self.transforms.handle)
        G.write_buffer(self.ctx, s, 1, vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER_DYNAMIC, pulled.handle, 0, pulled_range)
        return s

    def _geometry(self, v: Variant) -> None:
        """The index buffer (and attribute vertices) of (level, structure, index), and for pulled / flat variants
        the per-instance copies of its vertices: per group a region of n_max x its vertices (instance i at
        i x vertices), regions in increasing size (the dynamic range is the largest, so it fits the last)."""
        M, prims = self.M, self.prims
        key = (v.level, v.structure, v.index)
        if key not in self.geom:
            lv = level_index(prims, v.level)
            gs = [group_geometry(prims, mem, lv, v.index == "compact") for mem in groups_of(prims, v.structure)]
            counts = [len(i) for _, i in gs]
            verts = [len(x) for x, _ in gs]
            g = {"groups": gs, "first_index": np.cumsum([0] + counts[:-1]).tolist(), "index_counts": counts,
                 "vertex_counts": verts, "vertex_offsets": (48 * np.cumsum([0] + verts[:-1])).tolist(),
                 "distinct": [int(len(np.unique(i))) for _, i in gs],
                 "span": [int(i.max()) + 1 - int(i.min()) for _, i in gs]}
            g["ib"] = self._own(M.device_buffer(self.ctx, np.concatenate([i for _, i in gs]), M.INDEX,
                                                name=f"indices {' '.join(key)}"))
            g["vb"] = self._own(M.device_buffer(self.ctx, np.concatenate([x for x, _ in gs]), M.VERTEX,
                                                name=f"vertices {' '.join(key)}"))
            self.geom[key] = g
        g = self.geom[key]
        vkey = v.vertex_set
        if v.vin in ("pulled", "flat") and vkey not in self.pulled:
            region = [-(-self.n_max * 48 * n // self.align) * self.align for n in g["vertex_counts"]]
            order = np.argsort(region, kind="stable")
            offsets, at = [0] * len(region), 0
            for k in order:
                offsets[k], at = at, at + region[k]
            rng = max(region)
            if rng > self.max_range:
                self.pulled[vkey] = {"skip": f"a group's {self.n_max:,} copies ({rng:,} B) exceed "
                                             f"maxStorageBufferRange ({self.max_range:,} B)"}
            else:
                buf = self._own(M.Buffer(self.ctx, at, M.STORAGE | M.TRANSFER_DST | M.TRANSFER_SRC,
                                         name=f"pulled {' '.join(vkey)}"))
                for (x, _), off in zip(g["groups"], offsets):
                    M.upload_replicated(self.ctx, buf, x, self.n_max, offset=off)
                self.pulled[vkey] = {"buffer": buf, "offsets": offsets, "set": self._set0(buf, rng), "bytes": at}
        if v.vin == "flat" and "flat_ib" not in g:
            if len(g["groups"]) != 1 or "buffer" not in self.pulled[vkey]:
                raise SystemExit(f"{v.name}: flat needs one merged group with pulled copies")
            idx, k = g["groups"][0][1].astype(np.int64), g["vertex_counts"][0]
            flat = (idx[None, :] + k * np.arange(self.n_max, dtype=np.int64)[:, None]).reshape(-1)
            g["flat_ib"] = self._own(M.device_buffer(self.ctx, flat.astype(np.uint32), M.INDEX,
                                                     name=f"flat indices {' '.join(key)}"))

    # ------------------------------------------------------------------ recording
    def skip_reason(self, v: Variant) -> str | None:
        if v.vin != "attr" and "buffer" not in self.pulled[v.vertex_set]:
            return self.pulled[v.vertex_set]["skip"]
        return None

    def draws(self, v: Variant, N: int) -> list[tuple[int, int]]:
        """(index count, instance count) of each draw of one pass."""
        g = self.geom[(v.level, v.structure, v.index)]
        if v.vin == "flat":
            return [(g["index_counts"][0] * N, 1)]
        return [(n, c) for n in g["index_counts"] for _, c in self.chunks(v, N)]

    def chunks(self, v: Variant, N: int) -> list[tuple[int, int]]:
        """(first instance, instance count) of each instanced draw of one group."""
        step = self.chunk if v.chunked else N
        return [(f, min(step, N - f)) for f in range(0, N, step)]

    def _draw_pass(self, cb, v: Variant, N: int, shadow: bool) -> None:
        vk = self.vk
        g = self.geom[(v.level, v.structure, v.index)]
        pulled = v.vin != "attr"
        pv = self.pulled.get(v.vertex_set, {}) if pulled else {}
        dset = pv["set"] if pulled else self.sets[None]
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.pipelines[(v.vin, shadow)])
        if not shadow:
            vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 1, 1, [self.set1], 0,
                                       None)
        xf = self.xf_base[(N, "grid" if v.coverage == "grid-hi" else v.coverage)]
        if v.vin == "flat":
            vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 0, 1, [dset], 1,
                                       [pv["offsets"][0]])
            self._push(cb, xf, 0, g["vertex_counts"][0])
            vk.vkCmdBindIndexBuffer(cb, g["flat_ib"].handle, 0, vk.VK_INDEX_TYPE_UINT32)
            vk.vkCmdDrawIndexed(cb, g["index_counts"][0] * N, 1, 0, 0, 0)
            return
        vk.vkCmdBindIndexBuffer(cb, g["ib"].handle, 0, vk.VK_INDEX_TYPE_UINT32)
        if not pulled:
            vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 0, 1, [dset], 1, [0])
        for k, (n, first) in enumerate(zip(g["index_counts"], g["first_index"])):
            if pulled:     # this group's region, as the crowd binds each primitive's compute-skinning output
                vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 0, 1, [dset], 1,
                                           [pv["offsets"][k]])
                self._push(cb, xf, 3 * g["vertex_counts"][k], 0)
            else:          # this group's vertices, as the crowd binds each primitive's vertex buffer
                if k == 0:
                    self._push(cb, xf, 0, 0)
                vk.vkCmdBindVertexBuffers(cb, 0, 1, [g["vb"].handle], [g["vertex_offsets"][k]])
            for first_instance, count in self.chunks(v, N):
                vk.vkCmdDrawIndexed(cb, n, count, first, 0, first_instance)

    def _push(self, cb, xf: int, stride_vec4: int, flat_vertices: int) -> None:
        pc = np.array([xf, stride_vec4, flat_vertices, 0], np.uint32)
        self._keep.append(pc)
        self.vk.vkCmdPushConstants(cb, self.layout, self.vk.VK_SHADER_STAGE_VERTEX_BIT, 0, 16,
                                   self.vk.ffi.from_buffer(pc))

    def record(self, v: Variant, N: int, slot: int, check: bool):
        """One configuration's command buffer (module docstring); ``check``: the depth images copied to the
        readback buffer after the passes."""
        vk, B, ctx = self.vk, self.B, self.ctx
        from vkmorph.gpu.timestamps import BOTTOM
        cb = ctx.allocate_command_buffer()
        self.group.add(lambda d, c, _: ctx.free_command_buffer(c), cb)
        ctx.begin(cb)
        self.ts.reset(cb, slot)
        B.record(cb, self.serialise)
        self.ts.write(cb, 0, slot, BOTTOM)
        clear_depth = vk.VkClearValue(depthStencil=vk.VkClearDepthStencilValue(depth=1.0, stencil=0))
        vk.vkCmdBeginRenderPass(cb, vk.VkRenderPassBeginInfo(
            renderPass=self.shadow_rp, framebuffer=self.shadow_fb,
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(SHADOW_SIZE, SHADOW_SIZE)),
            clearValueCount=1, pClearValues=[clear_depth]), vk.VK_SUBPASS_CONTENTS_INLINE)
        self.G.set_viewport(cb, SHADOW_SIZE, SHADOW_SIZE)
        self._draw_pass(cb, v, N, True)
        vk.vkCmdEndRenderPass(cb)
        B.record(cb, self.serialise)
        self.ts.write(cb, 1, slot, BOTTOM)
        w, h = SIZES[v.coverage]
        color, depth, fb = self.targets[(w, h)]
        clear = [vk.VkClearValue(color=vk.VkClearColorValue(float32=[0.5, 0.6, 0.7, 1.0])), clear_depth]
        vk.vkCmdBeginRenderPass(cb, vk.VkRenderPassBeginInfo(
            renderPass=self.forward_rp, framebuffer=fb,
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(w, h)),
            clearValueCount=2, pClearValues=clear), vk.VK_SUBPASS_CONTENTS_INLINE)
        self.G.set_viewport(cb, w, h)
        self._draw_pass(cb, v, N, False)
        vk.vkCmdEndRenderPass(cb)
        self.ts.write(cb, 2, slot, BOTTOM)
        if check:
            B.record_image(cb, self.sampled_to_copy, self.shadow_map.handle, aspect=vk.VK_IMAGE_ASPECT_DEPTH_BIT)
            layout = vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL
            for img, size, off in ((self.shadow_map, (SHADOW_SIZE, SHADOW_SIZE), 0),
                                   (depth, (w, h), SHADOW_SIZE * SHADOW_SIZE * 4)):
                region = vk.VkBufferImageCopy(
                    bufferOffset=off, bufferRowLength=0, bufferImageHeight=0,
                    imageSubresource=vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_DEPTH_BIT,
                                                                 mipLevel=0, baseArrayLayer=0, layerCount=1),
                    imageOffset=vk.VkOffset3D(0, 0, 0), imageExtent=vk.VkExtent3D(size[0], size[1], 1))
                vk.vkCmdCopyImageToBuffer(cb, img.handle, layout, self.readback.handle, 1, [region])
            B.record(cb, B.TRANSFER_TO_HOST)
        ctx.end(cb)
        return cb

    def build(self, configs: list[tuple[Variant, int]]) -> None:
        from vkmorph.gpu.timestamps import Timestamps
        self.configs = configs
        self.ts = self._own(Timestamps(self.ctx, count=3, slots=len(configs)))
        self.timed = [self.record(v, N, k, check=False) for k, (v, N) in enumerate(configs)]
        self.fence = self.group.add(self.vk.vkDestroyFence, self.call("vkCreateFence", self.ctx.device,
                                                                      self.vk.VkFenceCreateInfo(), None))

    def run_round(self, order: list[int], timeout_s: float = 600.0) -> list[tuple[float, float]]:
        """Every configuration of ``order`` in one submission; (shadow ms, forward ms) per configuration."""
        self.call("vkResetFences", self.ctx.device, 1, [self.fence])
        self.ctx.submit([self.timed[k] for k in order], fence=self.fence)
        self.ctx.wait_fence(self.fence, timeout_s=timeout_s)
        out = [(0.0, 0.0)] * len(self.configs)
        for k in order:
            t = self.ts.read_ms(k)
            out[k] = (t[0], t[1] - t[0])
        return out

    def check(self, k: int) -> tuple[np.ndarray, np.ndarray]:
        """Configuration k run once more with its depth images read back: (shadow map, forward depth)."""
        v, N = self.configs[k]
        cb = self.record(v, N, k, check=True)
        self.call("vkResetFences", self.ctx.device, 1, [self.fence])
        self.ctx.submit([cb], fence=self.fence)
        self.ctx.wait_fence(self.fence, timeout_s=600.0)
        w, h = SIZES[v.coverage]
        s = self.readback.view(np.float32, SHADOW_SIZE * SHADOW_SIZE + w * h)
        return s[:SHADOW_SIZE * SHADOW_SIZE].copy(), s[SHADOW_SIZE * SHADOW_SIZE:].copy()

    def destroy(self) -> None:
        self.group.destroy()
        while self._owned:
            self._owned.pop().destroy()


# --------------------------------------------------------------------------------------------- child
def child(a) -> dict:
    counts = (VALIDATE_COUNT,) if a.validate else tuple(a.counts)
    variants = selected_variants(a.variants)
    prims = load_robot()
    ctx = make_context(a.validate)
    res = {"device": ctx.info.name, "driver_version": ctx.info.driver_version, "counts": list(counts),
           "rows": [], "messages": [], "limits": {k: (list(x) if isinstance(x, tuple) else x)
                                                 for k, x in ctx.info.limits.items()}}
    probe = None
    t_setup = time.perf_counter()
    try:
        with tempfile.TemporaryDirectory() as tmp:
            probe = Probe(ctx, prims, variants, counts, Path(tmp), chunk=VALIDATE_CHUNK if a.validate else a.chunk)
            res["chunk"] = probe.chunk
            res["pulled_bytes"] = {" ".join(k): p.get("bytes", 0) for k, p in probe.pulled.items()}
            configs = []
            for N in counts:
                for v in variants:
                    reason = probe.skip_reason(v)
                    if reason:
                        res["rows"].append({"variant": v.name, **v.__dict__, "instances": N, "skipped": reason})
                    else:
                        configs.append((v, N))
            probe.build(configs)
            res["setup_s"] = time.perf_counter() - t_setup
            rounds = 1 if a.validate else a.warmup + a.repeats
            samples = [[] for _ in configs]
            wall, cpu = [], []
            r = 0
            while r < rounds:
                order = list(range(len(configs)))
                order = order[r % len(order):] + order[:r % len(order)]
                w0, c0 = time.perf_counter(), time.process_time()
                ms = probe.run_round(order)
                wall.append(time.perf_counter() - w0)
                cpu.append(time.process_time() - c0)
                if a.validate or r >= a.warmup:
                    for k, x in enumerate(ms):
                        samples[k].append(x)
                if r == 0 and not a.validate and a.budget_s > 0:   # the repeats that fit the budget: at least 3,
                    # 2 when one round takes over a third of it
                    fit = max(3 if wall[0] <= a.budget_s / 3 else 2, int(a.budget_s / max(wall[0], 1e-3)))
                    if fit < a.repeats:
                        rounds = a.warmup + fit
                        res["repeats_cut"] = (f"{a.repeats} -> {fit} (--budget-s {a.budget_s:g}, a round "
                                              f"{wall[0]:.1f} s)")
                r += 1
            res["repeats"] = len(samples[0]) if samples else 0
            res["round_wall_s"], res["round_cpu_s"] = wall, cpu
            refs: dict = {}
            for k, (v, N) in enumerate(configs):
                shadow, fwd = probe.check(k)
                key = (v.level, N, v.coverage)
                row = {"variant": v.name, **v.__dict__, "instances": N}
                draws = probe.draws(v, N)
                g = probe.geom[(v.level, v.structure, v.index)]
                row["draws"] = len(draws)
                row["indices_per_instance"] = sum(g["index_counts"])
                row["triangles"] = sum(n * inst for n, inst in draws) // 3
                row["instance_draws"] = sum(inst for _, inst in draws) if v.vin != "flat" else N
                row["groups"] = len(g["index_counts"])
                row["vertices_per_instance"] = sum(g["vertex_counts"])
                row["distinct_vertices"] = sum(g["distinct"])
                row["index_span"] = sum(g["span"])
                s = np.array(samples[k])
                row["shadow_ms"], row["forward_ms"] = float(np.median(s[:, 0])), float(np.median(s[:, 1]))
                row["shadow_ms_all"], row["forward_ms_all"] = s[:, 0].tolist(), s[:, 1].tolist()
                for p in ("shadow", "forward"):
                    row[f"{p}_ns_per_triangle"] = row[f"{p}_ms"] * 1e6 / max(row["triangles"], 1)
                    row[f"{p}_ns_per_instance_draw"] = row[f"{p}_ms"] * 1e6 / max(row["instance_draws"], 1)
                row["shadow_coverage"] = float(np.mean(shadow < 1.0))
                row["forward_coverage"] = float(np.mean(fwd < 1.0))
                if key not in refs:
                    refs[key] = (v.name, shadow, fwd)
                ref, rs, rf = refs[key]
                row["check_reference"] = ref
                row["shadow_mismatch"] = float(np.mean(np.abs(shadow - rs) > DEPTH_EPS))
                row["forward_mismatch"] = float(np.mean(np.abs(fwd - rf) > DEPTH_EPS))
                drawn = row["shadow_coverage"] > 0 and row["forward_coverage"] > 0
                row["check_ok"] = bool(row["shadow_mismatch"] <= MISMATCH_OK and row["forward_mismatch"] <= MISMATCH_OK
                                       and (drawn if v.coverage != "offscreen" else
                                            row["shadow_coverage"] == 0 and row["forward_coverage"] == 0))
                res["rows"].append(row)
    finally:
        close_probe(ctx, probe, res)
    return res


def selected_variants(text: str | None) -> tuple[Variant, ...]:
    if not text:
        return VARIANTS
    want = [t.strip() for t in text.split(",") if t.strip()]
    by = {v.name: v for v in VARIANTS}
    bad = [t for t in want if t not in by]
    if bad:
        raise SystemExit(f"--variants: unknown {bad}; known: {list(by)}")
    return tuple(by[t] for t in want)


# --------------------------------------------------------------------------------------------- report
def growth(rows: list[dict], name: str, key: str = "total") -> tuple[float, float, float, int, int] | None:
    """(growth, ns/tri at N min, ns/tri at N max, N min, N max) of a variant: growth = (time at N max / time
    at N min) / (N max / N min); 1 = linear in N."""
    rs = sorted((r for r in rows if r.get("variant") == name and "skipped" not in r), key=lambda r: r["instances"])
    if len(rs) < 2:
        return None

    def t(r):
        return r["shadow_ms"] + r["forward_ms"] if key == "total" else r[f"{key}_ms"]
    a, b = rs[0], rs[-1]
    if t(a) <= 0:
        return None
    g = (t(b) / t(a)) / (b["instances"] / a["instances"])
    return g, t(a) * 1e6 / a["triangles"], t(b) * 1e6 / b["triangles"], a["instances"], b["instances"]


def findings(rows: list[dict]) -> str:
    """The closing paragraph, from the numbers (module docstring)."""
    names = list(dict.fromkeys(r["variant"] for r in rows))
    gs = {n: growth(rows, n) for n in names}
    gs = {n: g for n, g in gs.items() if g is not None}
    if BASE.name not in gs:
        return "What this shows: nothing (the base variant needs two instance counts)."
    g0, lo0, hi0, n0, n1 = gs[BASE.name]

    def kind(g):
        return "superlinear" if g > GROWTH_SUPERLINEAR else ("about linear" if g <= GROWTH_LINEAR else "mildly "
                                                                                                        "superlinear")
    out = [f"What this shows (computed from the rows; growth = time ratio N={n1:,} / N={n0:,} over the instance "
           f"ratio {n1 / n0:g}, shadow + forward; above {GROWTH_SUPERLINEAR} superlinear, at most {GROWTH_LINEAR} "
           f"about linear): the base variant ({BASE.name}: the crowd's coarsest level as it draws it) grows "
           f"{g0:.2f}x ({kind(g0)}; shadow {growth(rows, BASE.name, 'shadow')[0]:.2f}x, forward "
           f"{growth(rows, BASE.name, 'forward')[0]:.2f}x), {lo0:.2f} -> {hi0:.2f} ns per triangle."]
    curve = sorted((r["instances"], (r["shadow_ms"] + r["forward_ms"]) * 1e6 / r["triangles"]) for r in rows
                   if r.get("variant") == BASE.name and "skipped" not in r)
    out.append("Its ns per triangle (shadow + forward) by N: " + ", ".join(f"{n:,}: {x:.2f}" for n, x in curve) + ".")
    others = [(n, g) for n, g in gs.items() if n != BASE.name]
    if g0 > GROWTH_SUPERLINEAR:
        fixed = [f"{n} ({g[0]:.2f}x, {g[2]:.2f} ns/tri)" for n, g in others if g[0] <= GROWTH_LINEAR]
        part = [f"{n} ({g[0]:.2f}x)" for n, g in others if GROWTH_LINEAR < g[0] <= GROWTH_SUPERLINEAR]
        kept = [f"{n} ({g[0]:.2f}x)" for n, g in others if g[0] > GROWTH_SUPERLINEAR]
        out.append("Variants that remove the superlinearity: " + ("; ".join(fixed) if fixed else "none") + ".")
        if part:
            out.append("Variants that reduce it: " + "; ".join(part) + ".")
        out.append("Variants that keep it: " + ("; ".join(kept) if kept else "none") + ".")
    else:
        out.append("The base variant is not superlinear here, so no variant can be said to remove it; the rows "
                   "still rank the ways of drawing.")
    at_max = {r["variant"]: r for r in rows if r.get("instances") == n1 and "skipped" not in r}
    base_max = at_max.get(BASE.name)
    if base_max is not None:
        bt = base_max["shadow_ms"] + base_max["forward_ms"]
        same_tris = [(n, r) for n, r in at_max.items() if n != BASE.name and r["level"] == BASE.level]
        faster = sorted(((r["shadow_ms"] + r["forward_ms"]) / bt, n) for n, r in same_tris)
        if faster:
            out.append(f"At N={n1:,}, the same triangles drawn other ways take, relative to the base's "
                       f"{bt:.2f} ms: " + ", ".join(f"{n} {x:.2f}x" for x, n in faster) + ".")
        merged = at_max.get(Variant(BASE.level, "merged", BASE.vin, BASE.index, BASE.coverage).name)
        if merged is not None and merged["shadow_ms"] + merged["forward_ms"] > 0:
            ratio = bt / (merged["shadow_ms"] + merged["forward_ms"])
            dr = base_max["instance_draws"] / max(merged["instance_draws"], 1)
            follows = ("the instance-draws (a fixed cost per instance of each draw)" if ratio >= 0.5 * dr else
                       "the triangles, not the draws" if ratio <= 1.25 else "neither alone")
            out.append(f"At N={n1:,} the {base_max['draws']} draws per pass cost {ratio:.2f}x the single merged draw "
                       f"for {dr:g}x the instance-draws ({base_max['shadow_ns_per_instance_draw']:.0f} vs "
                       f"{merged['shadow_ns_per_instance_draw']:.0f} ns per instance-draw in the shadow pass): the "
                       f"time follows {follows}.")
        off = at_max.get(Variant(BASE.level, BASE.structure, BASE.vin, BASE.index, "offscreen").name)
        if off is not None and bt > 0:
            share = (off["shadow_ms"] + off["forward_ms"]) / bt
            where = ("before rasterization (vertex fetch, shading, primitive assembly and clipping: the same work "
                     "with nothing on screen costs as much)" if share >= 0.7 else
                     "in rasterization and pixels (nothing on screen removes most of it)" if share <= 0.3 else
                     "split between vertex work and rasterization")
            out.append(f"With every instance off screen the base's passes take {share:.2f}x its time: the cost is "
                       f"{where}.")
        hi = at_max.get(Variant(BASE.level, BASE.structure, BASE.vin, BASE.index, "grid-hi").name)
        if hi is not None and base_max["forward_ms"] > 0:
            out.append(f"At 1280x960 (16x the pixels per instance) the forward pass takes "
                       f"{hi['forward_ms'] / base_max['forward_ms']:.2f}x the 320x240 one (its shadow pass, the "
                       f"same work, {hi['shadow_ms'] / max(base_max['shadow_ms'], 1e-9):.2f}x).")
    full = [(n, g) for n, g in gs.items() if n.startswith("full ")]
    if full:
        out.append("Full detail: " + "; ".join(f"{n} grows {g[0]:.2f}x, {g[1]:.2f} -> {g[2]:.2f} ns/tri"
                                               for n, g in full) + ".")
    return " ".join(out)


def table(res: dict) -> list[str]:
    head = (f"{'N':>6}  {'variant':<40} {'draws':>5} {'tri/inst':>8} {'shadow ms':>9} {'fwd ms':>8} "
            f"{'ns/tri s':>8} {'ns/tri f':>8} {'ns/idraw s':>10} {'ns/idraw f':>10} {'cover f':>7} check")
    lines = [head]
    rows = [r for r in res["rows"]]
    order = {v.name: i for i, v in enumerate(VARIANTS)}
    rows.sort(key=lambda r: (order.get(r["variant"], 99), r["instances"]))
    for r in rows:
        if "skipped" in r:
            lines.append(f"{r['instances']:>6}  {r['variant']:<40} skipped: {r['skipped']}")
            continue
        ok = "ok" if r["check_ok"] else (f"FAIL (vs {r['check_reference']}: shadow {r['shadow_mismatch']:.3%}, "
                                         f"forward {r['forward_mismatch']:.3%} differ)")
        lines.append(f"{r['instances']:>6}  {r['variant']:<40} {r['draws']:>5} {r['indices_per_instance'] // 3:>8} "
                     f"{r['shadow_ms']:>9.3f} {r['forward_ms']:>8.3f} {r['shadow_ns_per_triangle']:>8.2f} "
                     f"{r['forward_ns_per_triangle']:>8.2f} {r['shadow_ns_per_instance_draw']:>10.1f} "
                     f"{r['forward_ns_per_instance_draw']:>10.1f} {r['forward_coverage']:>7.1%} {ok}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--counts", type=lambda s: [int(x) for x in s.split(",") if x.strip()], default=list(COUNTS),
                    help="instance counts, comma-separated (default 1000,2000,4000,7000,10000)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--budget-s", type=float, default=60.0,
                    help="seconds of timed rounds at most: fewer repeats (at least 3, or 2 when a round takes over "
                         "a third of it) when a round is slow; 0: off")
    ap.add_argument("--quick", action="store_true", help=f"N in {COUNTS_QUICK}, 3 repeats (lavapipe)")
    ap.add_argument("--variants", help="comma-separated variant names (default: all)")
    ap.add_argument("--chunk", type=int, help="instances per draw of the chunked variant (default: the smallest "
                                              "count, so that count's row equals the base's)")
    ap.add_argument("--json")
    ap.add_argument("--out")
    ap.add_argument("--no-validate", action="store_true", help="skip the validation child")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--validate", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.quick:
        a.counts, a.repeats = list(COUNTS_QUICK), 3
    if not a.counts or min(a.counts) < 1 or a.repeats < 1 or a.warmup < 0:
        raise SystemExit("--counts must be positive integers, --repeats at least 1, --warmup at least 0")
    if a.child:
        print(json.dumps(child(a)))
        return
    selected_variants(a.variants)
    t0 = time.perf_counter()
    lines = [f"# bench/raster_probe.py {' '.join(sys.argv[1:])}, {time.strftime('%Y-%m-%d %H:%M', time.gmtime())} "
             f"UTC, host {platform.node()} ({os.cpu_count()} CPUs). RobotExpressive at rest, N instances (mat4 per "
             f"instance from a storage buffer), shadow pass {SHADOW_SIZE}x{SHADOW_SIZE} D32 + forward pass RGBA8 + "
             f"D32; GPU timestamps around each pass, median of the repeats after {a.warmup} warm-up round, every "
             "configuration in each round (one submission, order rotated). Variant = level structure vertex-input "
             "index-list coverage (bench/raster_probe.py docstring). ns/idraw: per instance-draw (N x draws)."]
    base = [sys.executable, str(Path(__file__).resolve()), "--child", "--repeats", str(a.repeats), "--warmup",
            str(a.warmup), "--budget-s", str(a.budget_s), "--counts", ",".join(map(str, a.counts))]
    base += (["--variants", a.variants] if a.variants else []) + (["--chunk", str(a.chunk)] if a.chunk else [])
    report: dict = {"args": {k: v for k, v in vars(a).items() if k not in ("child", "validate")}}
    for validate in (False, True):
        if validate and a.no_validate:
            continue
        env = dict(os.environ)
        env["VKMORPH_VALIDATION"] = "1" if validate else "0"
        proc = subprocess.run(base + (["--validate"] if validate else []), capture_output=True, text=True, env=env)
        if proc.returncode:
            raise SystemExit(f"child failed (validate={validate}):\n{proc.stdout[-3000:]}{proc.stderr[-3000:]}")
        res = json.loads(proc.stdout.strip().splitlines()[-1])
        if validate:
            bad = [r["variant"] for r in res["rows"] if "skipped" not in r and not r["check_ok"]]
            report["validation"] = {"messages": res["messages"], "leaks": res["leaks"], "count": res["counts"][0],
                                    "variants_run": sum("skipped" not in r for r in res["rows"]),
                                    "check_failures": bad}
            lines.append(f"## validation run (VK_LAYER_KHRONOS_validation + synchronization validation, every variant "
                         f"recorded, run and depth-checked once at N={res['counts'][0]}): {len(res['messages'])} "
                         f"messages; leaks: {res['leaks'] or 'none'}; depth checks failed: {bad or 'none'}")
            lines += [f"  {m[:300]}" for m in res["messages"]]
        else:
            report.update(res)
            rounds = res["round_wall_s"]
            lines.append(f"## {res['device']} (driver {res['driver_version']}), load {res['load']:.1f}; set-up "
                         f"{res['setup_s']:.1f} s; a round (every configuration once) {np.median(rounds):.2f} s wall, "
                         f"{np.median(res['round_cpu_s']):.2f} s process CPU (medians); maxStorageBufferRange "
                         f"{res['limits']['maxStorageBufferRange']:,}; {res['repeats']} repeats"
                         + (f" (cut: {res['repeats_cut']})" if "repeats_cut" in res else ""))
            lines += table(res)
            if res["messages"] or res["leaks"]:
                lines.append(f"  messages: {res['messages'][:5]}; leaks: {res['leaks']}")
            report["summary"] = findings(res["rows"])
    if "summary" in report:
        lines.append(report["summary"])
    lines.append(f"(whole probe {time.perf_counter() - t0:.0f} s wall)")
    emit(lines, a.out)
    if a.json:
        Path(a.json).write_text(json.dumps(report, indent=1) + "\n")


if __name__ == "__main__":
    main()
