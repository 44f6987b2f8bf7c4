"""Frame orchestration: morph compute pass -> shadow pass -> forward pass (opaque, masked, blended, outline).

``SceneRenderer.record`` is the whole frame in one place, read top to bottom as its passes and the named
barriers / subpass dependencies between them (gpu/barriers.py, gpu/graphics.py).

``RenderExtractor`` turns the runtime's primitive instances into ``RenderItem``s once (vertex buffer chosen by
whether the primitive has targets, index buffer, palette, material, the colour/TEXCOORD_1 stream); per frame only
what moved is rewritten: skinning palettes and model matrices when the skeleton version changed, the frame
constants always, the back-to-front order of blended items. Per frame slot (frames in flight) the host-written
buffers are separate, so the CPU never writes a buffer the GPU may still read, and so is the morph output: the
renderer's runtime has one output slot per frame in flight (``MorphRuntime(slots=)``), frame slot k morphs into
output slot k and every pass binds slot k's vertex offsets, so morphing frame N+1 does not wait for frame N's
draws. Every pass draws the same vertex buffers (the morph output) through the same vertex shaders (skin.vert /
static.vert + vertex_out.glsl).

Framing follows the pose: ``frame_camera()`` fits the camera to ``scene_bounds()`` (MorphRuntime.bounds at the
current weights and skeleton pose, not every target at full weight) and puts the ground just under the posed
model; the orbit pitch is clamped above the ground. The ground is one big square in grid cells drawn by
ground.frag (grid lines fading with distance, the whole square fading into the sky before its edge), placed and
scaled by its model matrix, so re-framing rewrites a push constant, not a buffer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ..anim.skeleton import Skeleton
from ..asset.materials import Material
from ..asset.model import STATIC_VERTEX, MeshPrimitiveAsset, SceneAsset
from ..errors import UsageError
from ..gpu import graphics as G
from ..gpu import memory as M
from ..gpu.context import Context
from ..gpu.image import DEPTH_FORMAT, Image, Sampler, depth_stencil_format, has_stencil, msaa_samples
from ..gpu.interface import EXTRA_INPUT, EXTRA_VERTEX, FRAME_UBO, ITEM_PUSH, SCENE, SKINNED_INPUT, STATIC_INPUT
from ..gpu.pipeline import descriptor_type, push_constant_stages, set_layout_bindings
from ..gpu.vk import vk
from .camera import OrbitCamera, light_view_proj
from .material_table import MaterialTable
from .morph_pass import FrameCounters, MorphRuntime, PrimitiveInstance, vertex_input_of
from .skin_capture import palette_bytes

PASS_FORWARD, PASS_SHADOW, PASS_OUTLINE = (SCENE.constant(n) for n in ("PASS_FORWARD", "PASS_SHADOW",
                                                                       "PASS_OUTLINE"))
# binding 1 of every pipeline: never morphed per-vertex data (COLOR_0, TEXCOORD_1)
EXTRA_ATTRIBUTES = [(a.location, getattr(vk, a.vk_format), a.offset) for a in EXTRA_INPUT.vertex_attributes()]
GROUND_COLOR = (0.36, 0.36, 0.34, 1.0)
SKY_COLOR = (0.62, 0.72, 0.85, 1.0)         # clear colour (linear)
SKY_AMBIENT = (0.44, 0.46, 0.50)            # hemisphere ambient from above / below (linear radiance)
GROUND_AMBIENT = (0.16, 0.15, 0.14)
OUTLINE_COLOR = (1.0, 0.55, 0.05, 1.0)
OUTLINE_PIXELS = 2.5
GROUND_GAP = 1e-3       # the ground lies this far under the posed model's lowest point (fraction of its size)
GROUND_CELLS = 40       # the ground quad reaches this many grid cells from its centre (ground.frag fades it out)


PASS_NAMES = ("morph", "skin", "shadow", "forward")   # record()'s marks, in order (pass_ms)


def _col_major(m: np.ndarray) -> np.ndarray:
    return np.asarray(m, np.float32).T.reshape(-1)


@dataclass
class RenderItem:
    vertex_buffer: object
    vertex_offsets: list[int]                        # per frame slot (the runtime's output slot of that frame)
    index_buffer: object
    index_count: int
    skinned: bool
    node: int | None
    skin: int | None
    material: int                                    # index into the renderer's material table
    extra_buffer: object = None                      # binding 1 (colour, TEXCOORD_1)
    center: np.ndarray = field(default_factory=lambda: np.zeros(3))  # local bounds centre (blend sorting)
    instance: PrimitiveInstance | None = None
    ground: bool = False                             # the ground grid (ground.frag), drawn after opaque items
    blend: bool = False
    alpha_tested: bool = False                       # MASK or BLEND: the shadow pass tests alpha too
    cull_back: bool = False
    clockwise: bool = False
    push: list = field(default_factory=list)         # [forward, shadow, outline] ITEM_PUSH arrays
    push_ptr: list = field(default_factory=list)
    palette_sets: list = field(default_factory=list)  # per frame slot
    vs: str = ""                                     # vertex shader (without .vert): static, skin, crowd_*
    crowd: object = None                             # crowds: the item's CrowdItem (render/crowd_render.py)

    def __post_init__(self):
        if not self.vs:
            self.vs = "skin" if self.skinned else "static"


def _forward_key(it: RenderItem) -> tuple:
    """The forward pass's pipeline of an item."""
    return ("ground",) if it.ground else ("forward", it.vs, it.cull_back, it.clockwise, it.blend)


class RenderExtractor:
    """Runtime instances (+ the ground) -> RenderItems. Built once; buffers never change after creation.
    ``output_slots``: the runtime's output slot of each frame slot (a morphing item's vertex offset per slot)."""

    @staticmethod
    def extract(runtime: MorphRuntime, ground: tuple | None, material_of, extra_of,
                output_slots: list[int]) -> list[RenderItem]:
        items = []
        for inst in runtime.instances:
            p = inst.prim
            pos = p.vertices["position"]
            offsets = [runtime.vertex_buffer_offset(inst.node, inst.prim_index, slot=k) for k in output_slots]
            items.append(RenderItem(vertex_buffer=inst.vertex_buffer.handle, vertex_offsets=offsets,
                                    index_buffer=inst.index_buffer.handle, index_count=inst.index_count,
                                    skinned=p.is_skinned, node=inst.node, skin=p.skin if p.is_skinned else None,
                                    material=material_of(p), extra_buffer=extra_of(p),
                                    center=(pos.min(axis=0) + pos.max(axis=0)) / 2, instance=inst))
        if ground is not None:
            vb, ib, n, prim = ground
            items.append(RenderItem(vertex_buffer=vb.handle, vertex_offsets=[0] * len(output_slots),
                                    index_buffer=ib.handle, index_count=n,
                                    skinned=False, node=None, skin=None, material=material_of(prim),
                                    extra_buffer=extra_of(prim), ground=True))
        return items


def _ground_primitive() -> MeshPrimitiveAsset:
    """The ground in grid cells: a square of +-GROUND_CELLS at y = 0 facing up; TEXCOORD_0 = the cell coordinates
    (grid lines at integers), TEXCOORD_1 = the same over GROUND_CELLS (0 at the centre, 1 at the edges, where
    ground.frag has faded it out). ``ground_placement`` scales it to the model's size and puts it under it."""
    c = float(GROUND_CELLS)
    xz = np.array([(-c, -c), (c, -c), (c, c), (-c, c)])
    v = np.zeros(4, STATIC_VERTEX)
    v["position"] = np.insert(xz, 1, 0.0, axis=1)
    v["normal"] = (0.0, 1.0, 0.0)
    v["tangent"] = (1.0, 0.0, 0.0, 1.0)
    v["texcoord"] = xz
    ground = Material.plain(GROUND_COLOR, name="ground")
    ground.roughness_factor = 0.9
    return MeshPrimitiveAsset(vertices=v, indices=np.array([0, 2, 1, 0, 3, 2], np.uint32), name="ground",
                              material=ground, texcoord1=(xz / c).astype(np.float32))


def grid_cell(size: float) -> float:
    """The ground's grid spacing: the largest 1, 2 or 5 x 10^k that is at most a quarter of the model's size."""
    target = max(size, 1e-6) / 4
    base = 10.0 ** np.floor(np.log10(target))
    return float(max(m * base for m in (1.0, 2.0, 5.0) if m * base <= target * (1 + 1e-9)))


def ground_placement(lo: np.ndarray, hi: np.ndarray) -> tuple[float, float, np.ndarray]:
    """(ground y, grid cell, model matrix of the ground quad) for a model posed in the world box [lo, hi]: just
    under its lowest point (GROUND_GAP x its size below), centred under it on a grid line, one unit = one cell."""
    size = max(float(np.max(np.asarray(hi) - lo)), 1e-6)
    y = float(lo[1]) - GROUND_GAP * size
    cell = grid_cell(size)
    center = (np.asarray(lo, np.float64) + hi) / 2
    m = np.diag([cell, 1.0, cell, 1.0])
    m[:3, 3] = (np.round(center[0] / cell) * cell, y, np.round(center[2] / cell) * cell)
    return y, cell, m


class RenderTargets:
    """The forward pass's attachments for one or more target images of one size (the offscreen image, or each
    swapchain image): a multisampled colour image and a depth-stencil image shared by all targets (the render
    pass orders frames that reuse them), and one framebuffer per target view."""

    def __init__(self, renderer: SceneRenderer, views, width: int, height: int):
        ctx, r = renderer.ctx, renderer
        self.width, self.height = width, height
        self.color = None
        self.depth = self.group = None
        try:
            if r.samples > 1:
                self.color = Image(ctx, width, height, r.color_format,
                                   vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT
                                   | vk.VK_IMAGE_USAGE_TRANSIENT_ATTACHMENT_BIT,
                                   vk.VK_IMAGE_ASPECT_COLOR_BIT, name="multisampled colour", samples=r.samples)
            aspect = vk.VK_IMAGE_ASPECT_DEPTH_BIT | (vk.VK_IMAGE_ASPECT_STENCIL_BIT if r.stencil else 0)
            self.depth = Image(ctx, width, height, r.depth_format, vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT,
                               aspect, name="depth-stencil", samples=r.samples)
            self.group = G.ObjectGroup(ctx, "forward framebuffers")
            self.framebuffers = [
                G.framebuffer(ctx, self.group, r.forward_pass,
                              [self.color.view, self.depth.view, v] if r.samples > 1 else [v, self.depth.view],
                              width, height) for v in views]
        except BaseException:
            self.destroy()
            raise

    def destroy(self) -> None:
        for obj in (self.group, self.depth, self.color):
            if obj is not None:
                obj.destroy()
        self.group = self.depth = self.color = None


class SceneRenderer:
    """Shadow + forward rendering of a scene into a colour target of ``color_format`` (``create_targets``).

    ``selected``: a node index whose primitives get an outline (None: no outline). ``warnings``: one line per
    bad material datum (missing/corrupt image, bad texture reference); the render goes on without it.

    ``frames_in_flight``: frame slots (host-written buffers and, through the runtime it creates with as many
    output slots, morph outputs per slot). A ``runtime`` passed in must have that many output slots, or one
    (then every frame morphs into it and waits for the earlier frames' draws, as MorphRuntime.record guards).

    Crowds (``instances=N``, or a ``runtime`` built with ``instances``): every pass draws every visible
    instance (render/crowd_render.py). ``skinning``: "auto" (per skinned primitive, the byte model of
    render/skin_cost.py: compute skinning once per frame, then plain draws; or vertex-shader skinning in each
    pass), "compute" or "vertex"; ``cull``: frustum culling with bounds that follow each instance's pose
    (culled instances are neither morphed, skinned nor drawn; their changes wait until they are visible);
    ``motion_vectors``: the compute path keeps each instance's previous-frame positions
    (``crowd_frame.skin.draws(slot)``, docs/embedding.md). ``pass_timing``: GPU timestamps after each pass,
    read by ``pass_ms(slot)`` once the slot's frame completed. ``animation``: "cpu" (the host poses the
    instances: ``rt.crowd``), "gpu" (a ``CrowdAnimation`` over the scene's clips made here, ``renderer.animation``:
    ``play`` clips on it, set ``animation_time`` per frame; every frame records it after the morph pass and both
    skinning paths read its palettes in place) or a ``CrowdAnimation`` of the ``runtime`` passed in (not
    destroyed here); with ``motion_vectors`` too. ``animation_clips``: the clips the one
    made here may play (default: the scene's animations). ``lod``: levels of detail per instance and pass
    (render/crowd_lod.py: None / "off", "on", a forced level, or a ``CrowdLod`` with its pixel thresholds);
    culling is per pass: the shadow pass draws the instances in the light's volume, the forward pass those in
    the camera's frustum, and both sets are morphed and skinned."""

    def __init__(self, ctx: Context, scene: SceneAsset, color_format: int, color_final_layout: int, *,
                 frames_in_flight: int = 1, shadow_size: int = 1024, runtime: MorphRuntime | None = None,
                 ground: bool = True, samples: int | None = None, mipmaps: bool = True,
                 instances: int | None = None, skinning: str = "auto", cull: bool = True,
                 motion_vectors: bool = False, pass_timing: bool = False, animation="cpu",
                 animation_clips: list | None = None, lod=None):
        self.ctx, self.scene, self.slots = ctx, scene, frames_in_flight
        self.color_format, self.shadow_size = color_format, shadow_size
        self.samples = msaa_samples(ctx, 4) if samples is None else samples
        self.depth_format = depth_stencil_format(ctx)
        self.stencil = has_stencil(self.depth_format)
        self._owned: list = []          # everything created here, destroyed in reverse creation order
        if runtime is not None and runtime.slots not in (1, frames_in_flight):
            raise UsageError(f"SceneRenderer(frames_in_flight={frames_in_flight}) needs a runtime with "
                             f"{frames_in_flight} output slots (or 1), got MorphRuntime(slots={runtime.slots})")
        if isinstance(animation, str) and animation not in ("cpu", "gpu"):
            raise UsageError(f"animation must be 'cpu', 'gpu' or a CrowdAnimation, got {animation!r}")
        if animation != "cpu" and (instances is None if runtime is None else runtime.crowd is None):
            raise UsageError("animation= is for crowds: SceneRenderer(..., instances=N, animation='gpu')")
        lod_off = lod is None or lod is False or (isinstance(lod, str) and lod == "off")     # lod=0 is level 0
        if not lod_off and (instances is None if runtime is None else runtime.crowd is None):
            raise UsageError("lod= is for crowds: SceneRenderer(..., instances=N, lod='on')")
        from .crowd_lod import parse_lod

        parse_lod(lod)                  # bad values refused before anything is built
        self._owns_runtime = runtime is None
        self._last_serial = 0           # borrowed contexts: the serial of the last frame recorded (destroy)
        self.runtime = runtime if runtime is not None else MorphRuntime(ctx, scene, slots=frames_in_flight,
                                                                        instances=instances)
        self.crowd_frame = None         # crowds: render/crowd_render.CrowdFrame
        self._crowd_options = {"skinning": skinning, "cull": cull, "motion_vectors": motion_vectors,
                               "animation": animation, "animation_clips": animation_clips, "lod": lod}
        self._pass_timing = pass_timing
        self.pass_timestamps = None
        # the runtime's output slot of each frame slot
        self.output_slots = [k if self.runtime.slots > 1 else 0 for k in range(frames_in_flight)]
        self.heat_joint = -1
        self.selected: int | None = None
        self.light_dir = np.array([-0.45, -1.0, -0.35])
        self.light_intensity = 3.0
        self.exposure = 1.0
        self.warnings: list[str] = []
        self._viewport = (1280, 720)
        try:
            self._build(color_final_layout, ground, mipmaps)
        except BaseException:
            self.destroy()
            raise

    @property
    def animation(self):
        """Crowds animated on the GPU: the ``CrowdAnimation`` every frame records (None: posed on the CPU)."""
        return self.crowd_frame.animation if self.crowd_frame is not None else None

    @property
    def animation_time(self) -> float:
        """The GPU crowd animation's clock (seconds) the next ``record`` samples at (instance i plays its clip
        at ``phase[i] + speed[i] x animation_time``; ``CrowdAnimation.play``)."""
        return self.crowd_frame.time if self.crowd_frame is not None else 0.0

    @animation_time.setter
    def animation_time(self, value: float) -> None:
        if self.crowd_frame is None:
            raise UsageError("animation_time is for crowds (SceneRenderer(..., instances=N, animation='gpu'))")
        if not np.isfinite(value):
            raise UsageError(f"animation_time must be finite, got {value!r}")
        self.crowd_frame.time = float(value)

    @property
    def skeleton(self) -> Skeleton:
        """The runtime's skeleton (``runtime.state``): animate this one and the runtime's draws, bounds and this
        renderer all follow it."""
        return self.runtime.skeleton

    # ------------------------------------------------------------------ construction
    def _own(self, obj):
        self._owned.append(obj)
        return obj

    def _materials(self, ground_prim) -> tuple[list[Material], dict[int, int]]:
        """Distinct materials of the drawn primitives (+ the ground) and each primitive's index among them."""
        mats: list[Material] = []
        index: dict[int, int] = {}
        by_id: dict[int, int] = {}
        prims = [inst.prim for inst in self.runtime.instances] + ([ground_prim] if ground_prim else [])
        for p in prims:
            m = p.material if p.material is not None else Material.plain(p.base_color, name=p.name or "default")
            if id(m) not in by_id:
                by_id[id(m)] = len(mats)
                mats.append(m)
            index[id(p)] = by_id[id(m)]
        return mats, index

    def _extra_buffers(self, prims) -> dict[int, M.Buffer]:
        """Binding 1 per primitive: COLOR_0 and TEXCOORD_1 where the file has them, else one shared buffer of
        white / (0, 0) long enough for the largest primitive without them."""
        out: dict[int, M.Buffer] = {}
        plain_len = 0
        for p in prims:
            if id(p) in out:
                continue
            if p.colors is None and p.texcoord1 is None:
                plain_len = max(plain_len, p.vertex_count)
                continue
            arr = np.zeros(p.vertex_count, EXTRA_VERTEX)
            arr["color"] = p.colors if p.colors is not None else 1.0
            if p.texcoord1 is not None:
                arr["texcoord1"] = p.texcoord1
            out[id(p)] = self._own(M.device_buffer(self.ctx, arr, M.VERTEX, name=f"{p.name} colour/uv1"))
        if plain_len:
            arr = np.zeros(plain_len, EXTRA_VERTEX)
            arr["color"] = 1.0
            plain = self._own(M.device_buffer(self.ctx, arr, M.VERTEX, name="white colour/uv1"))
            for p in prims:
                out.setdefault(id(p), plain)
        return out

    def _build(self, color_final_layout: int, ground: bool, mipmaps: bool) -> None:
        ctx = self.ctx
        if self._pass_timing:
            from ..gpu.timestamps import Timestamps

            self.pass_timestamps = self._own(Timestamps(ctx, 1 + len(PASS_NAMES), self.slots))
        g = self._own(G.ObjectGroup(ctx, "scene renderer passes and layouts"))
        self.ground_y: float | None = None     # world y of the ground plane (None: no ground)
        self.grid_cell: float | None = None    # its grid spacing
        self.bounds = self.scene_bounds()
        self.camera = OrbitCamera.frame(*self.bounds)
        self.shadow_map = self._own(Image(ctx, self.shadow_size, self.shadow_size, DEPTH_FORMAT,
                                          vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT
                                          | vk.VK_IMAGE_USAGE_SAMPLED_BIT, vk.VK_IMAGE_ASPECT_DEPTH_BIT,
                                          name="shadow map"))
        self.shadow_sampler = self._own(Sampler(ctx, compare=True))
        self.shadow_pass = G.shadow_render_pass(ctx, g, DEPTH_FORMAT)
        self.forward_pass = G.forward_render_pass(ctx, g, self.color_format, self.depth_format, color_final_layout,
                                                  self.samples)
        self.shadow_fb = G.framebuffer(ctx, g, self.shadow_pass, [self.shadow_map.view], self.shadow_size,
                                       self.shadow_size)
        ground_prim = _ground_primitive() if ground else None
        materials, material_index = self._materials(ground_prim)
        self.material_table = self._own(MaterialTable(ctx, g, materials, mipmaps=mipmaps))
        self.warnings = list(self.material_table.warnings)
        self.frame_layout = G.set_layout(ctx, g, set_layout_bindings(SCENE, 0))
        self.item_layout = G.set_layout(ctx, g, set_layout_bindings(SCENE, 1))
        self.layout = G.pipeline_layout(ctx, g, [self.frame_layout, self.item_layout, self.material_table.layout],
                                        SCENE.push.size, push_constant_stages(SCENE))

        prims = [inst.prim for inst in self.runtime.instances] + ([ground_prim] if ground_prim else [])
        extra = self._extra_buffers(prims)
        ground_buffers = None
        if ground_prim is not None:
            gvb = self._own(M.device_buffer(ctx, ground_prim.vertices, M.VERTEX, name="ground vertices"))
            gib = self._own(M.device_buffer(ctx, ground_prim.indices, M.INDEX, name="ground indices"))
            ground_buffers = (gvb, gib, len(ground_prim.indices), ground_prim)
        self.items = RenderExtractor.extract(self.runtime, ground_buffers, lambda p: material_index[id(p)],
                                             lambda p: extra[id(p)].handle, self.output_slots)
        if self.runtime.crowd is not None:
            from .crowd_render import CrowdFrame

            self.crowd_frame = self._own(CrowdFrame(self, [it for it in self.items if not it.ground],
                                                    **self._crowd_options))
            self.bounds = self.scene_bounds()
            self.camera = OrbitCamera.frame(*self.bounds)
        world = self.skeleton.world_matrices()
        for it in self.items:
            m = materials[it.material]
            it.blend = m.alpha_mode == "BLEND"
            it.alpha_tested = m.alpha_mode != "OPAQUE"
            it.cull_back = not m.double_sided
            it.clockwise = it.node is not None and not it.skinned and np.linalg.det(world[it.node][:3, :3]) < 0
        late = self._own(G.ObjectGroup(ctx, "scene renderer pipelines and descriptor pool"))
        self._build_pipelines(late)
        self._build_sets(late)
        self.frame_camera()

    def _build_pipelines(self, g: G.ObjectGroup) -> None:
        static_in, skinned_in = vertex_input_of(STATIC_INPUT.vertex), vertex_input_of(SKINNED_INPUT.vertex)
        stencil = self.stencil

        def spec(vs, fs, **kw):
            vin = skinned_in if vs in ("skin", "crowd_skin", "crowd_skin_pull") else static_in
            # crowd_pull.vert / crowd_skin_pull.vert read binding 0's vertices from set 1 (crowd_vertices): no
            # binding-0 attributes
            pulled = vs in ("crowd_pull", "crowd_skin_pull")
            attrs = [] if pulled else [(loc, fmt, off) for loc, _, fmt, off in vin.attributes]
            return G.PipelineSpec(f"{vs}.vert", fs, vin.stride, attrs,
                                  extra_stride=EXTRA_VERTEX.itemsize, extra_attributes=EXTRA_ATTRIBUTES, **kw)

        self.pipelines = {}
        for it in self.items:
            if it.ground:   # blended over the sky by its fade, no depth writes (nothing is drawn under it later)
                self.pipelines[_forward_key(it)] = G.graphics_pipeline(self.ctx, g, spec(
                    "static", "ground.frag", samples=self.samples, blend=True,
                    stencil=G.STENCIL_WRITE if stencil else G.STENCIL_NONE), self.layout, self.forward_pass)
                continue
            keys = {_forward_key(it): spec(
                        it.vs, "forward.frag", samples=self.samples, cull_back=it.cull_back,
                        clockwise=it.clockwise, blend=it.blend,
                        stencil=G.STENCIL_WRITE if stencil else G.STENCIL_NONE),
                    ("shadow", it.vs, it.alpha_tested): spec(
                        it.vs, "shadow_mask.frag" if it.alpha_tested else None, depth_bias=True, color=False)}
            if stencil and it.node is not None:
                keys[("outline", it.vs)] = spec(it.vs, "outline.frag", samples=self.samples,
                                                     depth_test=False, stencil=G.STENCIL_OUTSIDE)
            for key, sp in keys.items():
                if key not in self.pipelines:
                    rp = self.shadow_pass if key[0] == "shadow" else self.forward_pass
                    self.pipelines[key] = G.graphics_pipeline(self.ctx, g, sp, self.layout, rp)

    def _build_sets(self, g: G.ObjectGroup) -> None:
        ctx = self.ctx
        n_skinned = sum(1 for it in self.items if it.skinned or (it.crowd is not None and it.crowd.buffers))
        n_pulled = sum(1 for it in self.items if it.crowd is not None and it.crowd.pulled)
        self.pool = G.descriptor_pool(ctx, g, self.slots * (1 + n_skinned + n_pulled) + 1, {
            vk.VK_DESCRIPTOR_TYPE_COMBINED_IMAGE_SAMPLER: self.slots,
            vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER: self.slots,
            vk.VK_DESCRIPTOR_TYPE_STORAGE_BUFFER: self.slots * (n_skinned + 2 * n_pulled) + 1})
        self.frame_ubos, self.frame_sets = [], []
        for _ in range(self.slots):
            ubo = self._own(M.host_buffer(ctx, FRAME_UBO.itemsize, M.UNIFORM, name="frame constants"))
            s = G.allocate_set(ctx, self.pool, self.frame_layout)
            G.write_image(ctx, s, SCENE["shadow_map"].binding, self.shadow_map.view, self.shadow_sampler.handle,
                          vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL)
            G.write_buffer(ctx, s, SCENE["frame"].binding, descriptor_type(SCENE["frame"]), ubo.handle)
            self.frame_ubos.append(ubo)
            self.frame_sets.append(s)
        # static items bind a one-matrix identity palette so every item uses the same pipeline layout
        ident = self._own(M.device_buffer(ctx, palette_bytes(np.eye(4)[None]), M.STORAGE, name="identity palette"))
        ident_set = G.allocate_set(ctx, self.pool, self.item_layout)
        palette = SCENE["palette"]
        G.write_buffer(ctx, ident_set, palette.binding, descriptor_type(palette), ident.handle)
        self._palettes: dict[tuple[int, int], M.Buffer] = {}
        for it in self.items:
            for p in (PASS_FORWARD, PASS_SHADOW, PASS_OUTLINE):
                arr = np.zeros(1, ITEM_PUSH)
                arr["pass"] = p
                arr["heat_joint"] = -1
                arr["model"] = _col_major(np.eye(4))
                arr["instance_matrices"] = it.crowd.instance_matrices if it.crowd is not None else 0
                arr["matrix_first"] = it.crowd.matrix_first if it.crowd is not None else 0
                arr["instance_vec4"] = it.crowd.instance_stride // 16 if it.crowd is not None else 0
                it.push.append(arr)
                it.push_ptr.append(M.cffi_pointer(arr))
            if it.crowd is not None:     # crowds: the per-slot instance matrices (none: identity, compute-skinned)
                from .crowd_render import pulled_range

                c = it.crowd
                it.palette_sets = [ident_set] * self.slots
                for slot in range(self.slots if (c.pulled or c.buffers) else 0):
                    s = G.allocate_set(ctx, self.pool, self.item_layout)
                    G.write_buffer(ctx, s, palette.binding, descriptor_type(palette),
                                   c.buffers[slot].handle if c.buffers else ident.handle)
                    if c.pulled:   # + this slot's range of every instance's vertices (crowd_*pull.vert)
                        pulled = SCENE["crowd_vertices"]
                        G.write_buffer(ctx, s, pulled.binding, descriptor_type(pulled), c.vertex_buffers[slot],
                                       c.offsets[slot], pulled_range(c, self.runtime.crowd.count))
                    it.palette_sets[slot] = s
            elif it.skinned:
                joints = len(self.scene.skins[it.skin].joints)
                for slot in range(self.slots):
                    buf = self._own(M.host_buffer(ctx, 64 * joints, M.STORAGE, name="skinning palette"))
                    s = G.allocate_set(ctx, self.pool, self.item_layout)
                    G.write_buffer(ctx, s, palette.binding, descriptor_type(palette), buf.handle)
                    it.palette_sets.append(s)
                    self._palettes[(id(it), slot)] = buf
            else:
                it.palette_sets = [ident_set] * self.slots
        self._slot_versions = [-1] * self.slots
        self._heat_applied = -1
        self._blend_order: list[RenderItem] = [it for it in self.items if it.blend]

    def create_targets(self, views, width: int, height: int) -> RenderTargets:
        """Framebuffers of the forward pass for target ``views`` (destroy() them before the renderer)."""
        return RenderTargets(self, views, width, height)

    def scene_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """World bounds of everything drawn, as posed NOW: the current weights and skeleton pose, through
        ``MorphRuntime.bounds(space="world")`` (conservative and tight; not every target at full weight)."""
        if self.crowd_frame is not None:
            return self.crowd_frame.bounds()
        lo, hi = np.full(3, np.inf), np.full(3, -np.inf)
        for inst in self.runtime.instances:
            b = self.runtime.bounds(inst.node, inst.prim_index, space="world")
            lo, hi = np.minimum(lo, b[0]), np.maximum(hi, b[1])
        if not np.isfinite(lo).all():
            lo, hi = -np.ones(3), np.ones(3)
        return lo, hi

    def frame_camera(self) -> None:
        """Fit the camera and the ground to the model as posed now (``scene_bounds``): the camera's target and
        distance frame it (yaw and pitch kept), the ground goes just under its lowest point and centred under
        it, and the pitch is clamped so the eye stays above the ground. Call it after jumping to a new time or
        pose (``vkmorph render`` does) and from an auto-frame key."""
        self.bounds = self.scene_bounds()
        old = self.camera
        cam = OrbitCamera.frame(*self.bounds)
        ground = [it for it in self.items if it.ground]
        if ground:
            self.ground_y, self.grid_cell, m = ground_placement(*self.bounds)
            cam.floor = self.ground_y
            for it in ground:
                for arr in it.push:
                    arr["model"] = _col_major(m)
        cam.yaw, cam.pitch = old.yaw, old.pitch   # the pitch setter clamps it above the new ground
        self.camera = cam

    reframe = frame_camera   # the earlier name

    # ------------------------------------------------------------------ per frame
    def update(self, slot: int, aspect: float, width: int | None = None, height: int | None = None) -> None:
        """Host-side writes for frame ``slot``: frame constants, palettes/model matrices if the pose moved, and
        the back-to-front order of blended items. ``width``/``height``: the target's size in pixels (the outline
        width is in pixels); omitted, the size of the last recorded frame is used."""
        if width is not None and height is not None:
            self._viewport = (width, height)
        lo, hi = self.bounds
        center = (lo + hi) / 2
        radius = max(float(np.linalg.norm(hi - lo)) / 2, 1e-3) * 1.6
        f = np.zeros(1, FRAME_UBO)
        f["view_proj"] = _col_major(self.camera.view_proj(aspect))
        light_vp = light_view_proj(self.light_dir, center, radius)
        f["light_view_proj"] = _col_major(light_vp)
        d = self.light_dir / np.linalg.norm(self.light_dir)
        f["light_dir"] = (*d, self.light_intensity)
        f["camera_pos"] = (*self.camera.eye, self.exposure)
        f["sky"] = (*SKY_AMBIENT, 0.0)
        f["ground"] = (*GROUND_AMBIENT, OUTLINE_PIXELS)
        f["viewport"] = (*self._viewport, 0.0, 0.0)
        f["outline_color"] = OUTLINE_COLOR
        self.frame_ubos[slot].mapped[:] = f.view(np.uint8)
        if self.crowd_frame is not None:
            self._update_crowd(slot, aspect, light_vp)
            return
        # the matrices come from the runtime's draw list (the embedding API's; refreshed where the skeleton moved),
        # the items are the runtime's instances in the same order, then the ground
        draws = self.runtime.draws(self.output_slots[slot])
        if self._slot_versions[slot] != self.skeleton.version or self._heat_applied != self.heat_joint:
            for it, d in zip(self.items, draws):
                m = _col_major(d.world)   # skinned: identity (world-space palette; glTF ignores the node)
                for arr in it.push:
                    arr["model"] = m
                # heat map: skinned items show the joint weight, other characters read as "no influence"
                it.push[PASS_FORWARD]["heat_joint"] = self.heat_joint if it.skinned else (
                    -1 if self.heat_joint < 0 else 10**6)
                if it.skinned:
                    self._palettes[(id(it), slot)].mapped[:] = palette_bytes(d.joint_palette).reshape(-1).view(
                        np.uint8)
            for it in self.items[len(draws):]:      # the ground: no node, no heat
                it.push[PASS_FORWARD]["heat_joint"] = -1
            self._slot_versions[slot] = self.skeleton.version
            self._heat_applied = self.heat_joint
        if len(self._blend_order) > 1:
            model = {id(it): d.world for it, d in zip(self.items, draws)}
            eye = self.camera.eye

            def distance(it):
                m = model.get(id(it), np.eye(4))
                return float(np.linalg.norm(m[:3, :3] @ it.center + m[:3, 3] - eye))

            self._blend_order.sort(key=distance, reverse=True)

    def _update_crowd(self, slot: int, aspect: float, light_vp: np.ndarray) -> None:
        """Crowds: visible sets of the camera and the light, LOD levels and per-instance matrices
        (CrowdFrame.update); the heat-map joint per item."""
        self.crowd_frame.update(slot, self.camera.view_proj(aspect), light_view_proj=light_vp, light_dir=self.light_dir,
                                pixels=float(self._viewport[1]), shadow_pixels=float(self.shadow_size))
        if self._heat_applied != self.heat_joint:
            for it in self.items:
                it.push[PASS_FORWARD]["heat_joint"] = -1 if it.ground else (
                    self.heat_joint if it.skinned else (-1 if self.heat_joint < 0 else 10**6))
            self._heat_applied = self.heat_joint

    def record(self, cb, slot: int, framebuffer, width: int, height: int, after_morph=None,
               marks=None) -> FrameCounters:
        """The frame: morph -> shadow -> forward (opaque + masked, blended back to front, outline).

        1. Morph pass (version-gated; MorphRuntime.record into output slot ``output_slots[slot]``): barriers
           previous_frame_to_morph_writes (one output slot) or "previous morph -> morph writes" (one per frame
           slot: this slot's earlier draws are the caller's fence wait for it), transfer_write_to_compute_read,
           compute_write_to_vertex_read — as many as it reports in ``counters.barriers`` (none when nothing
           changed). Every pass below binds that output slot's vertex offsets.
        2. Shadow pass: subpass dependencies shadow_sampling_to_depth_write, depth_write_to_fragment_sampling.
        3. Forward pass: previous_frame_to_attachment_writes, then the draws; the multisampled colour resolves
           into the target at the end of the subpass; resolved_color_to_transfer_read for a readback.
        The caller then presents or copies the target (offscreen readback).
        ``after_morph(cb)`` is called between the morph pass and the shadow pass (e.g. a timestamp).

        Crowds: the morph pass covers the visible instances only, then (``animation="gpu"``) the crowd animation
        pass (``PREVIOUS_FRAME_TO_ANIM`` before it, ``COMPUTE_TO_VERTEX`` after), then the compute skinning
        (``CrowdSkinning.record``: MORPH_AND_DRAWS_TO_SKIN before it, COMPUTE_TO_VERTEX after) of the visible
        instances that moved, then the passes draw every visible instance. ``marks(cb, name)``, if given, is
        called after "morph", "skin", "shadow" and "forward" (per-pass GPU timestamps)."""
        self._viewport = (width, height)
        ts = self.pass_timestamps
        if ts is not None:
            from ..gpu.timestamps import BOTTOM, TOP

            ts.reset(cb, slot)
            ts.write(cb, 0, slot, TOP)

            def mark(cb, name):   # bottom of pipe: everything recorded before it has finished
                ts.write(cb, 1 + PASS_NAMES.index(name), slot, BOTTOM)
                if marks is not None:
                    marks(cb, name)
        else:
            mark = marks if marks is not None else (lambda cb, name: None)
        if self.crowd_frame is not None:
            counters = self.crowd_frame.record_deform(cb, slot)
            mark(cb, "morph")
            self.crowd_frame.record_skinning(cb, slot)
            if self.crowd_frame.skinned_last and not counters.serial:
                counters.serial = self.crowd_frame.skin._last_serial
        else:
            counters = self.runtime.record(cb, slot=self.output_slots[slot])
            mark(cb, "morph")
        mark(cb, "skin")
        if after_morph is not None:
            after_morph(cb)
        self._shadow_pass(cb, slot)
        mark(cb, "shadow")
        self._forward_pass(cb, slot, framebuffer, width, height)
        mark(cb, "forward")
        if not self.ctx.owned:   # the draws need a serial the host reports, even when the morph pass skipped
            self._last_serial = counters.serial or self.ctx.next_serial()
        return counters

    def pass_ms(self, slot: int = 0) -> dict[str, float] | None:
        """GPU milliseconds of each pass of the last frame recorded in ``slot`` (``pass_timing=True``; waits for
        the results: call it after that frame's fence); None before the first frame or without timestamps."""
        if self.pass_timestamps is None:
            return None
        cum = self.pass_timestamps.read_ms(slot)
        if cum is None:
            return None
        return {name: cum[i] - (cum[i - 1] if i else 0.0) for i, name in enumerate(PASS_NAMES)}

    def _shadow_pass(self, cb, slot: int) -> None:
        clear_depth = vk.VkClearValue(depthStencil=vk.VkClearDepthStencilValue(depth=1.0, stencil=0))
        vk.vkCmdBeginRenderPass(cb, vk.VkRenderPassBeginInfo(
            renderPass=self.shadow_pass, framebuffer=self.shadow_fb,
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0),
                                   extent=vk.VkExtent2D(self.shadow_size, self.shadow_size)),
            clearValueCount=1, pClearValues=[clear_depth]), vk.VK_SUBPASS_CONTENTS_INLINE)
        G.set_viewport(cb, self.shadow_size, self.shadow_size)
        casters = [it for it in self.items if it.node is not None]  # the ground receives shadows, casts none
        self._draw(cb, slot, casters, PASS_SHADOW, lambda it: ("shadow", it.vs, it.alpha_tested))
        vk.vkCmdEndRenderPass(cb)

    def _forward_pass(self, cb, slot: int, framebuffer, width: int, height: int) -> None:
        clear = [vk.VkClearValue(color=vk.VkClearColorValue(float32=list(SKY_COLOR))),
                 vk.VkClearValue(depthStencil=vk.VkClearDepthStencilValue(depth=1.0, stencil=0))]
        vk.vkCmdBeginRenderPass(cb, vk.VkRenderPassBeginInfo(
            renderPass=self.forward_pass, framebuffer=framebuffer,
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(width, height)),
            clearValueCount=2, pClearValues=clear), vk.VK_SUBPASS_CONTENTS_INLINE)
        G.set_viewport(cb, width, height)
        opaque = [it for it in self.items if not it.blend and not it.ground]
        self._draw(cb, slot, opaque, PASS_FORWARD, _forward_key)
        self._draw(cb, slot, [it for it in self.items if it.ground], PASS_FORWARD, _forward_key)
        self._draw(cb, slot, self._blend_order, PASS_FORWARD, _forward_key)
        outlined = [it for it in self.items if self.selected is not None and it.node == self.selected]
        if outlined and self.stencil:
            self._draw(cb, slot, outlined, PASS_OUTLINE, lambda it: ("outline", it.vs))
        vk.vkCmdEndRenderPass(cb)

    def _draw(self, cb, slot: int, items, p: int, key) -> None:
        bound = None
        stencil_ref = None
        stages = push_constant_stages(SCENE)
        for it in items:
            pipe = self.pipelines[key(it)]
            if pipe is not bound:
                vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, pipe)
                if bound is None:
                    vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 0, 1,
                                               [self.frame_sets[slot]], 0, None)
                bound, stencil_ref = pipe, None
            if self.stencil and p != PASS_SHADOW:
                ref = 1 if p == PASS_OUTLINE or (self.selected is not None and it.node == self.selected) else 0
                if ref != stencil_ref:
                    vk.vkCmdSetStencilReference(cb, vk.VK_STENCIL_FACE_FRONT_AND_BACK, ref)
                    stencil_ref = ref
            vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 1, 1,
                                       [it.palette_sets[slot]], 0, None)
            if p == PASS_FORWARD or (p == PASS_SHADOW and it.alpha_tested):
                vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 2, 1,
                                           [self.material_table.sets[it.material]], 0, None)
            vk.vkCmdPushConstants(cb, self.layout, stages, 0, ITEM_PUSH.itemsize, it.push_ptr[p])
            if it.crowd is not None:
                if it.crowd.index_buffer is None:
                    vk.vkCmdBindIndexBuffer(cb, it.index_buffer, 0, vk.VK_INDEX_TYPE_UINT32)
                self.crowd_frame.draw(cb, it, slot, it.extra_buffer, "shadow" if p == PASS_SHADOW else "forward")
                continue
            vk.vkCmdBindVertexBuffers(cb, 0, 2, [it.vertex_buffer, it.extra_buffer], [it.vertex_offsets[slot], 0])
            vk.vkCmdBindIndexBuffer(cb, it.index_buffer, 0, vk.VK_INDEX_TYPE_UINT32)
            vk.vkCmdDrawIndexed(cb, it.index_count, 1, 0, 0, 0)

    def destroy(self) -> None:
        """Everything this renderer created, in reverse creation order; then the runtime if it made it. On a
        borrowed context, through its retirement: what the last recorded frame uses stays alive until the host
        reports that frame's serial complete (``ctx.completed``), as ``MorphRuntime.destroy`` does; a runtime
        it made goes with it (its buffers are drawn by that frame even when its own last recording is older)."""
        owned, self._owned = self._owned, []
        runtime = self.runtime if self._owns_runtime else None
        self.runtime = None if self._owns_runtime else self.runtime

        def release() -> None:
            while owned:
                owned.pop().destroy()
            if runtime is not None:
                runtime.destroy()

        if self.ctx.owned:
            release()
        else:
            self.ctx.retire("scene renderer", release, self._last_serial)
