"""Output slots (issue 13; ``vkmorph bench --only slots``): morph + a draw of the output per frame with 1 slot
and with FRAMES_IN_FLIGHT slots, frames in flight emulated with events inside one command buffer."""

from __future__ import annotations

import numpy as np

from .bench_data import Case, synthetic_primitive, synthetic_scene
from .bench_timing import WindowTimer

SLOTS_CASE = Case(500_000, 52, 0.05, 5, "clustered")
SLOTS_QUICK_CASE = Case(50_000, 52, 0.05, 5, "clustered")
FRAMES_IN_FLIGHT = 3
SLOTS_OVERLAP = ("with 1 slot the frames-in-flight guard (previous frame -> morph writes) makes frame N+1's weight "
                 "upload and morph wait until frame N's draw has read the output; with 3 slots the guard (previous "
                 "morph -> morph writes) waits only for earlier uploads and dispatches, so frame N+1's morph may run "
                 "while frame N's draw still reads its own slot (frame N+3 reuses that slot after its fence)")
SLOTS_CONSUMER = ("a renderer's draw of the whole output slot (vertex input + static.vert, depth-only pass, "
                  "triangles collapsed to a point: vertex work only)")


class FrameFences:
    """Frames in flight inside one command buffer: after frame i, vkCmdSetEvent(e_i); before frame i + n,
    vkCmdWaitEvents(e_i), which is what the host's fence wait for frame i does before it records frame i + n (a
    pipeline barrier there would also wait for frames i+1 .. i+n-1). ``begin()`` starts a command buffer."""

    def __init__(self, ctx, in_flight: int = FRAMES_IN_FLIGHT):
        from ..gpu.ownership import Owner

        self.ctx, self.in_flight = ctx, in_flight
        self.owner = Owner(ctx, "bench frame fences")
        self.events: list = []
        self.frame = 0

    def begin(self) -> None:
        """A new command buffer (the previous one completed): events back to unsignalled, frame 0."""
        from ..gpu.vk import vk

        for e in self.events[:self.frame]:
            vk.vkResetEvent(self.ctx.device, e)
        self.frame = 0

    def wait(self, cb) -> int:
        """Before frame i: wait for frame i - in_flight's event; returns i."""
        from ..gpu.vk import call, vk

        i = self.frame
        if i >= len(self.events):
            self.events.append(self.owner.add(vk.vkDestroyEvent, call("vkCreateEvent", self.ctx.device,
                                                                      vk.VkEventCreateInfo(), None)))
        if i >= self.in_flight:
            every = vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT
            vk.vkCmdWaitEvents(cb, 1, [self.events[i - self.in_flight]], every, every, 0, None, 0, None, 0, None)
        return i

    def signal(self, cb) -> None:
        """After frame i: set its event once everything recorded so far has finished."""
        from ..gpu.vk import vk

        vk.vkCmdSetEvent(cb, self.events[self.frame], vk.VK_PIPELINE_STAGE_ALL_COMMANDS_BIT)
        self.frame += 1

    def destroy(self) -> None:
        self.owner.destroy()


class DrawConsumer:
    """Reads the morph output the way the renderer does: a depth-only render pass (the shadow pass's) whose
    draw pulls every vertex of the output slot through vertex input and static.vert. The camera maps every vertex
    to one point, so the triangles have no area and the cost is the vertex work (no fragments)."""

    SIZE = 8

    def __init__(self, ctx, rt):
        from ..gpu import graphics as G
        from ..gpu import memory as M
        from ..gpu.image import DEPTH_FORMAT, Image
        from ..gpu.interface import EXTRA_INPUT, EXTRA_VERTEX, FRAME_UBO, ITEM_PUSH, SCENE, STATIC_INPUT
        from ..gpu.pipeline import descriptor_type, push_constant_stages
        from ..gpu.vk import vk
        from ..render.morph_pass import vertex_input_of

        self.ctx, self.rt = ctx, rt
        self.g = g = G.ObjectGroup(ctx, "bench draw consumer")
        inst = rt.morphing[0]
        self.count = inst.prim.vertex_count // 3 * 3
        self.buffer = inst.vertex_buffer.handle
        self.offsets = [rt.vertex_buffer_offset(inst.node, inst.prim_index, slot=k) for k in range(rt.slots)]
        self.depth = g.own(Image(ctx, self.SIZE, self.SIZE, DEPTH_FORMAT, vk.VK_IMAGE_USAGE_DEPTH_STENCIL_ATTACHMENT_BIT
                                 | vk.VK_IMAGE_USAGE_SAMPLED_BIT, vk.VK_IMAGE_ASPECT_DEPTH_BIT, name="bench depth"))
        self.pass_ = G.shadow_render_pass(ctx, g, DEPTH_FORMAT)
        self.fb = G.framebuffer(ctx, g, self.pass_, [self.depth.view], self.SIZE, self.SIZE)
        extra = np.zeros(inst.prim.vertex_count, EXTRA_VERTEX)
        self.extra = g.own(M.device_buffer(ctx, extra, M.VERTEX, name="bench colour/uv1"))
        frame = SCENE["frame"]
        set_layout = G.set_layout(ctx, g, [(frame.binding, descriptor_type(frame), vk.VK_SHADER_STAGE_VERTEX_BIT)])
        self.push_stages = push_constant_stages(SCENE)
        self.layout = G.pipeline_layout(ctx, g, [set_layout], ITEM_PUSH.itemsize, self.push_stages)
        vin = vertex_input_of(STATIC_INPUT.vertex)
        spec = G.PipelineSpec("static.vert", None, vin.stride, [(loc, fmt, off) for loc, _, fmt, off in vin.attributes],
                              color=False, extra_stride=EXTRA_VERTEX.itemsize,
                              extra_attributes=[(a.location, getattr(vk, a.vk_format), a.offset)
                                                for a in EXTRA_INPUT.vertex_attributes()])
        self.pipeline = G.graphics_pipeline(ctx, g, spec, self.layout, self.pass_)
        point = np.zeros(16, np.float32)
        point[15] = 1.0                      # every vertex -> clip (0, 0, 0, 1)
        ubo = np.zeros(1, FRAME_UBO)
        ubo["view_proj"] = ubo["light_view_proj"] = point
        ubo["viewport"] = (self.SIZE, self.SIZE, 0, 0)
        self.ubo = g.own(M.host_buffer(ctx, FRAME_UBO.itemsize, M.UNIFORM, name="bench frame constants"))
        self.ubo.mapped[:] = ubo.view(np.uint8)
        pool = G.descriptor_pool(ctx, g, 1, {vk.VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER: 1})
        self.set = G.allocate_set(ctx, pool, set_layout)
        G.write_buffer(ctx, self.set, frame.binding, descriptor_type(frame), self.ubo.handle)
        self.push = np.zeros(1, ITEM_PUSH)
        self.push["model"] = np.eye(4, dtype=np.float32).reshape(-1)
        self.push["pass"] = SCENE.constant("PASS_SHADOW")
        self.push["heat_joint"] = -1
        self.push_ptr = M.cffi_pointer(self.push)

    def draw(self, cb, slot: int) -> None:
        from ..gpu import graphics as G
        from ..gpu.vk import vk

        clear = vk.VkClearValue(depthStencil=vk.VkClearDepthStencilValue(depth=1.0, stencil=0))
        vk.vkCmdBeginRenderPass(cb, vk.VkRenderPassBeginInfo(
            renderPass=self.pass_, framebuffer=self.fb,
            renderArea=vk.VkRect2D(offset=vk.VkOffset2D(0, 0), extent=vk.VkExtent2D(self.SIZE, self.SIZE)),
            clearValueCount=1, pClearValues=[clear]), vk.VK_SUBPASS_CONTENTS_INLINE)
        G.set_viewport(cb, self.SIZE, self.SIZE)
        vk.vkCmdBindPipeline(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.pipeline)
        vk.vkCmdBindDescriptorSets(cb, vk.VK_PIPELINE_BIND_POINT_GRAPHICS, self.layout, 0, 1, [self.set], 0, None)
        vk.vkCmdPushConstants(cb, self.layout, self.push_stages, 0, self.push.itemsize, self.push_ptr)
        vk.vkCmdBindVertexBuffers(cb, 0, 2, [self.buffer, self.extra.handle], [self.offsets[slot], 0])
        vk.vkCmdDraw(cb, self.count, 1, 0, 0)
        vk.vkCmdEndRenderPass(cb)

    def destroy(self) -> None:
        self.g.destroy()


def _slot_frames(rt, fences: FrameFences, consumer: DrawConsumer, weights: np.ndarray, last: dict):
    """A frame: wait for the frame ``in_flight`` back (its fence), change every weight, morph into slot
    frame % slots (final barrier: compute -> vertex input), draw that slot, signal this frame's fence."""
    flip = [0]
    scaled = (weights * 0.9).astype(np.float32)

    def rec(cb):
        i = fences.wait(cb)
        flip[0] ^= 1
        rt.pose.set_flat(scaled if flip[0] else weights)
        slot = i % rt.slots
        c = rt.record(cb, slot=slot, consumer="vertex")
        consumer.draw(cb, slot)
        fences.signal(cb)
        last["slot"], last["dispatched"] = slot, c.dispatched
    return rec


def slots_overlap(ctx, timer: WindowTimer, case: Case, tries: int, warm_s: float, try_ms: float,
                  max_frames: int = 100) -> dict:
    """Per-frame GPU time of morph + draw with 1 output slot and with FRAMES_IN_FLIGHT slots, in one window."""
    from ..morph.reference import morph_reference
    from ..render.morph_pass import MorphRuntime

    prim = synthetic_primitive(case.vertices, case.targets, case.coverage, case.pattern, seed=5)
    scene = synthetic_scene([prim])
    w = np.zeros(case.targets, np.float32)
    w[:case.active] = np.linspace(0.3, 0.9, case.active)
    fences = FrameFences(ctx)
    made: list = []
    try:
        frames_of, last = {}, {}
        for slots in (1, FRAMES_IN_FLIGHT):
            # every frame goes into one command buffer (no host fence between a slot's uses), which host-written
            # weights do not allow; both slot counts use the vkCmdUpdateBuffer path, so only the slots differ
            rt = MorphRuntime(ctx, scene, slots=slots, weight_writes="transfer")
            made.append(rt)
            made.append(DrawConsumer(ctx, rt))
            last[slots] = {}
            frames_of[slots] = _slot_frames(rt, fences, made[-1], w, last[slots])
        timer.before_run = fences.begin
        frames, res = timer.same_window(frames_of[1], frames_of[FRAMES_IN_FLIGHT], tries, warm_s, try_ms,
                                        min_frames=2 * FRAMES_IN_FLIGHT + 1, max_frames=max_frames)  # slots reused
        errors = {}
        for rt in made[::2]:
            inst = rt.morphing[0]
            ref, _, _ = morph_reference(prim, rt.pose.flat[rt.pose.slice_of(inst.node)].astype(np.float64))
            out = rt.read_vertices(inst, slot=last[rt.slots]["slot"])
            errors[rt.slots] = float(np.abs(out["position"] - ref).max())
    finally:
        timer.before_run = None
        for obj in reversed(made):
            obj.destroy()
        fences.destroy()
    ratios = [b / a for a, b in res]
    name = f"{case.vertices // 1000:,}k x {case.targets}, {case.coverage:.0%} {case.pattern}, {case.active} active"
    return {"case": name, "vertices": case.vertices, "targets": case.targets, "active": case.active,
            "frames_in_flight": FRAMES_IN_FLIGHT, "frames_per_try": frames, "tries": tries,
            "one_slot_us": float(np.median([a for a, _ in res])) * 1e3,
            "slots_us": float(np.median([b for _, b in res])) * 1e3,
            "ratio": float(np.median(ratios)), "ratio_min": float(min(ratios)), "ratio_max": float(max(ratios)),
            "max_error_one_slot": errors[1], "max_error_slots": errors[FRAMES_IN_FLIGHT],
            "consumer": SLOTS_CONSUMER, "overlap": SLOTS_OVERLAP}


def slots_line(s: dict) -> str:
    n = s["frames_in_flight"]
    return (f"output slots ({s['case']}, {n} frames in flight, morph + draw per frame): 1 slot "
            f"{s['one_slot_us']:.1f} us, {n} slots {s['slots_us']:.1f} us per frame; {n} slots / 1 slot = "
            f"{s['ratio']:.3f} ({s['ratio_min']:.3f}-{s['ratio_max']:.3f}, {s['tries']} tries); max error "
            f"{max(s['max_error_one_slot'], s['max_error_slots']):.1e}")
