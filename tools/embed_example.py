#!/usr/bin/env python3
"""Embedding vkmorph in your own Vulkan renderer: your instance, device, queue, command buffers and fences.

The contract (docs/embedding.md): vkmorph wraps your handles (owning none of them) and never submits to your
queue or waits on your device. Each frame you call ``rt.record(cb, slot=...)`` in your command buffer, outside a
render pass, before your draws; it records the first-use uploads, the version-gated weight uploads and
dispatches, and the final barrier. ``rt.draws(slot)`` tells you what to bind and draw. When a frame's fence
signalled you report it with ``ctx.completed(serial)``; that releases staging buffers and anything destroyed
while in flight.

    python tools/embed_example.py [MODEL]     # default: the built-in scene; VKMORPH_VALIDATION=1 to validate

Prints what it checked: for the most-morphed primitive, the vertices the GPU produced in each of two frames in
flight against an independent numpy morph of the file; for a file without morph targets, the rest vertices.
Exit status 0 when they match, 1 when not, 2 for a file vkmorph refuses, 3 for any validation message.
"""

from __future__ import annotations

import os
import sys

import numpy as np
import vulkan as vk

from vkmorph import load_scene
from vkmorph.errors import VkmorphError
from vkmorph.gpu.context import Context
from vkmorph.morph.reference import morph_reference
from vkmorph.render.morph_pass import MorphRuntime

FRAMES_IN_FLIGHT = 2


class Host:
    """Your renderer's own set-up, in plain python-vulkan."""

    def __init__(self, validate: bool):
        self.messages: list[str] = []
        exts, layers, chain = [], [], None
        if validate:
            def on_message(severity, types, data, user):
                self.messages.append(vk.ffi.string(data.pMessage).decode(errors="replace"))
                return 0

            self._keep = on_message
            chain = vk.VkDebugUtilsMessengerCreateInfoEXT(
                messageSeverity=vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT
                | vk.VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT,
                messageType=vk.VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT, pfnUserCallback=on_message)
            self._chain = chain
            exts, layers = ["VK_EXT_debug_utils"], ["VK_LAYER_KHRONOS_validation"]
        self.api_version = vk.VK_MAKE_VERSION(1, 2, 0)          # vkmorph needs Vulkan 1.2
        app = vk.VkApplicationInfo(pApplicationName="my-renderer", apiVersion=self.api_version)
        self.instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
            pApplicationInfo=app, enabledLayerCount=len(layers), ppEnabledLayerNames=layers,
            enabledExtensionCount=len(exts), ppEnabledExtensionNames=exts, pNext=chain or vk.ffi.NULL), None)
        self.physical = vk.vkEnumeratePhysicalDevices(self.instance)[0]
        self.family = next(i for i, q in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(self.physical))
                           if q.queueFlags & vk.VK_QUEUE_GRAPHICS_BIT and q.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
        qci = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=self.family, queueCount=1, pQueuePriorities=[1.0])
        self.features = vk.VkPhysicalDeviceFeatures()
        self.device = vk.vkCreateDevice(self.physical, vk.VkDeviceCreateInfo(
            queueCreateInfoCount=1, pQueueCreateInfos=[qci], pEnabledFeatures=self.features), None)
        self.queue = vk.vkGetDeviceQueue(self.device, self.family, 0)
        self.pool = vk.vkCreateCommandPool(self.device, vk.VkCommandPoolCreateInfo(
            flags=vk.VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT, queueFamilyIndex=self.family), None)
        self.cbs = vk.vkAllocateCommandBuffers(self.device, vk.VkCommandBufferAllocateInfo(
            commandPool=self.pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=FRAMES_IN_FLIGHT))
        self.fences = [vk.vkCreateFence(self.device, vk.VkFenceCreateInfo(
            flags=vk.VK_FENCE_CREATE_SIGNALED_BIT), None) for _ in range(FRAMES_IN_FLIGHT)]

    def destroy(self) -> None:
        for f in self.fences:
            vk.vkDestroyFence(self.device, f, None)
        vk.vkDestroyCommandPool(self.device, self.pool, None)
        vk.vkDestroyDevice(self.device, None)
        vk.vkDestroyInstance(self.instance, None)


def most_morphed(rt: MorphRuntime):
    """The morphing primitive with the most stored deltas (a primitive with none would prove nothing)."""
    best = max(rt.morphing, key=lambda i: i.delta_count, default=None)
    return best if best is not None and best.delta_count > 0 else None


def main(argv: list[str]) -> int:
    try:
        scene = load_scene(argv[0] if argv else None)
    except VkmorphError as exc:
        print(f"embed_example: {exc}", file=sys.stderr)
        return 2
    host = Host(os.environ.get("VKMORPH_VALIDATION", "0") == "1")

    # ---- vkmorph: wrap your handles (checked: API version, queue family, features), build the runtime ---------
    ctx = Context.from_external(host.instance, host.physical, host.device, host.queue, host.family,
                                api_version=host.api_version, enabled_features=host.features)
    rt = MorphRuntime(ctx, scene, slots=FRAMES_IN_FLIGHT)       # one output slot per frame in flight
    if not rt.instances:
        print("the file draws no mesh: nothing to check")
        rt.destroy()
        ctx.destroy()
        host.destroy()
        return 0
    inst = most_morphed(rt)
    target = inst if inst is not None else rt.instances[0]
    serials = [0] * FRAMES_IN_FLIGHT
    readbacks, expected = [], []

    # ---- your frame loop ------------------------------------------------------------------------------------
    for frame in range(2 * FRAMES_IN_FLIGHT):
        slot = frame % FRAMES_IN_FLIGHT
        vk.vkWaitForFences(host.device, 1, [host.fences[slot]], vk.VK_TRUE, 10**10)   # this slot's last frame
        ctx.completed(serials[slot])                                                  # ... is done: tell vkmorph
        vk.vkResetFences(host.device, 1, [host.fences[slot]])
        weights = None
        if inst is not None:
            weights = np.linspace(0.2, 0.9, inst.target_count) * (1 + frame) / (2 * FRAMES_IN_FLIGHT)
            rt.set_weights(inst.node, weights)
        cb = host.cbs[slot]
        vk.vkResetCommandBuffer(cb, 0)
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
        rt.record(cb, slot=slot)              # uploads + dispatches + compute -> vertex-input barrier
        for d in rt.draws(slot=slot):         # ... inside your render pass you would, per draw:
            _ = (d.vertex_buffer, d.vertex_offset, d.vertex_input, d.index_buffer, d.index_type, d.index_count,
                 d.world, d.joint_palette)    # vkCmdBindVertexBuffers / BindIndexBuffer / push d.world / draw
        if frame >= FRAMES_IN_FLIGHT:         # for this example: copy the morph output back to check it
            readbacks.append(rt.record_readback(cb, target.node, target.prim_index, slot=slot))
            expected.append(weights)
        vk.vkEndCommandBuffer(cb)
        vk.vkQueueSubmit(host.queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cb])],
                         host.fences[slot])
        serials[slot] = ctx.last_serial       # everything vkmorph recorded so far is done once this fence signals

    # ---- check what the GPU produced against an independent numpy morph of the file -------------------------
    vk.vkWaitForFences(host.device, FRAMES_IN_FLIGHT, host.fences, vk.VK_TRUE, 10**10)
    ctx.completed()
    errors = []
    for rb, w in zip(readbacks, expected):
        out = rb.vertices()
        if w is None:
            errors.append(float(np.abs(out["position"] - target.prim.vertices["position"]).max()))
        else:
            p, _, _ = morph_reference(target.prim, w)
            errors.append(float(np.abs(out["position"] - p).max()))
    size = float(np.ptp(target.prim.vertices["position"], axis=0).max()) or 1.0
    what = (f"morph of node {scene.nodes[target.node].name!r} primitive {target.prim_index} "
            f"({target.delta_count} deltas, {target.target_count} targets)" if inst is not None
            else f"rest vertices of node {scene.nodes[target.node].name!r} (the file has no morph targets)")
    stats = rt.memory_stats()
    print(f"checked the {what} in {len(readbacks)} frames in flight; {len(rt.draws())} draws; "
          f"{stats['buffers']} buffers in {stats['allocations']} allocations; "
          f"max error vs numpy reference {max(errors):.2e}")

    # ---- teardown: vkmorph first (only its own objects), then yours -----------------------------------------
    rt.destroy()
    ctx.destroy()
    host.destroy()
    if host.messages:
        print("\n".join(host.messages), file=sys.stderr)
        return 3
    return 0 if max(errors) <= 1e-5 * size else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
