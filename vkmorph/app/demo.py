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
from .cli import external_uris, release_warnings

FRAMES_IN_FLIGHT = 2
HELP = """vkmorph demo keys
  mouse drag / wheel   orbit / zoom the camera
  TAB / shift+TAB      select the next / previous morph target (its mesh is outlined)
  UP / DOWN            raise / lower the selected target's weight (overrides the animation)
  F                    frame the camera on the model as posed now (also done when the clip changes)
  BACKSPACE            drop all weight overrides
  SPACE                pause / resume the animation;  RIGHT  step one frame while paused
  C                    cycle the animation (the built-in sine animation, then the file's clips) and frame it
  J / N                toggle the bone-weight heat map / select the next joint
  L                    swing the light around
  P                    print the current weights;  H  this help;  ESC  quit
  U                    show / hide the on-screen panel (sliders, clips, timeline, heat-map joint)"""


def headless_requested(args) -> bool:
    """--headless, or no display to open a window on."""
    return bool(args.headless or not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")))


WINDOW_SIZE = {"gpu": (960, 640), "cpu": (800, 500)}
MSAA = {"gpu": 4, "cpu": 1}            # a CPU device (lavapipe) shades every sample: 4x costs ~2x the frame
SHADOW_SIZE = {"gpu": 1024, "cpu": 512}
# the 3D view's resolution as a fraction of the window's (the panel is always drawn at full resolution)
SCALE = {"gpu": 1.0, "cpu": 0.75}   # lavapipe at 800x500: ~1.6x the FPS of 1.0 (bench/2026-12-01-lavapipe-startup.md)
LEGEND_LINE = "red: blend shapes only, blue: skinning only, purple: blend shapes + skinning"


def msaa_samples(ctx, wanted: int) -> int:
    """``wanted`` where the device's attachments support it, else 1 (the renderer's own rule)."""
    from ..gpu.image import msaa_samples as supported

    return supported(ctx, wanted)


def quality(args, device_type: str) -> dict:
    """Window size, MSAA samples and shadow-map size: what the flags say, else what suits the device (a CPU
    device such as lavapipe gets fewer pixels and samples, so the demo stays interactive there)."""
    kind = "cpu" if device_type == "cpu" else "gpu"
    size = parse_window_size(args.size) if getattr(args, "size", None) else WINDOW_SIZE[kind]
    return {"size": size, "samples": getattr(args, "msaa", None) or MSAA[kind],
            "shadow_size": getattr(args, "shadow_size", None) or SHADOW_SIZE[kind],
            "scale": getattr(args, "scale", None) or SCALE[kind], "kind": kind}


def render_size(size: tuple[int, int], scale: float) -> tuple[int, int]:
    """The 3D view's pixels for a window of ``size`` at render scale ``scale`` (at least 16x16)."""
    return max(16, round(size[0] * scale)), max(16, round(size[1] * scale))


def parse_window_size(text: str) -> tuple[int, int]:
    from ..render.offscreen import parse_size

    w, h = parse_size(text)
    if w < 64 or h < 64:
        raise UsageError(f"--size {w}x{h}: the window must be at least 64x64")
    return w, h


def check_demo_args(scene, args) -> None:
    """Everything the flags say, checked against the file before a window or a device exists."""
    from .pose_args import check_msaa

    if args.frames < 0:
        raise UsageError("--frames must be >= 0")
    check_msaa(getattr(args, "msaa", None))
    if getattr(args, "size", None):
        parse_window_size(args.size)
    shadow = getattr(args, "shadow_size", None)
    if shadow is not None and not 64 <= shadow <= 8192:
        raise UsageError(f"--shadow-size must be within 64..8192, got {shadow}")
    scale = getattr(args, "scale", None)
    if scale is not None and not 0.25 <= scale <= 1.0:
        raise UsageError(f"--scale must be within 0.25..1 (the 3D view's share of the window's size), got {scale}")
    if getattr(args, "clip", None) is not None:
        scene.clip(args.clip)          # an unknown clip lists the file's
    crowd = getattr(args, "crowd", None)
    if crowd is not None:
        from .crowd_driver import MAX_CROWD

        if not 1 <= crowd <= MAX_CROWD:
            raise UsageError(f"--crowd must be within 1..{MAX_CROWD}, got {crowd}")


def start_clip(driver, scene, args) -> None:
    """``--clip``: start the driver on that clip (by name or index)."""
    if getattr(args, "clip", None) is not None:
        driver.mode = driver.modes.index(scene.clip(args.clip).name)
        driver.time = 0.0
        driver.apply()


def run_demo(args) -> int:
    scene = load_scene(args.file, allow_external_uris=external_uris(args))
    check_demo_args(scene, args)
    release_warnings()   # the file loaded and the flags fit it: its warnings now, not when the window closes
    if args.file is None:
        print(f"vkmorph demo: {LEGEND_LINE}", flush=True)
    if headless_requested(args):
        if not args.headless:
            print("vkmorph demo: no display (DISPLAY / WAYLAND_DISPLAY unset); rendering headless to PNG instead",
                  file=sys.stderr)
        return run_headless(scene, args)
    return DemoWindow(scene, args, default_scene=args.file is None).run()


class HeadlessFrames:
    """The demo's frame loop without a window: the scene driver and the renderer at the given quality, drawing
    into an offscreen image. ``step(dt)`` is one frame (animation, host-side updates, morph + shadow + forward
    passes, submitted and waited for), as the window's loop does it minus the present; ``readback=True`` also
    copies the image to the host and returns its pixels. ``vkmorph demo --headless`` and the benchmark's
    start-up section (``app/startup_bench.py``) run it."""

    def __init__(self, ctx, scene, *, size: tuple[int, int], samples: int, shadow_size: int, sine: bool,
                 scale: float = 1.0, clip_args=None, crowd: int | None = None, crowd_anim: str = "gpu",
                 crowd_lod: str = "off"):
        from ..render.offscreen import OffscreenRenderer

        # headless there is no window to upscale into: the image is the 3D view's own size
        self.ctx, self.size = ctx, render_size(size, scale)
        self.render_size = self.size
        self.off = OffscreenRenderer(ctx, scene, *self.size, samples=msaa_samples(ctx, samples),
                                     shadow_size=shadow_size,
                                     **crowd_options(crowd, scene, sine=sine, animation=crowd_anim, lod=crowd_lod))
        try:
            r = self.renderer = self.off.renderer
            self.driver = make_driver(scene, r, sine=sine)
            if clip_args is not None:
                start_clip(self.driver, scene, clip_args)
            r.frame_camera()   # camera and ground fitted to the pose the driver shows at t = 0
        except BaseException:
            self.off.destroy()
            raise
        self.counters = None

    def step(self, dt: float, *, readback: bool = False):
        self.driver.advance(dt)
        if readback:
            pixels = self.off.render()
            self.counters = self.off.last_counters
            return pixels
        r, (w, h) = self.renderer, self.size
        r.update(0, w / h, w, h)

        def record(cb):
            self.counters = r.record(cb, 0, self.off.targets.framebuffers[0], w, h)

        self.ctx.submit_and_wait(record)
        return None

    def destroy(self) -> None:
        self.ctx.wait_idle()   # the driver idle before its objects go (app/soak.py says why)
        self.off.destroy()


def run_headless(scene, args) -> int:
    from ..gpu.context import Context
    from ..render.offscreen import write_png_atomic

    frames = args.frames or 4
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ctx = Context.create(echo_messages=True)
    try:
        q = quality(args, ctx.info.device_type)
        size = parse_window_size(args.size) if getattr(args, "size", None) else (640, 480)
        # the PNGs are the 3D view itself: scale 1 unless --scale asks (no window to upscale into)
        loop = HeadlessFrames(ctx, scene, size=size, samples=q["samples"], shadow_size=q["shadow_size"],
                              sine=args.file is None, scale=getattr(args, "scale", None) or 1.0, clip_args=args,
                              crowd=getattr(args, "crowd", None),
                              crowd_anim=getattr(args, "crowd_anim", "gpu"),
                              crowd_lod=getattr(args, "crowd_lod", "off"))
        print_warnings(loop.renderer)
        last = None
        for f in range(frames):
            last = loop.step(0.25 if f else 0.0, readback=True)
            c = loop.counters
            path = out_dir / f"frame_{f:03d}.png"
            write_png_atomic(path, last)
            print(f"frame {f}: t={loop.driver.time:.2f}s dispatched {c.dispatched} skipped {c.skipped} -> {path}")
            for line in crowd_lines(loop.renderer):
                print(f"  {line}")
        if args.screenshot and last is not None:
            write_png_atomic(args.screenshot, last)
            print(f"screenshot: {args.screenshot}")
        loop.destroy()
    finally:
        ctx.destroy()
    return 3 if ctx.errors_and_warnings() else 0


def crowd_options(crowd: int | None, scene=None, *, sine: bool = False, animation: str = "gpu",
                  lod: str = "off") -> dict:
    """SceneRenderer options of ``--crowd N`` (none without it): N instances, per-pass GPU timestamps, levels of
    detail (``--crowd-lod``: "off", "on" or a forced level number), and with
    a ``scene`` and ``animation="gpu"`` (``--crowd-anim``, default gpu) the GPU animation over its clips (with
    ``sine``, the built-in scene's sine drivers baked into a clip first: app/crowd_driver.sine_clip)."""
    if crowd is None:
        return {}
    opts = {"instances": crowd, "pass_timing": True}
    if lod not in (None, "off"):
        opts["lod"] = int(lod) if str(lod).isdigit() else lod
    from ..gpu.interface import CROWD_ANIM_MAX_NODES

    gpu = scene is not None and animation == "gpu"
    if gpu and len(scene.nodes) > CROWD_ANIM_MAX_NODES:
        print(f"vkmorph demo: the crowd is animated on the CPU: {len(scene.nodes)} nodes, the GPU animation "
              f"handles up to {CROWD_ANIM_MAX_NODES}", file=sys.stderr, flush=True)
        gpu = False
    if gpu:
        clips = list(scene.animations)
        if sine:
            from ..morph.state import SceneMorphPose
            from .crowd_driver import sine_clip

            pose = SceneMorphPose(scene)
            clips.insert(0, sine_clip(scene, pose.morph_nodes,
                                      [pose.slice_of(n).stop - pose.slice_of(n).start for n in pose.morph_nodes]))
        opts.update(animation="gpu", animation_clips=clips)
    return opts


def make_driver(scene, renderer, *, sine: bool):
    """What moves the scene: ``SceneDriver`` (one instance), or with ``--crowd`` a ``CrowdDriver`` laying the
    instances out on a grid (pitch from one instance's footprint at rest), each at its own phase."""
    from .driver import SceneDriver

    if renderer.crowd_frame is None:
        return SceneDriver(scene, renderer.runtime.pose, renderer.skeleton, sine=sine)
    from .crowd_driver import CrowdDriver

    lo, hi = renderer.scene_bounds()           # every instance still at the origin
    return CrowdDriver(scene, renderer.runtime.crowd, float(max(hi[0] - lo[0], hi[2] - lo[2])),
                       sine=sine, renderer=renderer if renderer.animation is not None else None)


def crowd_stats(renderer, slot: int = 0) -> dict | None:
    """The panel's crowd figures (app/panel.crowd_stat_lines): counts, path per object, GPU ms per pass."""
    cf = renderer.crowd_frame
    if cf is None:
        return None
    out = {"instances": cf.crowd.count, "visible": int(cf.visible.sum()), "paths": cf.describe(renderer.scene),
           "pass_ms": renderer.pass_ms(slot), "animation": "GPU" if cf.animation is not None else "CPU",
           "shadow_visible": int(cf.shadow_visible.sum())}
    if cf.lod is not None:      # instances per LOD level, camera and shadow pass
        out["lod"], out["shadow_lod"] = cf.level_counts("forward"), cf.level_counts("shadow")
    return out


def crowd_lines(renderer) -> list[str]:
    from .panel import crowd_stat_lines

    return crowd_stat_lines(crowd_stats(renderer))


def print_warnings(renderer) -> None:
    """The renderer's warnings (bad material data it renders without), one line each on stderr."""
    for line in renderer.warnings:
        print(f"vkmorph: warning: {line}", file=sys.stderr, flush=True)


class DemoWindow:
    def __init__(self, scene, args, default_scene: bool):
        self.scene, self.args, self.default_scene = scene, args, default_scene
        self.resized = False
        self.dragging = None
        self.selected = -1  # the first TAB selects the first target; UP/DOWN before it act on the first
        self.heat = False
        from .panel import most_influential_joint

        self.heat_joint = most_influential_joint(scene)   # the root joint often moves nothing
        self.light_angle = 0.0
        self.frame_index = 0
        self.shot_taken = False
        self.panel = None
        self.stats: dict = {}
        self._draw_data = None
        self.scale = 1.0

    # ------------------------------------------------------------------ set-up
    def run(self) -> int:
        import glfw

        glfw.ERROR_REPORTING = "ignore"   # GLFW's own message comes back in one line below, not as a warning
        if not glfw.init():
            _, why = glfw.get_error()
            why = why.decode(errors="replace") if isinstance(why, bytes) else str(why or "unknown error")
            where = os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY") or "?"
            raise UsageError(f"cannot open the display {where!r} ({why}); use --headless to render PNG frames "
                             "without a window")
        from .display_guard import DisplayGuard

        self.guard = DisplayGuard(glfw)
        try:
            glfw.window_hint(glfw.CLIENT_API, glfw.NO_API)
            glfw.window_hint(glfw.RESIZABLE, glfw.TRUE)
            w, h = parse_window_size(self.args.size) if getattr(self.args, "size", None) else WINDOW_SIZE["gpu"]
            self.window = glfw.create_window(w, h, "vkmorph", None, None)
            if not self.window:
                raise GpuError("GLFW could not create a window")
            try:
                return self._run_with_window(glfw)
            finally:
                if self.guard.lost is None:
                    glfw.destroy_window(self.window)
        finally:
            if self.guard.lost is None:  # on a dead connection only the process exit can close it
                glfw.terminate()
            else:
                self.guard.release_stderr()
                print(f"vkmorph demo: {self.guard.lost}; GPU resources released", file=sys.stderr)

    def _run_with_window(self, glfw) -> int:
        from ..gpu.context import Context
        from ..gpu.present import WindowPresenter
        from ..gpu.vk import vk
        from ..render.renderer import SceneRenderer

        ctx = Context.create(echo_messages=True, instance_extensions=glfw.get_required_instance_extensions(),
                             device_extensions=["VK_KHR_swapchain"])
        self.ctx = ctx
        self.presenter = self.renderer = None
        try:
            q = self.quality = quality(self.args, ctx.info.device_type)
            if not getattr(self.args, "size", None) and q["size"] != WINDOW_SIZE["gpu"]:
                glfw.set_window_size(self.window, *q["size"])   # the device is known only now
            self.presenter = WindowPresenter(ctx, self.window, vsync=not self.args.no_vsync,
                                             frames_in_flight=FRAMES_IN_FLIGHT)
            # scale 1: the forward pass renders straight into the swapchain images, in their format; below 1 into
            # a smaller image of that format, blitted into the swapchain image (app/scaled_view.py)
            from .scaled_view import ScaledTargets, blit_filter

            self.scale = q["scale"]
            filt = blit_filter(ctx, self.presenter.format) if self.scale < 1 else None
            if self.scale < 1 and filt is None:
                print(f"vkmorph demo: the swapchain format cannot be blitted on this device; render scale 1 instead "
                      f"of {self.scale:g}", flush=True)
                self.scale = 1.0
            final = vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL if self.scale < 1 else vk.VK_IMAGE_LAYOUT_PRESENT_SRC_KHR
            self.renderer = SceneRenderer(ctx, self.scene, self.presenter.format, final,
                                          frames_in_flight=FRAMES_IN_FLIGHT, samples=msaa_samples(ctx, q["samples"]),
                                          shadow_size=q["shadow_size"],
                                          **crowd_options(getattr(self.args, "crowd", None), self.scene,
                                                          sine=self.default_scene,
                                                          animation=getattr(self.args, "crowd_anim", "gpu"),
                                                          lod=getattr(self.args, "crowd_lod", "off")))
            r = self.renderer
            scale_text = f", 3D view at {self.scale:.0%} of the window" if self.scale < 1 else ""
            self.stats["quality"] = (f"MSAA {r.samples}x, shadow {q['shadow_size']}"
                                     + (f", 3D {self.scale:.0%}" if self.scale < 1 else ""))
            print(f"vkmorph demo: {ctx.info.name}: MSAA {r.samples}x, shadow map {q['shadow_size']}{scale_text} "
                  f"(--msaa, --shadow-size, --scale, --size change them)", flush=True)
            self.driver = make_driver(self.scene, self.renderer, sine=self.default_scene)
            start_clip(self.driver, self.scene, self.args)
            print_warnings(self.renderer)
            self._frame_camera_beside_panel()   # camera and ground fitted to the pose shown at t = 0
            self._framed_mode = self.driver.mode
            self.panel = self._make_panel()
            # multisampled colour + depth-stencil per swapchain size, resolved into the swapchain image
            targets = self.renderer.create_targets
            if self.scale < 1:
                def targets(views, w, h):
                    return ScaledTargets(self.renderer, views, w, h, self.scale, filt)
            self.presenter.attach(self.renderer.forward_pass,
                                  self.panel.renderer.render_pass if self.panel is not None else None,
                                  create_targets=targets)
            if self.scale < 1 and not self.presenter.swapchain.can_blit_to:
                raise GpuError("the window's swapchain images cannot be blit destinations here; use --scale 1")
            self._loop(glfw)
        finally:
            try:
                if self.presenter is not None:
                    self.presenter.destroy()
                if self.panel is not None:
                    self.panel.destroy()
            finally:
                if self.renderer is not None:
                    self.renderer.destroy()
                ctx.destroy()
        if ctx.errors_and_warnings():
            print(f"vkmorph demo: {len(ctx.errors_and_warnings())} validation messages", file=sys.stderr)
            return 3
        return 0

    # ------------------------------------------------------------------ input
    def _targets(self):
        """Target names with non-zero deltas, each with every (node, index) it drives (as the panel's sliders)."""
        if getattr(self, "_target_list", None) is None:
            from .panel import panel_targets

            self._target_list = panel_targets(self.scene, self.renderer.runtime.pose.morph_nodes)
        return self._target_list

    def _joint_name(self) -> str:
        skin = self.scene.skins[0] if self.scene.skins else None
        if skin is None or not len(skin.joints):
            return str(self.heat_joint)
        return self.scene.nodes[skin.joints[self.heat_joint % len(skin.joints)]].name

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
            step = -1 if mods & glfw.MOD_SHIFT else 1
            self.selected = (max(self.selected, -1 if step > 0 else 0) + step) % len(targets)
            tgt = targets[self.selected]
            self.renderer.selected = tgt.slots[0][0]   # the renderer outlines one node: the target's first
            print(f"selected target {tgt.name!r} ({len(tgt.slots)} nodes; outlined: "
                  f"{self.scene.nodes[tgt.slots[0][0]].name})", flush=True)
        elif key in (glfw.KEY_UP, glfw.KEY_DOWN) and targets:
            tgt = targets[max(self.selected, 0) % len(targets)]
            node, t = tgt.slots[0]
            cur = float(self.renderer.runtime.pose.weights(node)[t])
            for node, t in tgt.slots:
                v = self.driver.set_override(node, t, cur + (0.1 if key == glfw.KEY_UP else -0.1))
            print(f"weight {tgt.name!r} = {v:.2f}", flush=True)
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
            print(f"animation: {self.driver.cycle()}", flush=True)   # framed by _frame_on_clip_change
        elif key == glfw.KEY_F:
            self._frame_camera("F")
        elif key == glfw.KEY_J:
            self.heat = not self.heat
            print(f"heat map {'on' if self.heat else 'off'} (joint {self._joint_name()})", flush=True)
        elif key == glfw.KEY_N:
            self.heat_joint += 1
            joints = max((len(s.joints) for s in self.scene.skins), default=1)
            self.heat_joint %= max(joints, 1)
            print(f"heat map joint {self._joint_name()}", flush=True)
        elif key == glfw.KEY_L:
            self.light_angle += 0.6
            a = self.light_angle
            self.renderer.light_dir = np.array([-0.45 * np.cos(a) - 0.35 * np.sin(a), -1.0,
                                                -0.35 * np.cos(a) + 0.45 * np.sin(a)])
        elif key == glfw.KEY_U and self.panel is not None:
            self.panel.visible = not self.panel.visible
        elif key == glfw.KEY_P:
            pose = self.renderer.runtime.pose
            for node in pose.morph_nodes:
                print(f"{self.scene.nodes[node].name}: {np.round(pose.weights(node), 3).tolist()}", flush=True)

    def _frame_camera_beside_panel(self) -> None:
        """``frame_camera``, with a camera that keeps the model centred in the part of the window the panel
        leaves free (``covers`` is updated every frame from the panel's width)."""
        from .view import BesidePanelCamera

        self.renderer.frame_camera()
        self.renderer.camera = BesidePanelCamera.of(self.renderer.camera)

    def _frame_camera(self, why: str) -> None:
        self._frame_camera_beside_panel()
        self._framed_mode = self.driver.mode
        lo, hi = self.renderer.bounds
        print(f"camera framed ({why}): bounds {np.round(lo, 3).tolist()} .. {np.round(hi, 3).tolist()}", flush=True)

    def _frame_on_clip_change(self) -> None:
        """Auto-frame when the clip changed (C key or the panel's clip list) or the panel's button asked."""
        if self.driver.mode != self._framed_mode:
            self._frame_camera(f"clip {self.driver.mode_name}")
        if self.panel is not None and self.panel.frame_requested:
            self.panel.frame_requested = False
            self._frame_camera("panel")

    def _on_mouse_button(self, window, button, action, mods) -> None:
        import glfw

        if self.panel is not None:
            self.panel.mouse_button(button, action == glfw.PRESS)
            if action == glfw.PRESS and self.panel.wants_mouse:
                return
        if button == glfw.MOUSE_BUTTON_LEFT:
            self.dragging = glfw.get_cursor_pos(window) if action == glfw.PRESS else None

    def _on_cursor(self, window, x, y) -> None:
        if self.panel is not None:
            self.panel.mouse_pos(x, y)
        if self.dragging is not None:
            px, py = self.dragging
            cam = self.renderer.camera
            cam.yaw -= (x - px) * 0.01
            cam.pitch = float(np.clip(cam.pitch + (y - py) * 0.01, -1.4, 1.4))
            self.dragging = (x, y)

    def _on_scroll(self, window, dx, dy) -> None:
        if self.panel is not None:
            self.panel.scroll(dx, dy)
            if self.panel.wants_mouse:
                return
        self.renderer.camera.distance *= 0.9 ** dy

    # ------------------------------------------------------------------ frame loop
    def _make_panel(self):
        """The on-screen panel, unless --no-panel or imgui-bundle is not installed (then keys only)."""
        if self.args.no_panel:
            return None
        try:
            import imgui_bundle  # noqa: F401
        except ImportError:
            print("vkmorph demo: no on-screen panel (pip install imgui-bundle); keys still work", flush=True)
            return None
        from .panel import DemoPanel

        return DemoPanel(self.scene, self.driver, self.renderer.runtime.pose, self.ctx, self.presenter.format,
                         FRAMES_IN_FLIGHT, legend=self.default_scene)

    def _loop(self, glfw) -> None:
        glfw.set_key_callback(self.window, self._on_key)
        glfw.set_mouse_button_callback(self.window, self._on_mouse_button)
        glfw.set_cursor_pos_callback(self.window, self._on_cursor)
        glfw.set_scroll_callback(self.window, self._on_scroll)
        glfw.set_framebuffer_size_callback(self.window, lambda w, x, y: setattr(self.presenter, "resized", True))
        print("vkmorph demo: press H for keys", flush=True)

        last_t = time.perf_counter()
        self._panel_t = last_t
        title_t, title_frames = last_t, 0
        gpu_ms = (0.0, 0.0)
        frames = self.args.frames
        while self.guard.check() and not glfw.window_should_close(self.window):
            glfw.poll_events()
            if self.guard.lost is None:
                w, h = glfw.get_framebuffer_size(self.window)
            if self.guard.lost is not None:
                self.guard.hold_stderr()
                break
            if w == 0 or h == 0:  # minimized: nothing to draw into
                glfw.wait_events()
                continue
            now = time.perf_counter()
            self.driver.advance(now - last_t)
            last_t = now
            if self.panel is not None:
                heat = {"on": self.heat, "joint": self.heat_joint}
                self._draw_data = self.panel.build(glfw.get_window_size(self.window), (w, h), now - self._panel_t,
                                                   self.stats, heat)
                self._panel_t = now
                self.heat, self.heat_joint = heat["on"], heat["joint"]
                ww = glfw.get_window_size(self.window)[0] if self.guard.lost is None else 0
                self.renderer.camera.covered = (self.panel.covers / ww if self.panel.visible and ww > 0 else 0.0)
            self._frame_on_clip_change()
            self.renderer.heat_joint = self.heat_joint if self.heat else -1
            shot = bool(self.args.screenshot) and frames and self.frame_index == frames - 1
            try:
                result = self._frame(shot)
            except GpuError:
                if self.guard.lost is None:
                    raise
                self.guard.hold_stderr()
                break
            except Exception as exc:  # the surface died with the window (VK_ERROR_SURFACE_LOST_KHR, ...)
                if self.guard.lost is None and "Surface" not in type(exc).__name__:
                    raise
                self.guard.lost = self.guard.lost or "the window's surface was lost"
                self.guard.hold_stderr()
                break
            if self.guard.lost is not None:  # lost during the frame: no further GLFW/Xlib call
                self.guard.hold_stderr()
                break
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
            self.stats.update(morph_ms=gpu_ms[0], frame_ms=gpu_ms[1], dispatched=counters.dispatched,
                              skipped=counters.skipped,
                              selected=self._targets()[self.selected].name if self.selected >= 0 else None)
            if now - title_t >= 0.5:
                fps = title_frames / (now - title_t)
                self.stats["fps"] = fps
                if not self.guard.check():
                    self.guard.hold_stderr()
                    break
                glfw.set_window_title(self.window, f"vkmorph | {fps:.0f} FPS | morph {gpu_ms[0]:.3f} ms | frame "
                                      f"{gpu_ms[1]:.2f} ms GPU | dispatched {counters.dispatched} skipped "
                                      f"{counters.skipped} | {self.driver.mode_name}")
                title_t, title_frames = now, 0
            if frames and self.frame_index >= frames:
                break
        if self.guard.lost is not None:
            self.guard.hold_stderr()
        if self.args.screenshot and not self.shot_taken and self.guard.lost is None:  # closed by the user
            self._frame(True)

    def _frame(self, screenshot: bool):
        """One frame: the presenter's slot and image, the renderer's passes, a timestamp after the morph pass."""
        from ..gpu.timestamps import COMPUTE

        pr, r = self.presenter, self.renderer
        frame = pr.begin_frame()
        if frame is None:
            return None
        if r.crowd_frame is not None:    # the slot's fence was waited for: its last frame's pass times are in
            self.stats["crowd"] = crowd_stats(r, frame.slot)
        scaled = pr.targets if self.scale < 1 else None   # a ScaledTargets: the 3D view's own size, then a blit
        w, h = (scaled.width, scaled.height) if scaled is not None else (frame.width, frame.height)
        r.update(frame.slot, frame.width / frame.height, w, h)
        counters = r.record(frame.cb, frame.slot, frame.framebuffer, w, h,
                            after_morph=lambda c: pr.timestamps.write(c, 1, frame.slot, COMPUTE))
        if scaled is not None:
            scaled.blit(frame.cb, frame.image, pr.swapchain.images[frame.image])
        if self.panel is not None and self._draw_data is not None:
            self.panel.record(frame.cb, frame.slot, frame.overlay_framebuffer, frame.width, frame.height,
                              self._draw_data)
        pixels = pr.end_frame(frame, screenshot=screenshot)
        if pixels is not None:
            from ..render.offscreen import write_png_atomic

            write_png_atomic(self.args.screenshot, pixels)
            print(f"screenshot: {self.args.screenshot}", flush=True)
            self.shot_taken = True
        return counters, (tuple(frame.gpu_ms) if frame.gpu_ms else None)
