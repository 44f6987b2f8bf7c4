"""GPU skinning capture: glsl/skin.comp (the skinning code of skin.vert) over a morph output vertex buffer.

``SkinCapture.record(cb, dset, dtype, vertex_count)`` records one capture into a caller's command buffer (the
baker, ``vkmorph.api``, records many per command buffer through it); ``run`` is the blocking convenience that
``vkmorph morph --skinned`` and the tests use (it submits and waits), so skinned positions are checked from the
GPU itself.
"""

from __future__ import annotations

import numpy as np

from ..asset.model import attribute_offsets_words
from ..gpu import barriers
from ..gpu import memory as M
from ..gpu.context import Context
from ..gpu.interface import SKIN_CAPTURE, SKIN_CAPTURE_PUSH
from ..gpu.pipeline import ComputePipeline
from ..gpu.vk import vk


def palette_bytes(skin_matrices: np.ndarray) -> np.ndarray:
    """(J, 4, 4) math matrices (M @ v) -> std430 mat4[] (column-major) float32."""
    return np.ascontiguousarray(np.asarray(skin_matrices, np.float32).transpose(0, 2, 1))


class SkinCapture:
    def __init__(self, ctx: Context, max_runs: int = 16):
        self.ctx = ctx
        self.pipeline = ComputePipeline(ctx, SKIN_CAPTURE, max_sets=max(1, max_runs))

    def make_set(self, vertices, palette, output):
        """A descriptor set over (buffer, offset, bytes) ranges or whole buffers: the vertices to skin, the
        palette (std430 mat4[], ``palette_bytes``) and the output (48 bytes per vertex)."""
        return self.pipeline.make_set({"vertices": vertices, "palette": palette, "output": output})

    def record(self, cb, dset, dtype: np.dtype, vertex_count: int) -> None:
        """Bind ``dset`` and dispatch the capture of ``vertex_count`` vertices of layout ``dtype``. Records no
        barrier: the caller orders the morph dispatch before it (COMPUTE_TO_COMPUTE) and the reads after it."""
        o = attribute_offsets_words(dtype)
        push = np.array([(vertex_count, dtype.itemsize // 4, o["position"], o["normal"], o["tangent"],
                          o["joints"], o["weights"])], SKIN_CAPTURE_PUSH)
        self.pipeline.bind(cb, dset)
        self.pipeline.push(cb, M.cffi_pointer(push))
        vk.vkCmdDispatch(cb, self.pipeline.groups(vertex_count), 1, 1)

    def run(self, vertex_buffer: M.Buffer, offset: int, dtype: np.dtype, vertex_count: int,
            skin_matrices: np.ndarray):
        """Positions (V,3), normals (V,3), tangents (V,3) after four-bone skinning of the ``vertex_count``
        vertices at byte ``offset`` of ``vertex_buffer`` (offset aligned for storage-buffer binding)."""
        ctx = self.ctx
        pal = palette_bytes(skin_matrices)
        palette = M.host_buffer(ctx, pal.nbytes, M.STORAGE, name="capture palette")
        out = M.device_buffer(ctx, None, M.STORAGE, size=48 * max(1, vertex_count), name="capture output")
        try:
            palette.mapped[:] = pal.reshape(-1).view(np.uint8)
            dset = self.make_set((vertex_buffer, offset, vertex_count * dtype.itemsize), palette, out)

            def record(cb):
                barriers.record(cb, barriers.COMPUTE_TO_COMPUTE)  # the morph dispatch wrote the vertex buffer
                self.record(cb, dset, dtype, vertex_count)

            ctx.submit_and_wait(record)
            values = M.readback(ctx, out, np.float32).reshape(-1, 3, 4)[:vertex_count]
        finally:
            palette.destroy()
            out.destroy()
        return values[:, 0, :3].copy(), values[:, 1, :3].copy(), values[:, 2, :3].copy()

    def destroy(self) -> None:
        self.pipeline.destroy()
