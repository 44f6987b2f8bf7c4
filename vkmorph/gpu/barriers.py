"""Named pipeline barriers: every vkCmdPipelineBarrier vkmorph records is one of these values. Each says what it
orders and why, so a frame reads like a dependency graph.

Buffers: global memory barriers (VkMemoryBarrier): on every desktop driver they cost the same as buffer barriers
for the whole range and the synchronization validation layer understands them exactly. Each is a ``Barrier``
value (stages and access masks, legacy and synchronization2 forms) so a host can be handed the barrier vkmorph
would record and merge it with its own; ``record(cb, barrier)`` records it.

Images: an ``ImageBarrier`` is a layout transition with its memory dependency (stages, accesses, old and new
layout); ``record_image(cb, transition, image, ...)`` records it for some mip levels of one image, or for several
images / level ranges in one call (``record_images``).
"""

from __future__ import annotations

from dataclasses import dataclass

from .vk import vk

S = vk  # short alias for stage/access constants below


@dataclass(frozen=True)
class Barrier:
    """One global memory dependency: ``src_*`` must happen-before and be visible to ``dst_*``."""

    name: str
    src_stage: int
    src_access: int
    dst_stage: int
    dst_access: int
    # synchronization2 (VkMemoryBarrier2) form: finer stages/accesses where sync2 has them; same otherwise
    src_stage2: int = 0
    src_access2: int = 0
    dst_stage2: int = 0
    dst_access2: int = 0

    def memory_barrier(self):
        return vk.VkMemoryBarrier(srcAccessMask=self.src_access, dstAccessMask=self.dst_access)

    def memory_barrier2(self):
        """A VkMemoryBarrier2 for vkCmdPipelineBarrier2 (Vulkan 1.3 or VK_KHR_synchronization2)."""
        return vk.VkMemoryBarrier2(srcStageMask=self.src_stage2 or self.src_stage,
                                   srcAccessMask=self.src_access2 or self.src_access,
                                   dstStageMask=self.dst_stage2 or self.dst_stage,
                                   dstAccessMask=self.dst_access2 or self.dst_access)


def record(cb, b: Barrier) -> int:
    """Record ``b`` into ``cb`` with vkCmdPipelineBarrier; returns 1 (for barrier counters)."""
    vk.vkCmdPipelineBarrier(cb, b.src_stage, b.dst_stage, 0, 1, [b.memory_barrier()], 0, None, 0, None)
    return 1


@dataclass(frozen=True)
class ImageBarrier:
    """One image layout transition: ``src_*`` happen-before (and are visible to) ``dst_*``, and the image's
    subresources go from ``old_layout`` to ``new_layout`` (UNDEFINED: the old contents are discarded)."""

    name: str
    src_stage: int
    src_access: int
    dst_stage: int
    dst_access: int
    old_layout: int
    new_layout: int

    def image_barrier(self, image, aspect: int, base_level: int = 0, levels: int = 1):
        return vk.VkImageMemoryBarrier(
            srcAccessMask=self.src_access, dstAccessMask=self.dst_access, oldLayout=self.old_layout,
            newLayout=self.new_layout, srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
            dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, image=image,
            subresourceRange=vk.VkImageSubresourceRange(aspectMask=aspect, baseMipLevel=base_level,
                                                        levelCount=levels, baseArrayLayer=0, layerCount=1))


def record_images(cb, b: ImageBarrier, subresources, aspect: int = vk.VK_IMAGE_ASPECT_COLOR_BIT) -> int:
    """Record ``b`` for each (image handle, first level, level count) of ``subresources`` in one
    vkCmdPipelineBarrier; returns 1 (for barrier counters)."""
    items = [b.image_barrier(image, aspect, first, count) for image, first, count in subresources]
    vk.vkCmdPipelineBarrier(cb, b.src_stage, b.dst_stage, 0, 0, None, 0, None, len(items), items)
    return 1


def record_image(cb, b: ImageBarrier, image, *, base_level: int = 0, levels: int = 1,
                 aspect: int = vk.VK_IMAGE_ASPECT_COLOR_BIT) -> int:
    """Record ``b`` for mip levels ``base_level .. base_level + levels - 1`` of ``image`` (a VkImage)."""
    return record_images(cb, b, [(image, base_level, levels)], aspect)


def _b(name, src_stage, src_access, dst_stage, dst_access, **sync2) -> Barrier:
    return Barrier(name, src_stage, src_access, dst_stage, dst_access, **sync2)


TRANSFER_TO_COMPUTE = _b(
    "transfer write -> compute read",  # weights/inputs written by vkCmdUpdateBuffer/copy, read by the dispatch
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_READ_BIT)
COMPUTE_TO_VERTEX = _b(
    "compute write -> vertex input",  # glMemoryBarrier(VERTEX_ATTRIB_ARRAY): output read as vertices (+ VS storage)
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_VERTEX_INPUT_BIT | S.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
    S.VK_ACCESS_VERTEX_ATTRIBUTE_READ_BIT | S.VK_ACCESS_SHADER_READ_BIT,
    src_access2=S.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
    dst_stage2=S.VK_PIPELINE_STAGE_2_VERTEX_ATTRIBUTE_INPUT_BIT | S.VK_PIPELINE_STAGE_2_VERTEX_SHADER_BIT,
    dst_access2=S.VK_ACCESS_2_VERTEX_ATTRIBUTE_READ_BIT | S.VK_ACCESS_2_SHADER_STORAGE_READ_BIT)
COMPUTE_TO_COMPUTE = _b(
    "compute write -> compute read",  # one dispatch feeds the next (host skinning, capture kernel, AS build input)
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_READ_BIT | S.VK_ACCESS_SHADER_WRITE_BIT,
    src_access2=S.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
    dst_access2=S.VK_ACCESS_2_SHADER_STORAGE_READ_BIT | S.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT)
COMPUTE_TO_TRANSFER = _b(
    "compute write -> transfer read",  # a dispatch's output copied out (readback, capture, host copies)
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_READ_BIT,
    src_access2=S.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
    dst_stage2=S.VK_PIPELINE_STAGE_2_COPY_BIT)
PREVIOUS_FRAME_TO_MORPH = _b(
    # Frames in flight, one output slot: earlier weight updates/dispatches/draws must finish with the weights and
    # morph outputs before this frame's vkCmdUpdateBuffer and dispatches overwrite them (WAR and WAW, one barrier).
    "previous frame -> morph writes",
    S.VK_PIPELINE_STAGE_TRANSFER_BIT | S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT
    | S.VK_PIPELINE_STAGE_VERTEX_INPUT_BIT | S.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
    S.VK_ACCESS_TRANSFER_WRITE_BIT | S.VK_ACCESS_SHADER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_TRANSFER_BIT | S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
    S.VK_ACCESS_TRANSFER_WRITE_BIT | S.VK_ACCESS_SHADER_WRITE_BIT)
PREVIOUS_MORPH_TO_MORPH = _b(
    # Frames in flight, one output slot per frame: only earlier uploads/dispatches (shared weights, and this slot's
    # previous compute write) are waited for; earlier draws of this slot are the host's fence wait for that frame.
    "previous morph -> morph writes",
    S.VK_PIPELINE_STAGE_TRANSFER_BIT | S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
    S.VK_ACCESS_TRANSFER_WRITE_BIT | S.VK_ACCESS_SHADER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_TRANSFER_BIT | S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
    S.VK_ACCESS_TRANSFER_WRITE_BIT | S.VK_ACCESS_SHADER_WRITE_BIT)
PREVIOUS_FRAME_TO_ANIM = _b(
    # Frames in flight, one palette slot: the crowd animation pass (render/crowd_anim.py) rewrites this slot's
    # palettes, which the frame that last used the slot read (compute skinning, skin.vert) and wrote (the previous
    # animation dispatch): those reads and writes must be done first (WAR, WAW). The host-written instance
    # parameters need nothing: a submission makes earlier host writes visible.
    "previous frame -> crowd animation writes",
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | S.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT,
    S.VK_ACCESS_SHADER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_WRITE_BIT)
MORPH_AND_DRAWS_TO_SKIN = _b(
    # crowd compute skinning (render/crowd_skin.py): the morph output written this frame is read (RAW), and the
    # skinned-vertex buffer the earlier draws of this slot read as vertex input is rewritten (WAR) -- even on a
    # frame whose morph pass recorded nothing (a pose-only change), so the skinning carries its own guard
    "morph write + previous draws -> crowd skinning",
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | S.VK_PIPELINE_STAGE_VERTEX_INPUT_BIT
    | S.VK_PIPELINE_STAGE_VERTEX_SHADER_BIT, S.VK_ACCESS_SHADER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_READ_BIT | S.VK_ACCESS_SHADER_WRITE_BIT,
    src_access2=S.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
    dst_access2=S.VK_ACCESS_2_SHADER_STORAGE_READ_BIT | S.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT)
SKIN_RUN_TO_NEXT_RUN = _b(
    # crowd compute skinning with motion vectors and one output slot (render/crowd_skin.py): ``last`` (the vertices
    # the previous frame drew, read) is the very range ``output`` (written), so a later dispatch of the frame (the
    # next run of consecutive instances) reads a bound range an earlier one wrote (RAW, and WAW on ``output`` and
    # ``previous``). The runs touch disjoint instances, but a descriptor binds the primitive's whole range: this
    # barrier orders the runs so that what the binding says is what is ordered
    "crowd skinning run -> next run (one slot: last is output)",
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_READ_BIT | S.VK_ACCESS_SHADER_WRITE_BIT,
    src_access2=S.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
    dst_access2=S.VK_ACCESS_2_SHADER_STORAGE_READ_BIT | S.VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT)
REPLICATE_COPIES = _b(
    # a buffer filled by doubling copies (crowd outputs: instance 0's vertices copied to 1, then 0-1 to 2-3, ...):
    # each copy reads what the copies before it wrote (RAW) next to regions they are still writing (no overlap)
    "replicating copy -> next replicating copy",
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_READ_BIT | S.VK_ACCESS_TRANSFER_WRITE_BIT)
TRANSFER_TO_ALL = _b(
    "transfer write -> everything",  # after a staging upload: every later use (compute, vertex, index, copy)
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, S.VK_ACCESS_MEMORY_READ_BIT | S.VK_ACCESS_MEMORY_WRITE_BIT)
ALL_TO_TRANSFER_READ = _b(
    "everything -> transfer read",  # before a readback copy: whatever wrote the buffer is complete and visible
    S.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, S.VK_ACCESS_MEMORY_WRITE_BIT,
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_READ_BIT)
TRANSFER_TO_HOST = _b(
    "transfer write -> host read",  # the copied bytes are visible to the CPU once the fence signals
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_HOST_BIT, S.VK_ACCESS_HOST_READ_BIT)
READBACK_TO_BAKE_WRITES = _b(
    # Batches in flight (vkmorph/bake.py, two slots): this batch's kernel rewrites the output buffer that the
    # kernel and the copy two batches back wrote and read, and its copy rewrites that batch's staging; those must
    # be done (WAW, WAR). Where the kernel writes host-visible memory directly (no copy), the host's read of it
    # came before this submission, which queue submission orders.
    "previous bake writes and readback -> bake writes",
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | S.VK_PIPELINE_STAGE_TRANSFER_BIT,
    S.VK_ACCESS_SHADER_WRITE_BIT | S.VK_ACCESS_TRANSFER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | S.VK_PIPELINE_STAGE_TRANSFER_BIT,
    S.VK_ACCESS_SHADER_WRITE_BIT | S.VK_ACCESS_TRANSFER_WRITE_BIT)
BAKE_POSE_TO_KERNEL = _b(
    # vkmorph/bake.py with the pose on the GPU: the pose pass (crowd_anim.comp through ClipPosePass) wrote this
    # batch's matrices (palettes, rigid parts' world matrices), which bake.comp reads (RAW). The pass's own
    # writes after the kernel two batches back read the same buffer are ordered by READBACK_TO_BAKE_WRITES (WAR).
    # bake_ubo.comp reads them as a uniform buffer (UNIFORM_READ), bake.comp as a storage buffer and
    # bake_wide.comp as a uniform texel buffer (both SHADER_READ).
    "bake pose writes -> bake kernel reads",
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, S.VK_ACCESS_SHADER_READ_BIT | S.VK_ACCESS_UNIFORM_READ_BIT)

COPIES_TO_COPIES = _b(
    # bench: each frame's copy (compute kernel or vkCmdCopyBuffer) finishes before the next one rewrites the buffer
    "copy -> copy",
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | S.VK_PIPELINE_STAGE_TRANSFER_BIT,
    S.VK_ACCESS_SHADER_WRITE_BIT | S.VK_ACCESS_TRANSFER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | S.VK_PIPELINE_STAGE_TRANSFER_BIT,
    S.VK_ACCESS_SHADER_READ_BIT | S.VK_ACCESS_SHADER_WRITE_BIT | S.VK_ACCESS_TRANSFER_READ_BIT
    | S.VK_ACCESS_TRANSFER_WRITE_BIT)
COMPUTE_AND_TRANSFER_TO_HOST = _b(
    # baked outputs (written by a dispatch or a copy) read by the CPU once the fence signals
    "compute/transfer write -> host read",
    S.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | S.VK_PIPELINE_STAGE_TRANSFER_BIT,
    S.VK_ACCESS_SHADER_WRITE_BIT | S.VK_ACCESS_TRANSFER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_HOST_BIT, S.VK_ACCESS_HOST_READ_BIT)

L = vk  # layouts
UNDEFINED_TO_TRANSFER_DST = ImageBarrier(
    "undefined -> transfer dst",  # a new (or discarded) image about to be written by a copy or blit
    S.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, 0, S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
    L.VK_IMAGE_LAYOUT_UNDEFINED, L.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL)
SAMPLED_TO_TRANSFER_DST = ImageBarrier(
    # re-upload of a texture the fragment shader sampled in earlier frames (WAR); old contents discarded
    "sampled -> transfer dst",
    S.VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT, S.VK_ACCESS_SHADER_READ_BIT,
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
    L.VK_IMAGE_LAYOUT_UNDEFINED, L.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL)
BLIT_SOURCE_READY = ImageBarrier(
    "transfer dst -> blit source",  # a mip level written (copy or previous blit) is read by the next blit
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_READ_BIT,
    L.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, L.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL)
BLIT_SOURCE_TO_SAMPLED = ImageBarrier(
    "blit source -> sampled",  # the blit has read the level; the fragment shader samples it from now on
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_READ_BIT,
    S.VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT, S.VK_ACCESS_SHADER_READ_BIT,
    L.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, L.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL)
UPLOADED_TO_SAMPLED = ImageBarrier(
    "transfer dst -> sampled",  # written by a copy or the last blit, sampled by the fragment shader
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_FRAGMENT_SHADER_BIT, S.VK_ACCESS_SHADER_READ_BIT,
    L.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, L.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL)
PRESENT_TO_TRANSFER_SRC = ImageBarrier(
    "presentable -> transfer src",  # screenshot: the frame's colour writes land before the copy reads the image
    S.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, S.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_READ_BIT,
    L.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR, L.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL)
TRANSFER_SRC_TO_PRESENT = ImageBarrier(
    # back to presentation after the copy; the present semaphore orders what follows, so no access to make visible
    "transfer src -> presentable",
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, 0, S.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, 0,
    L.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, L.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR)
# render scale (app/scaled_view.py): the 3D view is rendered into a smaller image and blitted into the swapchain
# image, which the overlay (panel) pass then draws over at full resolution
SWAPCHAIN_TO_BLIT_DST = ImageBarrier(
    # the acquire semaphore is waited for at COLOR_ATTACHMENT_OUTPUT: this barrier's source stage chains the blit
    # behind it (the presentation engine's read of the image's previous frame is done); old contents discarded
    "acquired swapchain image -> blit destination",
    S.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, 0, S.VK_PIPELINE_STAGE_TRANSFER_BIT,
    S.VK_ACCESS_TRANSFER_WRITE_BIT, L.VK_IMAGE_LAYOUT_UNDEFINED, L.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL)
BLIT_DST_TO_PRESENT = ImageBarrier(
    # the blit's writes before the overlay pass loads and blends over them; presentation itself is ordered by
    # the render-done semaphore
    "blit destination -> presentable (overlay pass loads it)",
    S.VK_PIPELINE_STAGE_TRANSFER_BIT, S.VK_ACCESS_TRANSFER_WRITE_BIT,
    S.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT,
    S.VK_ACCESS_COLOR_ATTACHMENT_READ_BIT | S.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
    L.VK_IMAGE_LAYOUT_TRANSFER_DST_OPTIMAL, L.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR)

# where the morph output goes next -> the final barrier MorphRuntime.record() records
CONSUMERS = {"vertex": COMPUTE_TO_VERTEX, "compute": COMPUTE_TO_COMPUTE, "transfer": COMPUTE_TO_TRANSFER}
