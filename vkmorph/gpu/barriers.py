"""Named pipeline barriers. Each says what it orders and why, so a frame reads like a dependency graph.

Global memory barriers (VkMemoryBarrier) are used: on every desktop driver they cost the same as buffer
barriers for the whole range and the synchronization validation layer understands them exactly.
"""

from __future__ import annotations

from .vk import vk

S = vk  # short alias for stage/access constants below


def _barrier(cb, src_stage: int, src_access: int, dst_stage: int, dst_access: int) -> None:
    mb = vk.VkMemoryBarrier(srcAccessMask=src_access, dstAccessMask=dst_access)
    vk.vkCmdPipelineBarrier(cb, src_stage, dst_stage, 0, 1, [mb], 0, None, 0, None)


def transfer_write_to_compute_read(cb) -> None:
    """Weights/inputs written by vkCmdUpdateBuffer/copy must land before the morph dispatch reads them."""
    _barrier(cb, S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
             S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_READ_BIT)


def compute_write_to_vertex_read(cb) -> None:
    """glMemoryBarrier(VERTEX_ATTRIB_ARRAY) replacement: morph output is read as vertices (and storage in VS)."""
    _barrier(cb, S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_WRITE_BIT,
             S.VK_PIPELINE_STAGE_VERTEX_INPUT_BIT | S.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
             S.VK_ACCESS_VERTEX_ATTRIBUTE_READ_BIT | S.VK_ACCESS_SHADER_READ_BIT)


def compute_write_to_transfer_read(cb) -> None:
    """A dispatch's output must be complete before it is copied out (readback, capture)."""
    _barrier(cb, S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_WRITE_BIT,
             S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_READ_BIT)


def compute_write_to_compute_read(cb) -> None:
    """One dispatch feeds the next (e.g. morph output read by the skinning capture kernel)."""
    _barrier(cb, S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_WRITE_BIT,
             S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_READ_BIT | S.VK_ACCESS_SHADER_WRITE_BIT)


def previous_frame_to_morph_writes(cb) -> None:
    """Frames in flight: earlier weight updates/dispatches/draws must finish with the weights and morph
    outputs before this frame's vkCmdUpdateBuffer and dispatches overwrite them (WAR and WAW, one barrier)."""
    _barrier(cb, S.VK_PIPELINE_STAGE_TRANSFER_BIT | S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
             | S.VK_PIPELINE_STAGE_VERTEX_INPUT_BIT | S.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
             S.VK_ACCESS_TRANSFER_WRITE_BIT | S.VK_ACCESS_SHADER_WRITE_BIT,
             S.VK_PIPELINE_STAGE_TRANSFER_BIT | S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
             S.VK_ACCESS_TRANSFER_WRITE_BIT | S.VK_ACCESS_SHADER_WRITE_BIT)


def transfer_write_to_all(cb) -> None:
    """After a staging upload: every later use (compute, vertex, index, transfer) sees the data."""
    _barrier(cb, S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
             S.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, S.VK_ACCESS_MEMORY_READ_BIT | S.VK_ACCESS_MEMORY_WRITE_BIT)


def all_to_transfer_read(cb) -> None:
    """Before a readback copy: whatever wrote the buffer earlier (any stage) is complete and visible."""
    _barrier(cb, S.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, S.VK_ACCESS_MEMORY_WRITE_BIT,
             S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_READ_BIT)


def transfer_write_to_host_read(cb) -> None:
    """The copied bytes must be visible to the CPU once the fence signals."""
    _barrier(cb, S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
             S.VK_PIPELINE_STAGE_HOST_BIT, S.VK_ACCESS_HOST_READ_BIT)
