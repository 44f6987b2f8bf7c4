"""The demo's on-screen panel (Dear ImGui through imgui-bundle, drawn by `vkmorph.app.ui_renderer`).

Weight sliders by target name (one slider drives every node that has that target, e.g. "Surprised" on each part
of a head; targets whose deltas are all zero are not offered), clip selection with pause and a timeline
scrubber (a new clip re-frames the camera; so does the "frame camera" button), the target selected with TAB
(outlined in the view), the heat-map joint by name with its colour legend, FPS and GPU times. Mouse input goes
to the panel when it is over it (``wants_mouse``), else to the camera.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

# The legend's ends as the heat-mapped mesh shows them (sRGB, as ImGui takes colours): forward.frag's base colours
# for weight 0 and 1 (linear 0.05, 0.1, 0.8 and 0.95, 0.15, 0.05) lit by the sun and tone-mapped, the medians of
# the lit pixels of the default scene's heat map (vkmorph render, llvmpipe). Their linear values shown as sRGB
# were a darker pure blue and red that matched nothing on screen.
HEAT_LOW = (32 / 255, 63 / 255, 195 / 255)
HEAT_HIGH = (208 / 255, 81 / 255, 33 / 255)


@dataclass
class PanelTarget:
    name: str
    slots: list[tuple[int, int]] = field(default_factory=list)  # (node, target index)


def panel_targets(scene, morph_nodes) -> list[PanelTarget]:
    """Target names in first-seen order, each with every (node, index) it drives; all-zero targets left out."""
    out: dict[str, PanelTarget] = {}
    for node in morph_nodes:
        mesh = scene.meshes[scene.nodes[node].mesh]
        count = max(len(p.morph_targets) for p in mesh.primitives)
        for k in range(count):
            tgts = [p.morph_targets[k] for p in mesh.primitives if k < len(p.morph_targets)]
            if not any(np.any(t.position_deltas) or (t.normal_deltas is not None and np.any(t.normal_deltas))
                       for t in tgts):
                continue
            name = tgts[0].name or f"target {k}"
            out.setdefault(name, PanelTarget(name)).slots.append((node, k))
    return list(out.values())


def display_metrics(window_size, framebuffer_size) -> tuple[tuple[float, float], tuple[float, float]]:
    """ImGui's display size (window units) and framebuffer scale. A window that is gone or minimized answers
    (0, 0) while the framebuffer size of the frame is still known: the scale is 1 then, not framebuffer / 1
    (which made ImGui rasterize its fonts ~1000x too large and abort "Out of texture memory" when the X
    server killed the window mid-frame). The scale is kept within 1/8 .. 8."""
    fw, fh = (float(max(v, 1)) for v in framebuffer_size)
    ww, wh = (float(v) for v in window_size)
    if ww <= 0 or wh <= 0:
        ww, wh = fw, fh
    return (ww, wh), (min(max(fw / ww, 0.125), 8.0), min(max(fh / wh, 0.125), 8.0))


LEGEND = (("red", (0.9, 0.25, 0.2), "blend shapes only"), ("blue", (0.3, 0.45, 0.95), "skinning only"),
          ("purple", (0.7, 0.35, 0.9), "blend shapes + skinning"))   # the default scene's three meshes
PANEL_WIDTH = 330     # window units at first use; the user can resize it (the camera follows its right edge)


def most_influential_joint(scene, skin: int = 0) -> int:
    """The joint (index into ``scene.skins[skin].joints``) with the largest summed vertex weight over the
    primitives skinned by ``skin``: where a heat map shows something (the root joint often moves nothing)."""
    if not scene.skins:
        return 0
    total = np.zeros(len(scene.skins[skin].joints))
    for p in scene.primitives:
        if p.is_skinned and p.skin == skin:
            j, w = p.vertices["joints"].reshape(-1), p.vertices["weights"].reshape(-1)
            ok = j < len(total)
            np.add.at(total, j[ok], w[ok])
    return int(np.argmax(total)) if total.any() else 0


class DemoPanel:
    def __init__(self, scene, driver, pose, ctx, color_format: int, frames_in_flight: int, *,
                 legend: bool = False):
        from imgui_bundle import imgui

        from .ui_renderer import ImGuiRenderer

        self.imgui, self.scene, self.driver, self.pose = imgui, scene, driver, pose
        self.context = imgui.create_context()
        imgui.get_io().set_ini_filename("")  # no imgui.ini next to the user's files
        imgui.style_colors_dark()
        self.renderer = ImGuiRenderer(ctx, color_format, frames_in_flight)
        self.targets = panel_targets(scene, pose.morph_nodes)
        self.joint_names = ([scene.nodes[j].name for j in scene.skins[0].joints] if scene.skins else [])
        self.visible = True
        self.legend = legend           # the default scene: say what red / blue / purple show
        self.frame_requested = False   # the "frame camera" button; the demo frames and clears it
        self.covers = 0.0              # window units from the left edge the panel covers now (0: collapsed/hidden)

    # ------------------------------------------------------------------ input from GLFW
    @property
    def wants_mouse(self) -> bool:
        return self.visible and self.imgui.get_io().want_capture_mouse

    def mouse_pos(self, x: float, y: float) -> None:
        self.imgui.get_io().add_mouse_pos_event(float(x), float(y))

    def mouse_button(self, button: int, down: bool) -> None:
        if button < 3:
            self.imgui.get_io().add_mouse_button_event(button, down)

    def scroll(self, dx: float, dy: float) -> None:
        self.imgui.get_io().add_mouse_wheel_event(float(dx), float(dy))

    # ------------------------------------------------------------------ per frame
    def build(self, window_size, framebuffer_size, dt: float, stats: dict, heat: dict):
        """Lay the panel out; returns the draw data. ``heat``: {"on": bool, "joint": int} (updated in place)."""
        imgui = self.imgui
        io = imgui.get_io()
        (dw, dh), (sx, sy) = display_metrics(window_size, framebuffer_size)
        io.display_size = imgui.ImVec2(dw, dh)
        io.display_framebuffer_scale = imgui.ImVec2(sx, sy)
        io.delta_time = max(dt, 1e-4)
        imgui.new_frame()
        self.covers = 0.0
        if self.visible:
            imgui.set_next_window_pos(imgui.ImVec2(8, 8), imgui.Cond_.first_use_ever.value)
            imgui.set_next_window_size(imgui.ImVec2(PANEL_WIDTH, 0), imgui.Cond_.first_use_ever.value)
            # never taller than the window (it scrolls instead), never so narrow that the labels go
            imgui.set_next_window_size_constraints(imgui.ImVec2(220, 60),
                                                   imgui.ImVec2(max(dw * 0.7, 220), max(dh - 16, 60)))
            expanded, _ = imgui.begin("vkmorph (U hides)")
            if expanded:
                imgui.push_item_width(-110)   # sliders leave room for their labels
                self._legend()
                self._stats(stats)
                self._clips()
                self._weights()
                self._heat(heat)
                self._view(stats)
                imgui.pop_item_width()
                pos, size = imgui.get_window_pos(), imgui.get_window_size()
                if pos.y < dh and pos.x < dw / 2:   # docked on the left half: the view keeps clear of it
                    self.covers = float(pos.x + size.x)
            imgui.end()
        imgui.render()
        self.renderer.update_textures()  # before the frame's command buffer is begun (may wait for the GPU)
        return imgui.get_draw_data()

    def _legend(self) -> None:
        if not self.legend:
            return
        imgui = self.imgui
        for word, rgb, what in LEGEND:
            imgui.text_colored(imgui.ImVec4(*rgb, 1.0), f"{word:7s}")
            imgui.same_line()
            imgui.text(what)

    def _stats(self, s: dict) -> None:
        imgui = self.imgui
        imgui.separator_text("performance")
        imgui.text(f"{s.get('fps', 0):.1f} FPS   {s.get('quality', '')}")
        imgui.text(f"GPU: morph {s.get('morph_ms', 0):.3f} ms, frame {s.get('frame_ms', 0):.2f} ms")
        imgui.text(f"morph dispatched {s.get('dispatched', 0)}, skipped {s.get('skipped', 0)}")
        for line in crowd_stat_lines(s.get("crowd")):
            imgui.text(line)

    def _clips(self) -> None:
        imgui, d = self.imgui, self.driver
        imgui.separator_text("animation")
        if d.modes:
            changed, mode = imgui.combo("clip", d.mode, d.modes)
            if changed and mode != d.mode:
                d.mode = mode
                d.time = 0.0
                d.apply()
        _, d.paused = imgui.checkbox("pause", d.paused)
        length = d.loop_length
        if length <= 0:
            return
        t = float(d.time % length)     # the driver keeps it wrapped; the slider shows where the pose is
        changed, t = imgui.slider_float("time", t, 0.0, length, "%.2f s")
        if changed:
            d.time = t
            d.apply()

    def _weights(self) -> None:
        imgui, d = self.imgui, self.driver
        imgui.separator_text("morph targets")
        if not self.targets:
            imgui.text("(no morph targets with deltas)")
        for i, tgt in enumerate(self.targets):
            node, k = tgt.slots[0]
            cur = float(self.pose.weights(node)[k])
            changed, v = imgui.slider_float(f"{tgt.name}##w{i}", cur, *self.pose.weight_range)
            if changed:
                for node, k in tgt.slots:
                    d.set_override(node, k, v)
        if d.overrides and imgui.button("release sliders"):
            d.overrides.clear()
            d.apply()

    def _view(self, s: dict) -> None:
        """Last, so the rows above keep their places: the TAB selection (outlined) and the auto-frame button."""
        imgui = self.imgui
        imgui.separator_text("view")
        imgui.text(f"selected (TAB, outlined): {s.get('selected') or 'none'}")
        if imgui.button("frame camera (F)"):
            self.frame_requested = True

    def _heat(self, heat: dict) -> None:
        imgui = self.imgui
        if not self.joint_names:
            return
        imgui.separator_text("bone weights")
        _, heat["on"] = imgui.checkbox("heat map", heat["on"])
        _, heat["joint"] = imgui.combo("joint", heat["joint"] % len(self.joint_names), self.joint_names)
        p = imgui.get_cursor_screen_pos()
        lo = imgui.color_convert_float4_to_u32(imgui.ImVec4(*HEAT_LOW, 1.0))
        hi = imgui.color_convert_float4_to_u32(imgui.ImVec4(*HEAT_HIGH, 1.0))
        imgui.get_window_draw_list().add_rect_filled_multi_color(p, imgui.ImVec2(p.x + 200, p.y + 12), lo, hi, hi,
                                                                 lo)
        imgui.dummy(imgui.ImVec2(200, 14))
        imgui.text("weight 0")
        imgui.same_line(200 - imgui.calc_text_size("1").x)
        imgui.text("1")

    def record(self, cb, slot: int, framebuffer, width: int, height: int, draw_data) -> int:
        return self.renderer.record(cb, slot, framebuffer, width, height, draw_data)

    def destroy(self) -> None:
        self.renderer.destroy()
        self.imgui.destroy_context(self.context)


def crowd_stat_lines(crowd: dict | None) -> list[str]:
    """The panel's crowd rows (``vkmorph demo --crowd N``; the headless demo prints the same): instance and
    visible counts (and how many the shadow pass draws), instances per level of detail (``--crowd-lod``), where
    the instances are animated (GPU / CPU), the skinning path per object (compute:
    skinned once per frame, then plain draws; vertex: skinned in each pass's vertex shader; rigid: no skin),
    GPU ms per pass."""
    if not crowd:
        return []
    lines = [f"crowd: {crowd['instances']} instances, {crowd['visible']} visible"
             + (f", animated on the {crowd['animation']}" if crowd.get("animation") else "")
             + (f", {crowd['shadow_visible']} cast shadows" if "shadow_visible" in crowd else "")]
    if crowd.get("lod"):        # instances per level of detail: camera, then shadow
        lines.append("  LOD " + "/".join(str(x) for x in crowd["lod"])
                     + (" (shadow " + "/".join(str(x) for x in crowd["shadow_lod"]) + ")" if crowd.get("shadow_lod")
                        else ""))
    lines += [f"  {name}: {path}" for name, path in crowd.get("paths", [])]
    ms = crowd.get("pass_ms")
    if ms:     # two rows: the panel is narrow
        items = [f"{k} {v:.2f}" for k, v in ms.items()]
        lines += ["GPU ms: " + ", ".join(items[:2]), "        " + ", ".join(items[2:])]
    return lines

