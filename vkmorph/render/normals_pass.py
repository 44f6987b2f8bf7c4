"""Optional per-frame normals: exact area-weighted vertex normals of the morphed surface, on the GPU.

The default (asset import) gives targets without normal deltas derived deltas, which are exact for one target at
weight 1 and a linear blend in between. This pass instead recomputes every morphing vertex's normal from the
morphed positions and the index buffer after the morph pass (``glsl/normals.comp``), so normals are exact for
any weight combination, and re-orthogonalizes the tangent against it (w kept). Adjacency is by vertex index
(CSR: vertex -> incident triangles, built once here), so vertices the file split along a hard edge stay split:
hard edges stay hard. Skinning then carries the normal as before (3x3 of the skin matrix in skin.vert).

Use, in the host's command buffer::

    counters = rt.record(cb, slot=s, consumer="compute")   # morph, then a compute -> compute barrier
    normals.record(cb, slot=s)                             # recompute where the morph ran, then compute -> vertex

It records nothing (not even a barrier) when the morph pass recorded nothing for that frame.
"""

from __future__ import annotations

import numpy as np

from ..errors import UsageError
from ..gpu import barriers
from ..gpu import memory as M
from ..gpu.interface import NORMALS
from ..gpu.interface import NORMALS_PUSH as PUSH
from ..gpu.pipeline import ComputePipeline
from ..gpu.vk import vk
from .morph_pass import MorphRuntime


def vertex_face_csr(indices_per_primitive, first_vertices, total_vertices: int):
    """(face_vertices (3F,), face_offsets (V+1,), vertex_faces (3F,)) uint32 in the batch's global vertex space:
    the triangles of every primitive and, per vertex, the triangles that use it."""
    tris = [np.asarray(ix, np.int64).reshape(-1) + first for ix, first in zip(indices_per_primitive, first_vertices)]
    face_vertices = np.concatenate(tris) if tris else np.zeros(0, np.int64)
    faces = np.repeat(np.arange(len(face_vertices) // 3), 3)
    order = np.argsort(face_vertices, kind="stable")
    counts = np.bincount(face_vertices, minlength=total_vertices)
    offsets = np.zeros(total_vertices + 1, np.int64)
    np.cumsum(counts, out=offsets[1:])
    return face_vertices.astype(np.uint32), offsets.astype(np.uint32), faces[order].astype(np.uint32)


class NormalsPass:
    """GPU normal recomputation for every morphing primitive of a ``MorphRuntime`` (all its output slots)."""

    def __init__(self, rt: MorphRuntime):
        if rt.batch is None:
            raise UsageError("NormalsPass: the runtime has no morphing primitives")
        self.rt, self.ctx = rt, rt.ctx
        batch = rt.batch
        firsts = np.cumsum([0] + [inst.prim.vertex_count for inst in batch.instances])[:-1]
        fv, offs, vf = vertex_face_csr([inst.prim.indices for inst in batch.instances], firsts,
                                       batch.total_vertices)
        self._owned: list[M.Buffer] = []
        self.pipeline: ComputePipeline | None = None
        try:
            pad = np.zeros(1, np.uint32)
            self.face_vertices = self._own(M.device_buffer(self.ctx, fv if len(fv) else pad, M.STORAGE,
                                                           name="normals face vertices"))
            self.face_offsets = self._own(M.device_buffer(self.ctx, offs, M.STORAGE, name="normals face offsets"))
            self.vertex_faces = self._own(M.device_buffer(self.ctx, vf if len(vf) else pad, M.STORAGE,
                                                          name="normals vertex faces"))
            words = [inst.vertex_offset // 4 + np.arange(inst.prim.vertex_count) * (inst.prim.vertices.itemsize // 4)
                     for inst in batch.instances]   # each batch vertex's first word in an output slot
            self.out_word = self._own(M.device_buffer(self.ctx, np.concatenate(words).astype(np.uint32), M.STORAGE,
                                                      name="normals output words"))
            self.pipeline = ComputePipeline(self.ctx, NORMALS, max_sets=batch.slots)
            self.sets = []
            for k in range(batch.slots):
                self.sets.append(self.pipeline.make_set({
                    "out_words": (batch.output, k * batch.slot_stride, max(batch.slot_stride, 4)),
                    "out_word": self.out_word, "face_vertices": self.face_vertices,
                    "face_offsets": self.face_offsets, "vertex_faces": self.vertex_faces}))
        except BaseException:
            self.destroy()
            raise
        self.push = np.array([(0, batch.total_vertices)], PUSH)
        self._push_ptr = M.cffi_pointer(self.push)
        self.groups = NORMALS.groups(batch.total_vertices)
        self.gpu_bytes = {"face_vertices": self.face_vertices.size, "face_offsets": self.face_offsets.size,
                          "vertex_faces": self.vertex_faces.size, "out_word": self.out_word.size}

    def _own(self, buf: M.Buffer) -> M.Buffer:
        self._owned.append(buf)
        return buf

    def record(self, cb, slot: int = 0, consumer: str = "vertex") -> int:
        """After ``rt.record(cb, slot=slot, consumer="compute")``: recompute the normals of output ``slot`` if the
        morph pass dispatched, then the compute -> ``consumer`` barrier. Returns the dispatches recorded."""
        if consumer not in barriers.CONSUMERS:
            raise UsageError(f"consumer must be one of {sorted(barriers.CONSUMERS)}, got {consumer!r}")
        if not self.rt.last_counters.dispatched:
            return 0
        self.pipeline.bind(cb, self.sets[slot])
        self.pipeline.push(cb, self._push_ptr, PUSH.itemsize)
        vk.vkCmdDispatch(cb, self.groups, 1, 1)
        barriers.record(cb, barriers.CONSUMERS[consumer])
        return 1

    def destroy(self) -> None:
        for b in reversed(self._owned):
            b.destroy()
        self._owned.clear()
        if self.pipeline is not None:
            self.pipeline.destroy()
            self.pipeline = None

    def __enter__(self) -> NormalsPass:
        return self

    def __exit__(self, *exc) -> None:
        self.destroy()
