"""``vkmorph demo [FILE]``: the GLFW window (no client API), Vulkan swapchain, two frames in flight.

Without a display (no DISPLAY / WAYLAND_DISPLAY, or ``--headless``) it says so and renders frames headless to
PNG files instead, so the README's demo command does something useful on a server.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import numpy as np

from ..asset.importer import load_scene
from ..errors import GpuError, UsageError

FRAMES_IN_FLIGHT = 2
HELP = """vkmorph demo keys
  mouse drag / wheel   orbit / zoom the camera
  TAB / shift+TAB      select the next / previous morph target
  UP / DOWN            raise / lower the selected target's weight (overrides the animation)
  BACKSPACE            drop all weight overrides
  SPACE                pause / resume the animation;  RIGHT  step one frame while paused
  C                    cycle the animation (sine drivers, then the file's clips)
  J / N                toggle the bone-weight heat map / select the next joint
  L                    swing the light around
  P                    print the current weights;  H  this help;  ESC  quit"""


def run_demo(args) -> int:
    scene = load_scene(args.file)
    if args.frames < 0:
        raise UsageError("--frames must be >= 0")
    if args.screenshot and not str(args.screenshot).lower().endswith(".png"):
        raise UsageError("--screenshot must be a .png path")
    has_display = bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))
    if args.headless or not has_display:
        if not args.headless:
            print("vkmorph demo: no display (DISPLAY / WAYLAND_DISPLAY unset); rendering headless to PNG instead",
                  file=sys.stderr)
        return run_headless(scene, args)
    return DemoWindow(scene, args, default_scene=args.file is None).run()


def run_headless(scene, args) -> int:
    from ..gpu.context import Context
    from ..render.offscreen import OffscreenRenderer, write_png_atomic
    from .driver import SceneDriver

    frames = args.frames or 4
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = Context.create(echo_messages=True)
    try:
        off = OffscreenRenderer(ctx, scene, 640, 480)
        r = off.renderer
        driver = SceneDriver(scene, r.runtime.pose, r.skeleton, sine=args.file is None)
        last = None
        for f in range(frames):
            driver.advance(0.25 if f else 0.0)
            last = off.render()
            c = off.last_counters
            path = out_dir / f"frame_{f:03d}.png"
            write_png_atomic(path, last)
            print(f"frame {f}: t={driver.time:.2f}s dispatched {c.dispatched} skipped {c.skipped} -> {path}")
        if args.screenshot and last is not None:
            write_png_atomic(args.screenshot, last)
            print(f"screenshot: {args.screenshot}")
        off.destroy()
    finally:
        ctx.destroy()
    return 3 if ctx.errors_and_warnings() else 0


class DemoWindow:
    def __init__(self, scene, args, default_scene: bool):
        self.scene, self.args, self.default_scene = scene, args, default_scene
        self.resized = False
        self.dragging = None
        self.selected = 0
        self.heat = False
        self.heat_joint = 0
        self.light_angle = 0.0
        self.frame_index = 0
        self.shot_taken = False

    # ------------------------------------------------------------------ set-up
    def run(self) -> int:
        import glfw

        if not glfw.init():
            raise GpuError("GLFW could not initialise the display (is DISPLAY valid?)")
        try:
            glfw.window_hint(glfw.CLIENT_API, glfw.NO_API)
            glfw.window_hint(glfw.RESIZABLE, glfw.TRUE)
            self.window = glfw.create_window(960, 640, "vkmorph", None, None)
            if not self.window:
                raise GpuError("GLFW could not create a window")
            try:
                return self._run_with_window(glfw)
            finally:
                glfw.destroy_window(self.window)
        finally:
            glfw.terminate()

    def _run_with_window(self, glfw) -> int:
        from ..gpu.context import Context
        from ..gpu.swapchain import SurfaceFunctions, create_surface

        ctx = Context.create(echo_messages=True, instance_extensions=glfw.get_required_instance_extensions(),
                             device_extensions=["VK_KHR_swapchain"])
        self.ctx = ctx
        surface = None
        try:
            self.fns = SurfaceFunctions(ctx)
            surface = create_surface(ctx, self.window)
            self.surface = surface
            self._loop(glfw)
        finally:
            ctx.wait_idle()
            self._teardown()
            if surface is not None:
                self.fns.destroy_surface(ctx.instance, surface, None)
            ctx.destroy()
        if ctx.errors_and_warnings():
            print(f"vkmorph demo: {len(ctx.errors_and_warnings())} validation messages", file=sys.stderr)
            return 3
        return 0

    def _create_swapchain(self, glfw, old=None) -> None:
        from ..gpu import graphics as G
        from ..gpu.swapchain import Swapchain
        from ..gpu.vk import vk

        w, h = glfw.get_framebuffer_size(self.window)
        sc = Swapchain(self.ctx, self.fns, self.surface, w, h, vsync=not self.args.no_vsync, old=old)
        if old is not None:
            self._destroy_swapchain_objects()
            old.destroy()
        self.swapchain = sc
        self.sc_group = G.ObjectGroup(self.ctx, "swapchain semaphores")
        # multisampled colour + depth-stencil and one framebuffer per swapchain image (the renderer's targets)
        self.targets = self.renderer.create_targets(sc.views, sc.width, sc.height)
        self.framebuffers = self.targets.framebuffers
        self.render_done = [self.sc_group.add(vk.vkDestroySemaphore,
                                              vk.vkCreateSemaphore(self.ctx.device, vk.VkSemaphoreCreateInfo(), None))
                            for _ in sc.images]

    def _destroy_swapchain_objects(self) -> None:
        self.sc_group.destroy()
        self.targets.destroy()

    def _teardown(self) -> None:
        from ..gpu.vk import vk

        if getattr(self, "swapchain", None) is not None:
            self._destroy_swapchain_objects()
            self.swapchain.destroy()
        for name in ("frame_group",):
            g = getattr(self, name, None)
            if g is not None:
                g.destroy()
        if getattr(self, "query_pools", None):
            for qp in self.query_pools:
                vk.vkDestroyQueryPool(self.ctx.device, qp, None)
        if getattr(self, "renderer", None) is not None:
            self.renderer.destroy()

    # ------------------------------------------------------------------ input
    def _targets(self) -> list[tuple[int, int, str]]:
        out = []
        for node in self.renderer.runtime.pose.morph_nodes:
            mesh = self.scene.meshes[self.scene.nodes[node].mesh]
            names = next((p.target_names for p in mesh.primitives if p.morph_targets), [])
            out += [(node, i, n) for i, n in enumerate(names)]
        return out

    def _on_key(self, window, key, scancode, action, mods) -> None:
        import glfw

        if action not in (glfw.PRESS, glfw.REPEAT):
            return
        targets = self._targets()
        if key == glfw.KEY_ESCAPE:
            glfw.set_window_should_close(window, True)
        elif key == glfw.KEY_H:
            print(HELP, flush=True)
        elif key == glfw.KEY_TAB and targets:
            self.selected = (self.selected + (-1 if mods & glfw.MOD_SHIFT else 1)) % len(targets)
            node, t, name = targets[self.selected]
            print(f"selected target {name!r} of node {self.scene.nodes[node].name!r}", flush=True)
        elif key in (glfw.KEY_UP, glfw.KEY_DOWN) and targets:
            node, t, name = targets[self.selected % len(targets)]
            cur = float(self.renderer.runtime.pose.weights(node)[t])
            v = self.driver.set_override(node, t, cur + (0.1 if key == glfw.KEY_UP else -0.1))
            print(f"weight {name!r} = {v:.2f}", flush=True)
        elif key == glfw.KEY_BACKSPACE:
            self.driver.overrides.clear()
            print("weight overrides cleared", flush=True)
        elif key == glfw.KEY_SPACE:
            self.driver.paused = not self.driver.paused
            print("paused" if self.driver.paused else "playing", flush=True)
        elif key == glfw.KEY_RIGHT and self.driver.paused:
            self.driver.step()
            print(f"step to t={self.driver.time:.3f}s", flush=True)
        elif key == glfw.KEY_C:
            print(f"animation: {self.driver.cycle()}", flush=True)
        elif key == glfw.KEY_J:
            self.heat = not self.heat
            print(f"heat map {'on' if self.heat else 'off'} (joint {self.heat_joint})", flush=True)
        elif key == glfw.KEY_N:
            self.heat_joint += 1
            joints = max((len(s.joints) for s in self.scene.skins), default=1)
            self.heat_joint %= max(joints, 1)
            print(f"heat map joint {self.heat_joint}", flush=True)
        elif key == glfw.KEY_L:
            self.light_angle += 0.6
            a = self.light_angle
            self.renderer.light_dir = np.array([-0.45 * np.cos(a) - 0.35 * np.sin(a), -1.0,
                                                -0.35 * np.cos(a) + 0.45 * np.sin(a)])
        elif key == glfw.KEY_P:
            pose = self.renderer.runtime.pose
            for node in pose.morph_nodes:
                print(f"{self.scene.nodes[node].name}: {np.round(pose.weights(node), 3).tolist()}", flush=True)

    def _on_mouse_button(self, window, button, action, mods) -> None:
        import glfw

        if button == glfw.MOUSE_BUTTON_LEFT:
            self.dragging = glfw.get_cursor_pos(window) if action == glfw.PRESS else None

    def _on_cursor(self, window, x, y) -> None:
        if self.dragging is not None:
            px, py = self.dragging
            cam = self.renderer.camera
            cam.yaw -= (x - px) * 0.01
            cam.pitch = float(np.clip(cam.pitch + (y - py) * 0.01, -1.4, 1.4))
            self.dragging = (x, y)

    def _on_scroll(self, window, dx, dy) -> None:
        self.renderer.camera.distance *= 0.9 ** dy

    # ------------------------------------------------------------------ frame loop
    def _loop(self, glfw) -> None:
        from ..gpu import graphics as G
        from ..gpu.vk import vk
        from ..render.renderer import SceneRenderer
        from .driver import SceneDriver

        ctx = self.ctx
        # The renderer's forward pass must match the swapchain format: ask the surface first.
        from ..gpu.swapchain import choose_format

        fmt, _ = choose_format(self.fns.formats(ctx.physical_device, self.surface))
        self.renderer = SceneRenderer(ctx, self.scene, fmt, vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
                                      frames_in_flight=FRAMES_IN_FLIGHT)
        self.driver = SceneDriver(self.scene, self.renderer.runtime.pose, self.renderer.skeleton,
                                  sine=self.default_scene)
        self._create_swapchain(glfw)
        self.frame_group = G.ObjectGroup(ctx, "demo frame sync")
        self.cbs = [ctx.allocate_command_buffer() for _ in range(FRAMES_IN_FLIGHT)]
        self.frame_group.add(lambda d, h, a: vk.vkFreeCommandBuffers(d, ctx.command_pool, len(h), h), self.cbs)
        self.fences = [self.frame_group.add(vk.vkDestroyFence, vk.vkCreateFence(
            ctx.device, vk.VkFenceCreateInfo(flags=vk.VK_FENCE_CREATE_SIGNALED_BIT), None))
            for _ in range(FRAMES_IN_FLIGHT)]
        self.acquired = [self.frame_group.add(vk.vkDestroySemaphore, vk.vkCreateSemaphore(
            ctx.device, vk.VkSemaphoreCreateInfo(), None)) for _ in range(FRAMES_IN_FLIGHT)]
        self.timestamps = bool(ctx.info.timestamp_valid)
        self.query_pools = [vk.vkCreateQueryPool(ctx.device, vk.VkQueryPoolCreateInfo(
            queryType=vk.VK_QUERY_TYPE_TIMESTAMP, queryCount=3), None) for _ in range(FRAMES_IN_FLIGHT)]
        self.query_used = [False] * FRAMES_IN_FLIGHT
        glfw.set_key_callback(self.window, self._on_key)
        glfw.set_mouse_button_callback(self.window, self._on_mouse_button)
        glfw.set_cursor_pos_callback(self.window, self._on_cursor)
        glfw.set_scroll_callback(self.window, self._on_scroll)
        glfw.set_framebuffer_size_callback(self.window, lambda w, x, y: setattr(self, "resized", True))
        print("vkmorph demo: press H for keys", flush=True)

        last_t = time.perf_counter()
        title_t, title_frames = last_t, 0
        gpu_ms = (0.0, 0.0)
        frames = self.args.frames
        while not glfw.window_should_close(self.window):
            glfw.poll_events()
            w, h = glfw.get_framebuffer_size(self.window)
            if w == 0 or h == 0:  # minimized: nothing to draw into
                glfw.wait_events()
                continue
            now = time.perf_counter()
            self.driver.advance(now - last_t)
            last_t = now
            self.renderer.heat_joint = self.heat_joint if self.heat else -1
            shot = bool(self.args.screenshot) and frames and self.frame_index == frames - 1
            result = self._frame(glfw, self.frame_index % FRAMES_IN_FLIGHT, shot)
            if result is None:
                continue
            counters, gpu = result
            if gpu is not None:
                gpu_ms = gpu
            if self.args.log_frames:
                print(f"frame {self.frame_index}: dispatched {counters.dispatched} skipped {counters.skipped} "
                      f"uploaded {counters.bytes_uploaded}", flush=True)
            self.frame_index += 1
            title_frames += 1
            if now - title_t >= 0.5:
                fps = title_frames / (now - title_t)
                glfw.set_window_title(self.window, f"vkmorph | {fps:.0f} FPS | morph {gpu_ms[0]:.3f} ms | frame "
                                      f"{gpu_ms[1]:.2f} ms GPU | dispatched {counters.dispatched} skipped "
                                      f"{counters.skipped} | {self.driver.mode_name}")
                title_t, title_frames = now, 0
            if frames and self.frame_index >= frames:
                break
        if self.args.screenshot and not self.shot_taken:  # closed by the user: capture one more frame
            self._frame(glfw, self.frame_index % FRAMES_IN_FLIGHT, True)

    def _frame(self, glfw, slot: int, screenshot: bool):
        from ..gpu import barriers
        from ..gpu import memory as M
        from ..gpu.vk import ffi, vk

        ctx = self.ctx
        ctx_fence = self.fences[slot]
        vk.vkWaitForFences(ctx.device, 1, [ctx_fence], vk.VK_TRUE, 10**10)
        gpu = None
        if self.query_used[slot] and self.timestamps:
            data = np.zeros(3, np.uint64)
            vk.vkGetQueryPoolResults(ctx.device, self.query_pools[slot], 0, 3, 24, ffi.from_buffer(data), 8,
                                     vk.VK_QUERY_RESULT_64_BIT | vk.VK_QUERY_RESULT_WAIT_BIT)
            p = ctx.info.timestamp_period_ns * 1e-6
            gpu = (float(data[1] - data[0]) * p, float(data[2] - data[0]) * p)
        if self.resized:
            self.resized = False
            ctx.wait_idle()
            self._create_swapchain(glfw, old=self.swapchain)
        index, optimal = self.swapchain.acquire(self.acquired[slot])
        if index is None:
            ctx.wait_idle()
            self._create_swapchain(glfw, old=self.swapchain)
            return None
        vk.vkResetFences(ctx.device, 1, [ctx_fence])
        sc = self.swapchain
        r = self.renderer
        r.update(slot, sc.width / sc.height, sc.width, sc.height)
        cb = self.cbs[slot]
        qp = self.query_pools[slot]
        vk.vkResetCommandBuffer(cb, 0)
        vk.vkBeginCommandBuffer(cb, vk.VkCommandBufferBeginInfo(flags=vk.VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT))
        vk.vkCmdResetQueryPool(cb, qp, 0, 3)
        vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0)
        counters = r.record(cb, slot, self.framebuffers[index], sc.width, sc.height,
                            after_morph=lambda c: vk.vkCmdWriteTimestamp(
                                c, vk.VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, qp, 1))
        staging = None
        if screenshot and sc.can_copy:
            staging = M.host_buffer(ctx, sc.width * sc.height * 4, M.TRANSFER_DST, name="screenshot")
            _record_swapchain_copy(cb, sc.images[index], staging.handle, sc.width, sc.height)
            barriers.transfer_write_to_host_read(cb)
        vk.vkCmdWriteTimestamp(cb, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 2)
        vk.vkEndCommandBuffer(cb)
        ctx.submit([cb], fence=ctx_fence, wait_semaphores=[self.acquired[slot]],
                   wait_stages=[vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT],
                   signal_semaphores=[self.render_done[index]])
        self.query_used[slot] = True
        presented = sc.present(index, self.render_done[index])
        if staging is not None:
            vk.vkWaitForFences(ctx.device, 1, [ctx_fence], vk.VK_TRUE, 10**10)
            self._save_screenshot(staging, sc)
            staging.destroy()
            self.shot_taken = True
        if not presented or not optimal:
            self.resized = True
        return counters, gpu

    def _save_screenshot(self, staging, sc) -> None:
        from ..gpu.vk import vk
        from ..render.offscreen import write_png_atomic

        px = staging.mapped.reshape(sc.height, sc.width, 4).copy()
        if sc.format == vk.VK_FORMAT_B8G8R8A8_SRGB:
            px = px[..., [2, 1, 0, 3]]
        px[..., 3] = 255
        write_png_atomic(self.args.screenshot, px)
        print(f"screenshot: {self.args.screenshot}", flush=True)


def _record_swapchain_copy(cb, image, buffer, width: int, height: int) -> None:
    """present_to_transfer_src, copy, transfer_src_to_present: the image goes back to presentation unchanged."""
    from ..gpu.vk import vk

    rng = vk.VkImageSubresourceRange(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, baseMipLevel=0, levelCount=1,
                                     baseArrayLayer=0, layerCount=1)
    to_src = vk.VkImageMemoryBarrier(srcAccessMask=vk.VK_ACCESS_COLOR_ATTACHMENT_WRITE_BIT,
                                     dstAccessMask=vk.VK_ACCESS_TRANSFER_READ_BIT,
                                     oldLayout=vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
                                     newLayout=vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                                     srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
                                     dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, image=image,
                                     subresourceRange=rng)
    vk.vkCmdPipelineBarrier(cb, vk.VK_PIPELINE_STAGE_COLOR_ATTACHMENT_OUTPUT_BIT, vk.VK_PIPELINE_STAGE_TRANSFER_BIT,
                            0, 0, None, 0, None, 1, [to_src])
    region = vk.VkBufferImageCopy(
        bufferOffset=0, bufferRowLength=0, bufferImageHeight=0,
        imageSubresource=vk.VkImageSubresourceLayers(aspectMask=vk.VK_IMAGE_ASPECT_COLOR_BIT, mipLevel=0,
                                                     baseArrayLayer=0, layerCount=1),
        imageOffset=vk.VkOffset3D(0, 0, 0), imageExtent=vk.VkExtent3D(width, height, 1))
    vk.vkCmdCopyImageToBuffer(cb, image, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, buffer, 1, [region])
    back = vk.VkImageMemoryBarrier(srcAccessMask=0, dstAccessMask=0,
                                   oldLayout=vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL,
                                   newLayout=vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR,
                                   srcQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED,
                                   dstQueueFamilyIndex=vk.VK_QUEUE_FAMILY_IGNORED, image=image, subresourceRange=rng)
    vk.vkCmdPipelineBarrier(cb, vk.VK_PIPELINE_STAGE_TRANSFER_BIT, vk.VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT,
                            0, 0, None, 0, None, 1, [back])
