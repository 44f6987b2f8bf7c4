"""Frame orchestration: morph compute pass -> barrier -> shadow pass -> forward pass.

``RenderExtractor`` turns the runtime's primitive instances into ``RenderItem``s once (vertex buffer chosen by
whether the primitive has targets, index buffer, palette, colour); per frame only what moved is rewritten:
skinning palettes when the skeleton version changed, model matrices likewise, the frame constants always
(176 bytes). Per frame slot (frames in flight) the host-written buffers are separate, so the CPU never writes a
buffer the GPU may still read.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..anim.skeleton import Skeleton
from ..asset.model import STATIC_VERTEX, MeshPrimitiveAsset, SceneAsset
from ..gpu import graphics as G
from ..gpu import memory as M
from ..gpu.context import Context
from ..gpu.image import DEPTH_FORMAT, Image, Sampler
from ..gpu.interface import FRAME_UBO, ITEM_PUSH, SCENE, SKINNED_INPUT, STATIC_INPUT
from ..gpu.pipeline import descriptor_type, push_constant_stages, set_layout_bindings
from ..gpu.vk import vk
from ..morph.reference import skin_reference
from .camera import OrbitCamera, light_view_proj
from .morph_pass import FrameCounters, MorphRuntime, PrimitiveInstance, vertex_input_of
from .skin_capture import palette_bytes

GROUND_COLOR = (0.36, 0.36, 0.34, 1.0)
SKY_COLOR = (0.62, 0.72, 0.85, 1.0)


def _col_major(m: np.ndarray) -> np.ndarray:
    return np.asarray(m, np.float32).T.reshape(-1)


@dataclass
class RenderItem:
    vertex_buffer: object
    vertex_offset: int
    index_buffer: object
    index_count: int
    skinned: bool
    node: int | None
    skin: int | None
    base_color: tuple
    instance: PrimitiveInstance | None = None
    push: list = field(default_factory=list)        # [forward, shadow] ITEM_PUSH arrays
    push_ptr: list = field(default_factory=list)
    palette_sets: list = field(default_factory=list)  # per frame slot


class RenderExtractor:
    """Runtime instances (+ the ground) -> RenderItems. Built once; buffers never change after creation."""

    @staticmethod
    def extract(runtime: MorphRuntime, ground: tuple | None) -> list[RenderItem]:
        items = []
        for inst in runtime.instances:
            p = inst.prim
            items.append(RenderItem(vertex_buffer=inst.vertex_buffer.handle, vertex_offset=inst.vertex_offset,
                                    index_buffer=inst.index_buffer.handle,
                                    index_count=inst.index_count, skinned=p.is_skinned, node=inst.node,
                                    skin=p.skin if p.is_skinned else None, base_color=p.base_color, instance=inst))
        if ground is not None:
            vb, ib, n = ground
            items.append(RenderItem(vertex_buffer=vb.handle, vertex_offset=0, index_buffer=ib.handle, index_count=n,
                                    skinned=False,
                                    node=None, skin=None, base_color=GROUND_COLOR))
        return items


def _ground_primitive(lo: np.ndarray, hi: np.ndarray) -> MeshPrimitiveAsset:
    center = (lo + hi) / 2
    half = max(float(np.max(hi - lo)), 1e-3) * 1.5
    y = float(lo[1])
    v = np.zeros(4, STATIC_VERTEX)
    v["position"] = [(center[0] - half, y, center[2] - half), (center[0] + half, y, center[2] - half),
                     (center[0] + half, y, center[2] + half), (center[0] - half, y, center[2] + half)]
    v["normal"] = (0.0, 1.0, 0.0)
    v["tangent"] = (1.0, 0.0, 0.0, 1.0)
    v["texcoord"] = [(0, 0), (1, 0), (1, 1), (0, 1)]
    return MeshPrimitiveAsset(vertices=v, indices=np.array([0, 2, 1, 0, 3, 2], np.uint32), name="ground")


class SceneRenderer:
    """Shadow + forward rendering of a scene into a colour attachment of ``color_format``."""

    def __init__(self, ctx: Context, scene: SceneAsset, color_format: int, color_final_layout: int,
                 frames_in_flight: int = 1, shadow_size: int = 1024, runtime: MorphRuntime | None = None,
                 ground: bool = True):
        self.ctx, self.scene, self.slots = ctx, scene, frames_in_flight
        self.color_format, self.shadow_size = color_format, shadow_size
        self._owns_runtime = runtime is None
        self.runtime = runtime if runtime is not None else MorphRuntime(ctx, scene)
        self.skeleton = Skeleton(scene)
        self.group = G.ObjectGroup(ctx, "scene renderer")
        self._buffers: list[M.Buffer] = []
        self.heat_joint = -1
        self.light_dir = np.array([-0.45, -1.0, -0.35])
        self.light_intensity = 2.0
        try:
            self._build(color_final_layout, ground)
        except BaseException:
            self.destroy()
            raise

    # ------------------------------------------------------------------ construction
    def _buffer(self, buf: M.Buffer) -> M.Buffer:
        self._buffers.append(buf)
        return buf

    def _build(self, color_final_layout: int, ground: bool) -> None:
        ctx, g = self.ctx, self.group
        self.bounds = self.scene_bounds()
        self.camera = OrbitCamera.frame(*self.bounds)
        self.shadow_map = Image(ctx, self.shadow_size, self.shadow_size, DEPTH_FORMAT,
                                vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_SAMPLED_BIT,
                                vk.VK_IMAGE_ASPECT_DEPTH_BIT, name="shadow map")
        self.shadow_sampler = Sampler(ctx, compare=True)
        self.shadow_pass = G.shadow_render_pass(ctx, g, DEPTH_FORMAT)
        self.forward_pass = G.forward_render_pass(ctx, g, self.color_format, DEPTH_FORMAT, color_final_layout)
        self.shadow_fb = G.framebuffer(ctx, g, self.shadow_pass, [self.shadow_map.view], self.shadow_size,
                                       self.shadow_size)
        self.frame_layout = G.set_layout(ctx, g, set_layout_bindings(SCENE, 0))
        self.item_layout = G.set_layout(ctx, g, set_layout_bindings(SCENE, 1))
        self.layout = G.pipeline_layout(ctx, g, [self.frame_layout, self.item_layout], SCENE.push.size,
                                        push_constant_stages(SCENE))
        static_in = vertex_input_of(STATIC_INPUT.vertex)
        skinned_in = vertex_input_of(SKINNED_INPUT.vertex)

        def spec(vs, fs, vin, bias):
            return G.PipelineSpec(vs, fs, vin.stride, [(loc, fmt, off) for loc, _, fmt, off in vin.attributes],
                                  depth_bias=bias, color=fs is not None)

        self.pipelines = {
            ("forward", False): G.graphics_pipeline(ctx, g, spec("static.vert", "forward.frag", static_in, False),
                                                    self.layout, self.forward_pass),
            ("forward", True): G.graphics_pipeline(ctx, g, spec("skin.vert", "forward.frag", skinned_in, False),
                                                   self.layout, self.forward_pass),
            ("shadow", False): G.graphics_pipeline(ctx, g, spec("static.vert", None, static_in, True),
                                                   self.layout, self.shadow_pass),
            ("shadow", True): G.graphics_pipeline(ctx, g, spec("skin.vert", None, skinned_in, True),
                                                  self.layout, self.shadow_pass),
        }
        ground_buffers = None
        if ground:
            gp = _ground_primitive(*self.bounds)
            gvb = self._buffer(M.device_buffer(ctx, gp.vertices, M.VERTEX, name="ground vertices"))
            gib = self._buffer(M.device_buffer(ctx, gp.indices, M.INDEX, name="ground indices"))
            ground_buffers = (gvb, gib, len(gp.indices))
        self.items = RenderExtractor.extract(self.runtime, ground_buffers)
        n_skinned = sum(1 for it in self.items if it.skinned)
        self.pool = G.descriptor_pool(ctx, g, self.slots * (1 + n_skinned) + 1, {
            vk.VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER: self.slots,
            vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER: self.slots,
            vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER: self.slots * n_skinned + 1})
        self.frame_ubos, self.frame_sets = [], []
        for _ in range(self.slots):
            ubo = self._buffer(M.host_buffer(ctx, FRAME_UBO.itemsize, M.UNIFORM, name="frame constants"))
            s = G.allocate_set(ctx, self.pool, self.frame_layout)
            G.write_image(ctx, s, SCENE["shadow_map"].binding, self.shadow_map.view, self.shadow_sampler.handle,
                          vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL)
            G.write_buffer(ctx, s, SCENE["frame"].binding, descriptor_type(SCENE["frame"]), ubo.handle)
            self.frame_ubos.append(ubo)
            self.frame_sets.append(s)
        # static items bind a one-matrix identity palette so every item uses the same pipeline layout
        ident = self._buffer(M.device_buffer(ctx, palette_bytes(np.eye(4)[None]), M.STORAGE, name="identity palette"))
        ident_set = G.allocate_set(ctx, self.pool, self.item_layout)
        palette = SCENE["palette"]
        G.write_buffer(ctx, ident_set, palette.binding, descriptor_type(palette), ident.handle)
        self._palettes: dict[tuple[int, int], M.Buffer] = {}
        for it in self.items:
            for p in range(2):
                arr = np.zeros(1, ITEM_PUSH)
                arr["base_color"] = it.base_color
                arr["pass"] = p
                arr["heat_joint"] = -1
                arr["model"] = _col_major(np.eye(4))
                it.push.append(arr)
                it.push_ptr.append(M.cffi_pointer(arr))
            if it.skinned:
                joints = len(self.scene.skins[it.skin].joints)
                for slot in range(self.slots):
                    buf = self._buffer(M.host_buffer(ctx, 64 * joints, M.STORAGE, name="skinning palette"))
                    s = G.allocate_set(ctx, self.pool, self.item_layout)
                    G.write_buffer(ctx, s, palette.binding, descriptor_type(palette), buf.handle)
                    it.palette_sets.append(s)
                    self._palettes[(id(it), slot)] = buf
            else:
                it.palette_sets = [ident_set] * self.slots
        self._slot_versions = [-1] * self.slots
        self._heat_applied = -1

    def scene_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """World bounds at the current pose: rest/skinned positions, grown by each primitive's morph reach."""
        world = self.skeleton.world_matrices()
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        for inst in self.runtime.instances:
            p = inst.prim
            v = p.vertices
            pos = v["position"].astype(np.float64)
            xf = world[inst.node]
            if p.is_skinned:  # world-space palette, identity model matrix: no inverse of the mesh node
                mats = self.skeleton.skin_matrices(p.skin)
                pos, _, _ = skin_reference(pos, v["normal"], v["tangent"], v["joints"], v["weights"], mats)
                xf = np.eye(4)
            wp = pos @ xf[:3, :3].T + xf[:3, 3]
            lo_r = hi_r = np.zeros(3)
            if inst.conservative_bounds is not None:  # how far morphs can push past the rest pose, per axis
                cb = inst.conservative_bounds
                lo_r = np.maximum(v["position"].min(axis=0) - cb[0], 0.0)
                hi_r = np.maximum(cb[1] - v["position"].max(axis=0), 0.0)
            grow = np.abs(xf[:3, :3]) @ np.maximum(lo_r, hi_r)  # box transform, conservative
            lo = np.minimum(lo, wp.min(axis=0) - grow)
            hi = np.maximum(hi, wp.max(axis=0) + grow)
        if not np.isfinite(lo).all():
            lo, hi = -np.ones(3), np.ones(3)
        return lo, hi

    def reframe(self) -> None:
        """Re-fit bounds and camera to the current pose (after jumping an animation to a new time)."""
        self.bounds = self.scene_bounds()
        yaw, pitch = self.camera.yaw, self.camera.pitch
        self.camera = OrbitCamera.frame(*self.bounds)
        self.camera.yaw, self.camera.pitch = yaw, pitch

    # ------------------------------------------------------------------ per frame
    def update(self, slot: int, aspect: float) -> None:
        """Host-side writes for frame ``slot``: frame constants, and palettes/model matrices if the pose moved."""
        lo, hi = self.bounds
        center = (lo + hi) / 2
        radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3) * 1.6
        f = np.zeros(1, FRAME_UBO)
        f["view_proj"] = _col_major(self.camera.view_proj(aspect))
        f["light_view_proj"] = _col_major(light_view_proj(self.light_dir, center, radius))
        d = self.light_dir / np.linalg.norm(self.light_dir)
        f["light_dir"] = (*d, self.light_intensity)
        f["camera_pos"] = (*self.camera.eye, 1.0)
        f["ambient"] = (0.35, 0.38, 0.45, 0.0)   # the shadow bias is SHADOW_BIAS in gpu/interface.py
        self.frame_ubos[slot].mapped[:] = f.view(np.uint8)
        if self._slot_versions[slot] == self.skeleton.version and self._heat_applied == self.heat_joint:
            return
        world = self.skeleton.world_matrices()
        for it in self.items:
            if it.node is not None:  # skinned: world-space palette below, so identity here (glTF ignores it)
                m = _col_major(np.eye(4) if it.skinned else world[it.node])
                it.push[0]["model"] = m
                it.push[1]["model"] = m
            # heat map: skinned items show the joint weight, other characters read as "no influence", ground stays
            off = -1 if self.heat_joint < 0 or it.node is None else 10**6
            it.push[0]["heat_joint"] = self.heat_joint if it.skinned else off
            if it.skinned:
                mats = self.skeleton.skin_matrices(it.skin)
                self._palettes[(id(it), slot)].mapped[:] = palette_bytes(mats).reshape(-1).view(np.uint8)
        self._slot_versions[slot] = self.skeleton.version
        self._heat_applied = self.heat_joint

    def record(self, cb, slot: int, framebuffer, width: int, height: int, after_morph=None) -> FrameCounters:
        """Morph pass (version-gated) + its barrier, shadow pass, forward pass, into ``cb``.

        ``after_morph(cb)`` is called between the morph pass and the shadow pass (e.g. a timestamp)."""
        counters = self.runtime.record(cb)
        if after_morph is not None:
            after_morph(cb)
        clear_depth = vk.VkClearValue(depthStencil=vk.VkClearDepthStencilValue(depth=1.0, stencil=0))
        vk.vkCmdBeginRenderPass(cb, vk.VkRenderPassBeginInfo(
            renderPass=self.shadow_pass, framebuffer=self.shadow_fb,
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(self.shadow_size,
                                                                                    self.shadow_size)),
            clearValueCount=1, pClearValues=[clear_depth]), vk.VK_SUBPASS_CONTENTS_INLINE)
        G.set_viewport(cb, self.shadow_size, self.shadow_size)
        self._draw_items(cb, slot, "shadow", 1)
        vk.vkCmdEndRenderPass(cb)
        clear_color = vk.VkClearValue(color=vk.VkClearColorValue(float32=list(SKY_COLOR)))
        vk.vkCmdBeginRenderPass(cb, vk.VkRenderPassBeginInfo(
            renderPass=self.forward_pass, framebuffer=framebuffer,
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(width, height)),
            clearValueCount=2, pClearValues=[clear_color, clear_depth]), vk.VK_SUBPASS_CONTENTS_INLINE)
        G.set_viewport(cb, width, height)
        self._draw_items(cb, slot, "forward", 0)
        vk.vkCmdEndRenderPass(cb)
        return counters

    def _draw_items(self, cb, slot: int, pass_name: str, p: int) -> None:
        bound = None
        stages = push_constant_stages(SCENE)
        for it in self.items:
            if pass_name == "shadow" and it.node is None:
                continue  # the ground receives shadows but casts none
            pipe = self.pipelines[(pass_name, it.skinned)]
            if pipe is not bound:
                vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, pipe)
                vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 0, 1,
                                           [self.frame_sets[slot]], 0, None)
                bound = pipe
            vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 1, 1,
                                       [it.palette_sets[slot]], 0, None)
            vk.vkCmdPushConstants(cb, self.layout, stages, 0, ITEM_PUSH.itemsize, it.push_ptr[p])
            vk.vkCmdBindVertexBuffers(cb, 0, 1, [it.vertex_buffer], [it.vertex_offset])
            vk.vkCmdBindIndexBuffer(cb, it.index_buffer, 0, vk.VK_INDEX_TYPE_UINT32)
            vk.vkCmdDrawIndexed(cb, it.index_count, 1, 0, 0, 0)

    def destroy(self) -> None:
        for b in self._buffers:
            b.destroy()
        self._buffers.clear()
        for name in ("shadow_map", "shadow_sampler"):
            obj = getattr(self, name, None)
            if obj is not None:
                obj.destroy()
        self.group.destroy()
        if self._owns_runtime and self.runtime is not None:
            self.runtime.destroy()
            self.runtime = None
