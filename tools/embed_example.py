#!/usr/bin/env python3
"""Embedding vkmorph in your own Vulkan renderer: your instance, device, queue and command buffer.

vkmorph wraps your handles (owning none of them), builds the morph runtime for a scene, and records its
version-gated work into *your* command buffer; you submit and wait as usual, then bind
``rt.vertex_buffer(node)`` at ``rt.vertex_buffer_offset(node)`` with ``rt.vertex_input(node)`` in your own
graphics pipeline.

    python tools/embed_example.py [MODEL]     # default: the built-in scene; VKMORPH_VALIDATION=1 to validate
"""

from __future__ import annotations

import sys

import numpy as np
import vulkan as vk

from vkmorph import load_scene
from vkmorph.gpu.context import Context
from vkmorph.morph.reference import morph_reference
from vkmorph.render.morph_pass import MorphRuntime


def main(argv: list[str]) -> int:
    import os

    validate = os.environ.get("VKMORPH_VALIDATION", "0") == "1"
    # ---- your renderer's own set-up (plain python-vulkan) --------------------------------------------
    layers = ["VK_LAYER_KHRONOS_validation"] if validate else []
    app = vk.VkApplicationInfo(pApplicationName="my-renderer", apiVersion=vk.VK_MAKE_VERSION(1, 2, 0))
    instance = vk.vkCreateInstance(vk.VkInstanceCreateInfo(
        pApplicationInfo=app, enabledLayerCount=len(layers), ppEnabledLayerNames=layers), None)
    physical = vk.vkEnumeratePhysicalDevices(instance)[0]
    family = next(i for i, q in enumerate(vk.vkGetPhysicalDeviceQueueFamilyProperties(physical))
                  if q.queueFlags & vk.VK_QUEUE_GRAPHICS_BIT and q.queueFlags & vk.VK_QUEUE_COMPUTE_BIT)
    qci = vk.VkDeviceQueueCreateInfo(queueFamilyIndex=family, queueCount=1, pQueuePriorities=[1.0])
    device = vk.vkCreateDevice(physical, vk.VkDeviceCreateInfo(queueCreateInfoCount=1, pQueueCreateInfos=[qci]),
                               None)
    queue = vk.vkGetDeviceQueue(device, family, 0)
    pool = vk.vkCreateCommandPool(device, vk.VkCommandPoolCreateInfo(queueFamilyIndex=family), None)
    cb = vk.vkAllocateCommandBuffers(device, vk.VkCommandBufferAllocateInfo(
        commandPool=pool, level=vk.VK_COMMAND_BUFFER_LEVEL_PRIMARY, commandBufferCount=1))[0]
    fence = vk.vkCreateFence(device, vk.VkFenceCreateInfo(), None)

    # ---- vkmorph ------------------------------------------------------------------------------------
    scene = load_scene(argv[0] if argv else None)
    ctx = Context.from_external(instance, physical, device, queue, family)
    rt = MorphRuntime(ctx, scene)
    node = rt.pose.morph_nodes[0]
    weights = np.linspace(0.2, 0.9, len(rt.pose.weights(node)))
    rt.set_weights(node, weights)

    # ---- your frame ---------------------------------------------------------------------------------
    vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo())
    counters = rt.record(cb)          # weight upload + dispatch + the compute->vertex barrier
    # ... your render pass would bind rt.vertex_buffer(node) at rt.vertex_buffer_offset(node) and
    #     rt.index_buffer(node) with rt.vertex_input(node) as the vertex layout, and draw here ...
    vk.vkEndCommandBuffer(cb)
    vk.vkQueueSubmit(queue, 1, [vk.VkSubmitInfo(commandBufferCount=1, pCommandBuffers=[cb])], fence)
    vk.vkWaitForFences(device, 1, [fence], vk.VK_TRUE, 10**10)

    inst = rt.instance(node)
    out = rt.read_vertices(inst)
    p, _, _ = morph_reference(inst.prim, weights)
    print(f"node {scene.nodes[node].name!r}: dispatched {counters.dispatched}, uploaded "
          f"{counters.bytes_uploaded} B; vertex input stride {rt.vertex_input(node).stride} B; "
          f"max error vs numpy reference {np.abs(out['position'] - p).max():.2e}")

    # ---- teardown: vkmorph first (it destroys only its own objects), then yours --------------------
    rt.destroy()
    ctx.destroy()
    vk.vkDestroyFence(device, fence, None)
    vk.vkDestroyCommandPool(device, pool, None)
    vk.vkDestroyDevice(device, None)
    vk.vkDestroyInstance(instance, None)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
