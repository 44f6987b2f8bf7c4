"""A crowd in ``SceneRenderer``: which vertex shader and vertex range each primitive draws with, the per-instance
matrices the vertex shaders read, culling, and the draw calls (one job: turning a crowd runtime's state into
draws; the renderer records the passes around them).

Per primitive of the scene, one of three ways (``CrowdItem.mode``), fixed at build:

* ``"compute"``: skinned once per frame by ``CrowdSkinning`` (render/crowd_skin.py; the cost model or the
  renderer's ``skinning=`` option picks it) into world-space ``STATIC_VERTEX`` vertices; every pass draws them
  with ``crowd_pull.vert`` and matrix 0 of the identity palette (``instance_matrices = 0``); instances are
  ranges of one buffer, bound as set 1's ``crowd_vertices`` and read by the vertex shader at vec4
  ``gl_InstanceIndex x instance_vec4 + gl_VertexIndex x 3``: one instanced draw per run of consecutive visible
  instances (``pull_compute = False``: the former per-instance binds + draws with ``crowd_static.vert``).
* ``"vertex"``: skinned in every pass by ``crowd_skin.vert`` from a per-slot host buffer holding every instance's
  world-space palette (``instance_matrices = joints``; ``gl_InstanceIndex`` picks the instance's).
* ``"rigid"``: ``crowd_static.vert`` with one model matrix per instance (``instance_matrices = 1``).

A primitive without targets that is not compute-skinned shares one vertex range between instances: it is drawn
instanced, one ``vkCmdDrawIndexed`` per run of consecutive visible instances (``firstInstance`` = the run's first),
as the compute-skinned ones are. A morphing vertex-shader-skinned or rigid one reads each instance's own range of
the morph output (``SKINNED_VERTEX`` / ``STATIC_VERTEX``, ``MorphBatch.instance_stride`` bytes apart): pulled as
well (``crowd_skin_pull.vert`` / ``crowd_pull.vert``, set 1's ``crowd_vertices`` bound at this slot's range, vertex v
of instance i at vec4 ``i x instance_vec4 + v x`` the layout's vec4s), so it is one instanced draw per run too; a
range over ``maxStorageBufferRange`` or ``pull_vertex = False`` (the reference) falls back to one binding-0 bind +
draw per visible instance (``firstInstance = i``, so its matrices are still its own).

Matrices are written per frame slot for the instances whose skeleton version moved since that slot's last write
(the host waited for the frame that last used the slot: the frames-in-flight rule). Culling
(render/crowd_cull.py, ``cull=True``) gives the frame's visible mask; it goes to the morph pass and the skinning
(culled instances' changes stay pending) and to the draws here.

Animated on the GPU (``animation=``: a ``render/crowd_anim.CrowdAnimation``, or "gpu" for one made here over the
scene's clips): every frame records that pass after the morph pass, before the skinning (its clock is
``CrowdFrame.time``, the renderer's ``animation_time``), with ``consumer="vertex"`` (``COMPUTE_TO_VERTEX``: the
vertex shaders read its palettes; compute skinning's own ``MORPH_AND_DRAWS_TO_SKIN`` orders its reads). The
compute path skins from its palettes (``CrowdSkinning(animation=)``); the vertex-shader and rigid items bind
``anim.palettes[k]`` itself as set 1 (``instance_matrices = anim.palette_width``, ``matrix_first`` = the skin's
``palette_first`` or the node's ``model_column``), so nothing is copied and the host writes no matrices for them.
Culling uses the pose-free clip boxes of ``CrowdCuller(animation=)`` for the GPU-posed instances.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..errors import UsageError
from ..gpu import memory as M
from ..gpu.interface import PULLED_SKINNED_VEC4, PULLED_VERTEX_VEC4
from ..gpu.vk import vk
from .crowd_cull import CrowdCuller
from .crowd_lod import parse_lod
from .crowd_skin import CrowdSkinning

RENDER_PASSES = 2     # shadow + forward draw every crowd primitive (the outline only the selection): the model's input
CAMERA, SHADOW = "forward", "shadow"    # the two visible sets / LOD choices of a frame (the outline: the camera's)


@dataclass
class CrowdItem:
    mode: str                          # "compute" | "vertex" | "rigid"
    shared: bool                       # one vertex range for every instance: instanced draws
    vertex_buffers: list               # per frame slot
    offsets: list                      # per frame slot: instance 0's byte offset
    instance_stride: int               # bytes between instances' vertex ranges (0: shared)
    vertex_count: int
    instance_matrices: int             # mat4s per instance in the set-1 buffer (0: identity for every instance)
    matrix_first: int = 0              # the item's first mat4 within an instance's (GPU animation's palette rows)
    buffers: list | None = None        # per frame slot host buffer (None: the identity palette)
    views: list | None = None          # (instances, instance_matrices, 4, 4) float32 views of ``buffers``
    draw: object = None                # the runtime's CrowdDraw of this primitive (matrices, palette)
    pulled: bool = False               # the vertex shader reads each instance's range (instanced draws)
    index_count: int = 0               # level 0's indices (the primitive's own)
    lod_first: tuple = (0,)            # per LOD level: first index in ``index_buffer`` and index count
    lod_count: tuple = ()
    lod_vertices: tuple = ()           # per LOD level: distinct vertices its indices reference
    index_buffer: object = None        # the LOD levels' indices one after the other (None: the item's own buffer)


def pulled_range(c: CrowdItem, count: int) -> int:
    """Bytes of set 1's ``crowd_vertices`` range of a pulled item: instance 0's first vertex to the last's end."""
    per_vertex = 16 * (PULLED_SKINNED_VEC4 if c.mode == "vertex" else PULLED_VERTEX_VEC4)
    return (count - 1) * c.instance_stride + c.vertex_count * per_vertex


def level_runs(visible: np.ndarray, levels: np.ndarray | None, n_levels: int) -> list[tuple[int, np.ndarray, list]]:
    """[(level, visible instance indices, runs)] of the visible instances per LOD level (levels None: all 0)."""
    if levels is None:
        return [(0, *visible_runs(visible))]
    return [(k, *visible_runs(visible & (levels == k))) for k in range(n_levels)]


def visible_runs(visible: np.ndarray) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """(visible instance indices, [(first, count)] runs of consecutive visible instances)."""
    idx = np.flatnonzero(visible)
    if not len(idx):
        return idx, []
    cut = np.flatnonzero(np.diff(idx) != 1) + 1
    starts, ends = idx[np.r_[0, cut]], idx[np.r_[cut - 1, len(idx) - 1]]
    return idx, [(int(s), int(e - s + 1)) for s, e in zip(starts, ends)]


class CrowdFrame:
    """The crowd side of a ``SceneRenderer`` (see the module docstring). ``skinning``: "auto" (the cost model
    per primitive), "compute" or "vertex" for every skinned primitive; ``cull``: frustum culling, per pass (the
    camera's frustum for the forward pass, the light's volume for the shadow pass; deformed: either);
    ``motion_vectors``: previous positions of the compute-skinned primitives (CrowdSkinning); ``lod``: levels of
    detail (render/crowd_lod.py ``parse_lod``: None / "off", "on", a forced level or a ``CrowdLod``)."""

    # compute-skinned primitives: crowd_pull.vert and one instanced draw per run of visible instances; False: the
    # former per-instance draws (crowd_static.vert, binding 0 rebound per instance), the tests' exact reference
    pull_compute = True
    # morphing vertex-shader-skinned and rigid primitives (each instance its own morph output range):
    # crowd_skin_pull.vert / crowd_pull.vert and one instanced draw per run of visible instances; False: one
    # binding-0 bind + draw per visible instance (crowd_skin.vert / crowd_static.vert), the tests' exact reference
    pull_vertex = True

    def __init__(self, renderer, items, *, skinning: str = "auto", cull: bool = True,
                 motion_vectors: bool = False, animation="cpu", animation_clips: list | None = None, lod=None):
        rt = renderer.runtime
        self.lod = parse_lod(lod)
        if rt.crowd is None:
            raise UsageError("CrowdFrame needs a crowd runtime (MorphRuntime(..., instances=N))")
        self.rt, self.crowd, self.cull = rt, rt.crowd, bool(cull)
        self.ctx, self.slots, self.output_slots = renderer.ctx, renderer.slots, renderer.output_slots
        self._buffers: list = []
        self.skin = self.animation = None
        self._owns_animation = False
        self.time = 0.0                # the GPU animation's clock (s)
        if isinstance(animation, str) and animation not in ("cpu", "gpu"):
            raise UsageError(f"animation must be 'cpu', 'gpu' or a CrowdAnimation, got {animation!r}")
        if animation not in ("cpu", "gpu") and getattr(animation, "rt", None) is not rt:
            raise UsageError("animation= must be a CrowdAnimation of the renderer's runtime")
        if animation == "gpu":
            from .crowd_anim import CrowdAnimation

            animation, self._owns_animation = CrowdAnimation(rt, clips=animation_clips), True
        self.animation = None if animation == "cpu" else animation
        try:
            self.skin = CrowdSkinning(rt, passes=RENDER_PASSES, path=skinning, motion_vectors=motion_vectors,
                                      animation=self.animation)
            self.culler = CrowdCuller(rt, animation=self.animation)
            self._build(items)
        except BaseException:
            self.destroy()
            raise
        N = self.crowd.count
        self.n_levels = self.lod.levels if self.lod is not None else 1
        self.visible = np.ones(N, bool)            # the camera's visible set (forward and outline passes)
        self.shadow_visible = np.ones(N, bool)     # the light volume's (shadow pass)
        self.levels = self.shadow_levels = None    # (N,) int8 LOD levels per pass (None: no LOD, all 0)
        self.visible_idx, self.runs = visible_runs(self.visible)
        self.pass_runs = {CAMERA: level_runs(self.visible, None, 1), SHADOW: level_runs(self.visible, None, 1)}
        self.pass_draws = {CAMERA: 0, SHADOW: 0}       # crowd draws / triangles of each pass since record_deform
        self.pass_triangles = {CAMERA: 0, SHADOW: 0}
        self.pass_vertices = {CAMERA: [0, 0], SHADOW: [0, 0]}   # distinct vertices drawn: [skinned, other]
        self._applied = [np.full(N, -1, np.int64) for _ in range(self.slots)]
        self.skinned_last = 0          # instances compute-skinned by the last record
        self.draw_calls = 0            # vkCmdDraw* recorded by ``draw`` since the last ``record_deform`` (one frame)

    def _build(self, items) -> None:
        rt, N = self.rt, self.crowd.count
        draws = rt.crowd_draws(0)
        compute = {(d.node, d.primitive): d for d in self.skin.draws(0)}
        skin_draws = [self.skin.draws(self.output_slots[k]) for k in range(self.slots)]
        self.items = []
        for it, d in zip(items, draws):
            inst = it.instance
            key = (inst.node, inst.prim_index)
            if key in compute:
                j = list(compute).index(key)
                c = CrowdItem("compute", False, [sd[j].vertex_buffer for sd in skin_draws],
                              [sd[j].vertex_offset for sd in skin_draws], compute[key].instance_stride,
                              inst.prim.vertex_count, 0, draw=d)
                c.pulled = self.pull_compute
                it.vs = "crowd_pull" if c.pulled else "crowd_static"
            else:
                offs = [rt.vertex_buffer_offset(inst.node, inst.prim_index, slot=s) for s in self.output_slots]
                width = d.joint_palette.shape[1] if inst.prim.is_skinned else 1
                anim = self.animation
                c = CrowdItem("vertex" if inst.prim.is_skinned else "rigid", d.instance_stride == 0,
                              [inst.vertex_buffer.handle] * self.slots, offs, d.instance_stride,
                              inst.prim.vertex_count, width if anim is None else anim.palette_width, draw=d)
                if anim is not None:     # the animation's palette rows, read in place (not owned here)
                    c.matrix_first = (anim.palette_first(inst.prim.skin) if inst.prim.is_skinned
                                      else anim.model_column(inst.node))
                    c.buffers = [anim.palettes[s] for s in self.output_slots]
                else:
                    c.buffers = [self._own(M.host_buffer(self.ctx, 64 * N * width, M.STORAGE,
                                                         name=f"crowd matrices n{inst.node}p{inst.prim_index}"))
                                 for _ in range(self.slots)]
                    c.views = [b.view(np.float32, N * width * 16).reshape(N, width, 4, 4) for b in c.buffers]
                # a morphing primitive: each instance its own range of the morph output; pulled by the vertex
                # shader (crowd_skin_pull.vert / crowd_pull.vert) when that range fits one storage binding
                c.pulled = not c.shared and self.pull_vertex and self._fits(c)
                if c.pulled:
                    it.vs = "crowd_skin_pull" if inst.prim.is_skinned else "crowd_pull"
                else:
                    it.vs = "crowd_skin" if inst.prim.is_skinned else "crowd_static"
            c.index_count = it.index_count
            c.lod_count = (it.index_count,)
            c.lod_vertices = (int(len(np.unique(inst.prim.indices))),)
            if self.lod is not None:
                self._build_lod(c, inst)
            it.crowd = c
            self.items.append(c)

    def _build_lod(self, c: CrowdItem, inst) -> None:
        """The primitive's LOD index lists (asset/lod.py: original vertices only) in one index buffer."""
        from ..asset.lod import primitive_lods

        lv = primitive_lods(inst.prim, self.lod.ratios)
        counts = [len(x) for x in lv]
        c.lod_first = tuple(int(x) for x in np.cumsum([0] + counts[:-1]))
        c.lod_count = tuple(counts)
        c.lod_vertices = tuple(int(len(np.unique(x))) for x in lv)
        ib = self._own(M.device_buffer(self.ctx, np.concatenate(lv).astype(np.uint32), M.INDEX,
                                       name=f"crowd LOD indices n{inst.node}p{inst.prim_index}"))
        c.index_buffer = ib.handle

    def _fits(self, c: CrowdItem) -> bool:
        """Every instance's range of ``c`` bound as one storage range: within maxStorageBufferRange."""
        limit = int(self.ctx.info.limits.get("maxStorageBufferRange", 1 << 31))
        return pulled_range(c, self.crowd.count) <= limit

    def _own(self, buf):
        self._buffers.append(buf)
        return buf

    @property
    def paths(self) -> dict[tuple[int, int], str]:
        """(node, primitive) -> "compute" / "vertex" for the skinned primitives (the cost model's or the forced
        choice), as ``CrowdSkinning.paths``."""
        return dict(self.skin.paths)

    def describe(self, scene) -> list[tuple[str, str]]:
        """(object name, "compute" / "vertex" / "rigid") per primitive, for the panel and ``vkmorph info``."""
        out = []
        for c, inst in zip(self.items, self.rt.instances):
            name = scene.nodes[inst.node].name or f"node {inst.node}"
            out.append((name + (f" p{inst.prim_index}" if inst.prim_index else ""), c.mode))
        return out

    # ------------------------------------------------------------------ per frame
    def update(self, slot: int, view_proj: np.ndarray, *, light_view_proj: np.ndarray | None = None,
               light_dir=None, pixels: float = 720.0, shadow_pixels: float = 1024.0) -> None:
        """Host side of frame ``slot``: the visible sets (culling with the camera's ``view_proj`` for the forward
        pass; for the shadow pass the light's ``light_view_proj`` volume and, with ``light_dir`` (the direction
        the light travels), only instances whose box swept along it can reach the camera's frustum: an instance
        outside the camera's frustum still casts its shadow into view, one whose shadow cannot land there is
        not deformed for it; None: the camera's set), the LOD level per instance and pass (the target ``pixels``
        high, the shadow map ``shadow_pixels``), and the matrices of the instances that moved since this slot
        last wrote them."""
        N = self.crowd.count
        light = view_proj if light_view_proj is None else light_view_proj
        if self.cull:
            self.visible = self.culler.visible(view_proj)
            if light_view_proj is None:
                self.shadow_visible = self.visible
            else:
                self.shadow_visible = self.culler.visible(light)
                if light_dir is not None:
                    self.shadow_visible &= self.culler.casts_into(view_proj, light_dir)
        else:
            self.visible = self.shadow_visible = np.ones(N, bool)
        if self.lod is not None:
            boxes = self.culler.boxes() if self.lod.level is None else np.zeros((N, 2, 3))
            self.levels = self.lod.select(boxes, view_proj, pixels)
            self.shadow_levels = self.lod.select(boxes, light, shadow_pixels, shadow=True)
        self.visible_idx, self.runs = visible_runs(self.visible)
        self.pass_runs = {CAMERA: level_runs(self.visible, self.levels, self.n_levels),
                          SHADOW: level_runs(self.shadow_visible, self.shadow_levels, self.n_levels)}
        self.rt.crowd_draws(self.output_slots[slot])            # refresh the matrices where instances moved
        rows = self.crowd.stale_rows(self._applied[slot])
        if not len(rows) or self.animation is not None:      # GPU animation: its palette rows are read in place
            return
        sel = slice(None) if len(rows) == self.crowd.count else rows
        for c in self.items:
            if c.views is None:
                continue
            m = c.draw.joint_palette if c.mode == "vertex" else c.draw.world[:, None]
            c.views[slot][sel] = m[sel].transpose(0, 1, 3, 2)    # std430 mat4: column-major
        self._applied[slot][rows] = self.crowd.skeleton_versions[rows]

    @property
    def deform_visible(self) -> np.ndarray:
        """(N,) bool: the instances some pass draws (camera or light), the ones morphed and skinned."""
        return self.visible | self.shadow_visible

    def level_counts(self, which: str = CAMERA) -> list[int]:
        """Visible instances per LOD level of pass ``which`` ("forward" / "shadow")."""
        return [len(idx) for _, idx, _ in self.pass_runs[which]] + [0] * (self.n_levels - len(self.pass_runs[which]))

    def record_deform(self, cb, slot: int):
        """The morph pass (visible instances only) then the compute skinning; returns the morph counters."""
        vis = self.deform_visible if self.cull else None
        self.draw_calls = 0
        self.pass_draws = {CAMERA: 0, SHADOW: 0}
        self.pass_triangles = {CAMERA: 0, SHADOW: 0}
        self.pass_vertices = {CAMERA: [0, 0], SHADOW: [0, 0]}
        counters = self.rt.record(cb, slot=self.output_slots[slot], visible=vis)
        if self.animation is not None:   # palettes read by compute skinning (its own guard) and the vertex shaders
            self.animation.record(cb, self.output_slots[slot], time=self.time, consumer="vertex")
        return counters

    def record_skinning(self, cb, slot: int) -> int:
        self.skinned_last = self.skin.record(cb, self.output_slots[slot],
                                             visible=self.deform_visible if self.cull else None)
        return self.skinned_last

    def draw(self, cb, it, slot: int, extra_buffer, which: str = CAMERA) -> None:
        """The draw calls of one crowd item (pipeline, sets and push constants already bound) in pass ``which``
        ("forward": the camera's visible set and levels, also the outline's; "shadow": the light's): per LOD
        level its index range of the item's LOD index buffer (bound here; level 0 is the primitive's own)."""
        c = it.crowd
        vb, base = c.vertex_buffers[slot], c.offsets[slot]
        if c.index_buffer is not None:
            vk.vkCmdBindIndexBuffer(cb, c.index_buffer, 0, vk.VK_INDEX_TYPE_UINT32)
        vk.vkCmdBindVertexBuffers(cb, 0, 2, [vb, extra_buffer], [base, 0])
        draws = tris = verts = 0
        for level, idx, runs in self.pass_runs[which]:
            n, first_index = c.lod_count[level], c.lod_first[level]
            if not n or not len(idx):
                continue
            if c.shared or c.pulled:  # pulled: crowd_pull.vert / crowd_skin_pull.vert read instance i's range
                for first, count in runs:
                    vk.vkCmdDrawIndexed(cb, n, count, first_index, 0, first)
                draws += len(runs)
            else:   # the instance's own range (morph or skinned output), its matrices by firstInstance; not
                # vertexOffset = i x V, which would offset binding 1 (colour, TEXCOORD_1: shared by instances) too
                stride = c.instance_stride
                for i in idx.tolist():
                    vk.vkCmdBindVertexBuffers(cb, 0, 1, [vb], [base + i * stride])
                    vk.vkCmdDrawIndexed(cb, n, 1, first_index, 0, i)
                draws += len(idx)
            tris += (n // 3) * len(idx)
            verts += c.lod_vertices[level] * len(idx)
        self.draw_calls += draws
        key = SHADOW if which == SHADOW else CAMERA
        self.pass_draws[key] += draws
        self.pass_triangles[key] += tris
        self.pass_vertices[key][0 if c.mode != "rigid" else 1] += verts

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        return self.culler.bounds()

    def destroy(self) -> None:
        while self._buffers:
            self._buffers.pop().destroy()
        if self.skin is not None:
            self.skin.destroy()
            self.skin = None
        if self.animation is not None and self._owns_animation:
            self.animation.destroy()
        self.animation = None
