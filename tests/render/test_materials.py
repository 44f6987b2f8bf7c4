"""Materials, MSAA, mip chains, outline and bad material data, rendered on lavapipe under validation (the ``ctx``
fixture fails a test on any validation message: image layout transitions, mip blits, the MSAA resolve).

Scenes are generated glTF files (tests/render/scenes.py); MorphStressTest (textured, shared assets) is in
test_images.py. Reference images: tests/render/reference/, same tolerance scheme as test_images.py.
"""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from PIL import Image

from tests.helpers import ROOT
from tests.render import scenes
from vkmorph import load_scene

pytestmark = pytest.mark.gpu
W, H = 160, 120


def render(ctx, scene, configure=None, w=W, h=H, **kw):
    from vkmorph.render.offscreen import OffscreenRenderer

    off = OffscreenRenderer(ctx, scene, w, h, **kw)
    try:
        if configure:
            configure(off.renderer)
        return off.render(), off.warnings, off.renderer
    finally:
        off.destroy()


def front_view(r):
    r.camera.yaw, r.camera.pitch = 0.0, 0.0
    r.light_dir = np.array([-0.3, -0.6, -1.0])


def pixel_at(img: np.ndarray, r, world) -> np.ndarray:
    """The rendered RGB (int) where renderer ``r``'s camera projects the world point ``world``."""
    c = r.camera.view_proj(W / H) @ np.append(world, 1.0)
    x, y = int((c[0] / c[3] * 0.5 + 0.5) * W), int((c[1] / c[3] * 0.5 + 0.5) * H)
    return img[y, x, :3].astype(int)


def object_pixels(img: np.ndarray) -> np.ndarray:
    """Pixels that are not the clear colour (the ground is off in these tests)."""
    from vkmorph.render.renderer import SKY_COLOR

    sky = np.round(255 * np.where(np.array(SKY_COLOR[:3]) <= 0.0031308, 12.92 * np.array(SKY_COLOR[:3]),
                                  1.055 * np.array(SKY_COLOR[:3]) ** (1 / 2.4) - 0.055))
    far = np.abs(img[..., :3].astype(int) - sky).max(axis=2) > 8
    return img[..., :3][far].astype(float)


REFERENCE_CASES = {
    "textured_cube": (scenes.textured_cube, None),
    "vertex_colored": (scenes.vertex_colored, None),
    "normal_mapped": (scenes.normal_mapped, front_view),
    "alpha_masked": (scenes.alpha_scene, front_view),
}


@pytest.mark.parametrize("name", list(REFERENCE_CASES))
def test_reference_image(ctx, tmp_path, name):
    make, configure = REFERENCE_CASES[name]
    img, warnings, _ = render(ctx, load_scene(make(tmp_path)), configure)
    assert warnings == []
    problem = scenes.compare_reference(name, img, ctx.info.name)
    assert problem is None, problem
    assert img[..., :3].std() > 10, "blank image"


def test_textured_mean_colour_is_the_texture_not_white(ctx, tmp_path):
    img, _, _ = render(ctx, load_scene(scenes.textured_cube(tmp_path)), ground=False)
    px = object_pixels(img)
    assert len(px) > 500
    mean = px.mean(axis=0)
    assert not np.all(mean > 200), f"white: {mean}"
    # chromaticity of the texture's dominant colour (orange), within lighting's reach
    chroma = mean / mean.sum()
    want = np.array(scenes.ORANGE[:3], float) / sum(scenes.ORANGE[:3])
    assert np.abs(chroma - want).max() < 0.08, (chroma, want)
    assert mean[0] > mean[1] > mean[2]


def test_assimp_format_diffuse_texture_and_colour(ctx, tmp_path):
    """Non-glTF files get what Assimp gives (OBJ here, like FBX/Collada): the diffuse map and colour; its v-up
    UVs land the same texels as the glTF cube, so the image matches the glTF render."""
    scene = load_scene(scenes.obj_textured_cube(tmp_path))
    m = scene.primitives[0].material
    assert m.name == "Orange" and m.base_color_texture.image.name == "orange.png", m
    img, warnings, _ = render(ctx, scene)
    assert warnings == []
    ref, _, _ = render(ctx, load_scene(scenes.textured_cube(tmp_path)))
    def cross(im):  # the texture's dark-blue cross, where it lands on screen
        return im[..., 2].astype(int) > im[..., 0].astype(int) + 20

    def body(im):   # orange texels
        return im[..., 0].astype(int) > im[..., 2].astype(int) + 60

    Image.fromarray(np.concatenate([img, ref], 1)).save(tmp_path / "obj_vs_gltf.png")
    assert body(img).sum() > 1000 and cross(img).sum() > 100
    assert (body(img) != body(ref)).mean() < 0.01 and (cross(img) != cross(ref)).mean() < 0.01
    missing = load_scene(scenes.obj_textured_cube(tmp_path, texture="gone.png"))
    _, warnings, _ = render(ctx, missing)
    assert len(warnings) == 1 and "'Orange'" in warnings[0] and "gone.png" in warnings[0], warnings


def test_embedded_glb_texture_renders_like_the_external_png(ctx, tmp_path):
    a, _, _ = render(ctx, load_scene(scenes.textured_cube(tmp_path)))
    b, _, _ = render(ctx, load_scene(scenes.textured_cube(tmp_path, glb=True)))
    assert np.abs(a.astype(int) - b.astype(int)).max() <= 1


def test_vertex_colours_reach_the_pixels(ctx, tmp_path):
    """Left cube: red at the bottom to green at the top (bytes); right cube: blue-ish floats."""
    img, _, r = render(ctx, load_scene(scenes.vertex_colored(tmp_path)), front_view, ground=False)
    def pixel(world):
        return pixel_at(img, r, world)

    low, high, right = pixel([-0.8, -0.35, 0.5]), pixel([-0.8, 0.35, 0.5]), pixel([0.8, 0.0, 0.5])
    assert low[0] > low[1] + 40 and high[1] > high[0] + 40, (low, high)
    assert right[2] > right[0] + 40, right


def test_normal_map_follows_the_generated_tangent_frame(ctx, tmp_path):
    """Generated tangents: T along +u, w = +1 (B = cross(N, T) points up the image, as in glTF). A map tilting
    normals up (+Y, green) is brighter under a light from above than one tilting them down, and +X (red)
    brighter than -X under a light from the right; a flat map is between."""
    scene = load_scene(scenes.normal_mapped(tmp_path, tilt=(0.0, 0.0), name="flat"))
    t = scene.primitives[0].vertices["tangent"]
    np.testing.assert_allclose(t, np.tile([1.0, 0.0, 0.0, 1.0], (len(t), 1)), atol=1e-6)

    def brightness(tilt, light):
        def configure(r):
            front_view(r)
            r.light_dir = np.asarray(light, float)
        img, _, _ = render(ctx, load_scene(scenes.normal_mapped(tmp_path, tilt=tilt, name=f"t{tilt}")),
                           configure, w=48, h=36, ground=False)
        return float(img[14:22, 20:28, :3].mean())

    from_above, from_right = [0.0, -1.0, -0.4], [-1.0, 0.0, -0.4]
    up, flat, down = (brightness(t, from_above) for t in ((0.0, 0.8), (0.0, 0.0), (0.0, -0.8)))
    assert up > flat + 5 > down + 10, (up, flat, down)
    right, left = brightness((0.8, 0.0), from_right), brightness((-0.8, 0.0), from_right)
    assert right > left + 10, (right, left)


def test_alpha_mask_cuts_holes_and_blend_shows_what_is_behind(ctx, tmp_path):
    img, _, r = render(ctx, load_scene(scenes.alpha_scene(tmp_path)), front_view, ground=False)
    def pixel(world):
        return pixel_at(img, r, world)

    hole = pixel([-0.65, 0.0, 0.0])          # centre of the middle hole: the blue wall shows
    solid = pixel([-0.65 + 0.2, 0.2, 0.0])   # between holes: the white quad
    glass = pixel([0.65, 0.0, 0.3])          # red glass over the blue wall: both contribute
    assert hole[2] > hole[0] + 60, hole
    assert solid.min() > 150, solid
    assert glass[0] > 80 and glass[2] > 60, glass


def test_single_sided_faces_are_culled_double_sided_lit_and_emissive_glows(ctx, tmp_path):
    img, _, r = render(ctx, load_scene(scenes.sided_walls(tmp_path)), front_view, ground=False)
    def pixel(world):
        return pixel_at(img, r, world)

    sky = img[2, 2, :3].astype(int)
    assert np.abs(pixel([-0.7, 0.55, 0.0]) - sky).max() <= 2          # back face of a single-sided wall: culled
    two = pixel([0.7, 0.55, 0.0])
    assert two[0] > two[2] + 40 and two[1] > two[2] + 40, two          # double-sided: the yellow back face
    glow = pixel([0.0, -0.6, 0.0])
    assert glow[0] > 150 and glow[1] < 60 and glow[2] < 60, glow       # black base colour, red emission


def test_mip_chain_keeps_a_grazing_checkerboard_from_aliasing(ctx, tmp_path):
    """Far away the checkerboard must average to an even grey (mips + trilinear/anisotropic filtering);
    without mips (the same renderer, mipmaps=False) the far field aliases into moire, which the bound rejects."""
    scene = load_scene(scenes.checker_floor(tmp_path))

    def configure(r):
        r.camera.pitch, r.camera.yaw = 0.12, 0.3
        r.camera.distance *= 0.35

    def far_field_noise(mipmaps):
        img, _, r = render(ctx, scene, configure, ground=False, mipmaps=mipmaps)
        lum = img[..., :3].astype(float) @ [0.2126, 0.7152, 0.0722]
        rows = np.flatnonzero((np.abs(img[..., :3].astype(int) - img[0, 0, :3]).max(axis=2) > 8).mean(axis=1) > 0.9)
        band = lum[rows[0]:rows[0] + 12, 10:-10]   # the farthest rows fully covered by the floor
        return float(band.std()), r.material_table.mip_levels

    from vkmorph.gpu.vk import vk

    offered = vk.vkGetPhysicalDeviceFeatures(ctx.physical_device).samplerAnisotropy
    limit = vk.vkGetPhysicalDeviceProperties(ctx.physical_device).limits.maxSamplerAnisotropy
    assert ctx.max_anisotropy == (min(16.0, limit) if offered else 0.0)   # anisotropic filtering where offered
    noisy, levels_off = far_field_noise(False)
    smooth, levels_on = far_field_noise(True)
    assert levels_on == [7] and levels_off == [1]      # 64x64 -> 7 levels
    assert smooth < 12.0, smooth
    assert noisy > 2 * smooth, (noisy, smooth)


def test_msaa_resolves_soft_edges(ctx, tmp_path):
    """4x MSAA is closer to a 16x supersampled render (4x the size, box-filtered down) than 1 sample is."""
    scene = load_scene(scenes.vertex_colored(tmp_path))
    img4, _, r4 = render(ctx, scene, ground=False)
    img1, _, r1 = render(ctx, scene, ground=False, samples=1)
    big, _, _ = render(ctx, scene, ground=False, samples=1, w=4 * W, h=4 * H)
    assert r4.samples == 4 and r1.samples == 1     # lavapipe offers 4x colour and depth samples
    truth = big[..., :3].astype(float).reshape(H, 4, W, 4, 3).mean(axis=(1, 3))
    err4 = np.abs(img4[..., :3] - truth).mean()
    err1 = np.abs(img1[..., :3] - truth).mean()
    assert err4 < 0.6 * err1, (err4, err1)


def test_outline_traces_the_selected_deformed_mesh(ctx):
    """The outline (orange ring, stencil-masked) of the red tube appears only when selected, hugs its silhouette
    and follows the morph: with the bulge target at full weight it traces the bulged shape."""
    scene = load_scene()
    red = scene.node_index("Red")

    def shot(selected, weight):
        def configure(r):
            r.selected = selected
            r.runtime.pose.set_weights(red, [weight] * len(r.runtime.pose.weights(red)))
        img, _, _ = render(ctx, scene, configure, ground=False)
        return img[..., :3].astype(int)

    def outline_mask(img):
        return (np.abs(img - [255, 196, 66]).max(axis=2) < 40)

    def red_mask(img):
        return (img[..., 0] > img[..., 1] + 60) & (img[..., 0] > img[..., 2] + 60) & ~outline_mask(img)

    def dilate(m, k):
        out = m.copy()
        for dy in range(-k, k + 1):
            for dx in range(-k, k + 1):
                out |= np.roll(np.roll(m, dy, 0), dx, 1)
        return out

    plain = shot(None, 0.0)
    assert outline_mask(plain).sum() == 0
    for weight in (0.0, 1.0):
        img = shot(red, weight)
        ring = outline_mask(img)
        body = red_mask(shot(None, weight))
        assert ring.sum() > 100, ring.sum()
        near = dilate(body, 4)
        assert (ring & ~near).sum() <= 0.02 * ring.sum(), "outline away from the silhouette"
        assert (ring & body).sum() <= 0.02 * ring.sum(), "outline over the body"
    moved = red_mask(shot(None, 1.0)) ^ red_mask(plain)
    assert moved.sum() > 50, "the morph did not change the silhouette; the test would prove nothing"


def test_bad_material_data_renders_with_one_warning_each(ctx, tmp_path):
    scene = load_scene(scenes.bad_materials(tmp_path))
    img, warnings, _ = render(ctx, scene, ground=False)
    assert len(warnings) == 3, warnings
    for material, image in (("Missing", "nothere.png"), ("Corrupt", "corrupt.png"), ("OutOfRange", "7")):
        line = next((w for w in warnings if f"'{material}'" in w), None)
        assert line is not None and image in line and "\n" not in line, (material, warnings)
    px = object_pixels(img)
    assert len(px) > 1000
    green = px.mean(axis=0)
    assert green[1] > green[0] and green[1] > green[2], green   # the factor alone: green cubes


def test_render_cli_warns_and_succeeds_on_bad_material_data(tmp_path):
    src = scenes.bad_materials(tmp_path)
    out = tmp_path / "out.png"
    cmd = [sys.executable, "-m", "vkmorph.app.cli", "render", str(src), "--size", "64x48", "--out", str(out)]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert r.returncode == 0, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if "warning" in ln]
    assert len(lines) == 3 and all(ln.startswith("vkmorph: warning: material '") for ln in lines), r.stderr
    assert np.asarray(Image.open(out)).shape == (48, 64, 4)


def test_images_beyond_the_device_limit_are_scaled_down():
    from vkmorph.render.material_table import fit_to_limit

    img = np.zeros((100, 40, 4), np.uint8)
    img[:50] = 255
    assert fit_to_limit(img, 100) is img
    small = fit_to_limit(img, 50)
    assert small.shape == (50, 20, 4) and small[:20].min() == 255 and small[30:].max() == 0


def test_renderer_destroys_everything_in_reverse_creation_order(ctx, tmp_path, monkeypatch):
    from vkmorph.render.offscreen import OffscreenRenderer

    before = set(ctx._children)
    off = OffscreenRenderer(ctx, load_scene(scenes.alpha_scene(tmp_path)), 32, 24)
    off.render()
    created = sorted(set(ctx._children) - before)
    assert len(created) > 20
    order: list[int] = []
    real = ctx.untrack
    monkeypatch.setattr(ctx, "untrack", lambda key: (order.append(key), real(key)))
    off.destroy()
    released = [k for k in order if k in created]
    assert sorted(released) == created, "leaked: " + str(set(created) - set(released))
    assert released == sorted(released, reverse=True), released


# ------------------------------------------------------------------ glTF material extensions
def _checker_wall(tmp_path, name, *, uv=None, info_ext=None, material_ext=None, factor=None):
    from tests.render.gltf_gen import GltfBuilder, checker, wall

    b = GltfBuilder()
    tex = b.texture(b.image(checker(64, 8, a=(230, 120, 30, 255), b=(20, 60, 200, 255))),
                    {"magFilter": 9728, "minFilter": 9728, "wrapS": 10497, "wrapT": 10497})
    info = {"index": tex}
    if info_ext:
        info["extensions"] = info_ext
    pbr = {"baseColorTexture": info, "metallicFactor": 0.0, "roughnessFactor": 0.8}
    if factor is not None:
        pbr = {"baseColorFactor": factor, "metallicFactor": 0.0, "roughnessFactor": 0.8}
    m = {"name": name, "pbrMetallicRoughness": pbr}
    if material_ext:
        m["extensions"] = material_ext
    pos, nor, uv0, idx = wall(2.0)
    b.mesh(pos, nor, uv0 if uv is None else uv, idx, material=b.material(**m), name="wall")
    used = sorted({*(info_ext or {}), *(material_ext or {})})
    if used:
        b.doc["extensionsUsed"] = used
    return load_scene(b.save(tmp_path / f"{name}.gltf"))


def test_texture_transform_equals_the_same_transform_applied_to_the_uvs(ctx, tmp_path):
    """KHR_texture_transform in the shader against an independent reference: a file without the extension whose
    UVs are the transformed ones (numpy). Nearest filtering, so only texel-boundary pixels may differ."""
    from tests.render.gltf_gen import wall

    tt = {"offset": [0.25, 0.1], "rotation": 0.5, "scale": [2.0, 1.5]}
    co, si = np.cos(0.5), np.sin(0.5)   # the extension's matrices: T(offset) x R(rotation) x S(scale)
    m = np.array([[1, 0, 0.25], [0, 1, 0.1], [0, 0, 1]]) @ np.array([[co, si, 0], [-si, co, 0], [0, 0, 1]]) \
        @ np.diag([2.0, 1.5, 1.0])
    uv = wall(2.0)[2].astype(np.float64)
    moved = (np.c_[uv, np.ones(len(uv))] @ m.T)[:, :2].astype(np.float32)
    shader, _, _ = render(ctx, _checker_wall(tmp_path, "tt", info_ext={"KHR_texture_transform": tt}), front_view,
                          ground=False)
    numpy_uv, _, _ = render(ctx, _checker_wall(tmp_path, "uv", uv=moved), front_view, ground=False)
    plain, _, _ = render(ctx, _checker_wall(tmp_path, "plain"), front_view, ground=False)
    diff = np.abs(shader[..., :3].astype(int) - numpy_uv[..., :3].astype(int)).max(axis=2)
    assert (diff > 40).mean() < 0.01, (diff > 40).mean()
    assert (np.abs(plain[..., :3].astype(int) - numpy_uv[..., :3].astype(int)).max(axis=2) > 40).mean() > 0.1


def test_unlit_material_is_drawn_as_its_base_colour(ctx, tmp_path):
    """KHR_materials_unlit: every pixel of the wall is the sRGB encoding of the base colour factor, whatever the
    light; the same material lit varies across the wall."""
    factor = [0.2, 0.5, 0.8, 1.0]
    srgb = np.array([12.92 * c if c <= 0.0031308 else 1.055 * c ** (1 / 2.4) - 0.055 for c in factor[:3]]) * 255
    unlit, _, _ = render(ctx, _checker_wall(tmp_path, "unlit", factor=factor,
                                            material_ext={"KHR_materials_unlit": {}}), front_view, ground=False)
    px = object_pixels(unlit)
    assert len(px) > 2000
    exact = np.abs(px - srgb).max(axis=1) <= 2      # all but the anti-aliased edge, blended with the sky
    assert exact.mean() > 0.9, (exact.mean(), np.median(px, axis=0), srgb)
    lit, _, _ = render(ctx, _checker_wall(tmp_path, "lit", factor=factor), front_view, ground=False)
    assert (np.abs(object_pixels(lit) - srgb).max(axis=1) <= 2).mean() < 0.5
