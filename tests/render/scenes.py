"""Generated glTF scenes for the material tests (written into a test's tmp_path), and image helpers."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
from PIL import Image

from tests.helpers import ROOT
from tests.render.gltf_gen import GltfBuilder, checker, cube, png_bytes, quad, wall

REF = ROOT / "tests" / "render" / "reference"
ARTIFACTS = ROOT / "test-artifacts"
CHANNEL_TOL, MATCH_FRACTION, MEAN_TOL = 6, 0.995, 1.0
# The references were rendered by lavapipe. Another implementation rasterizes edges and filters texels a little
# differently (the spec allows it: subTexelPrecisionBits and mipmapPrecisionBits may be as low as 4, i.e. 1/16 of
# an edge's contrast). Measured on an H200: 0.975-0.994 of pixels within 6/255 in place, mean diff <= 0.34, the
# misses on silhouette edges and texel boundaries (a 20 -> 230 texture edge: up to 51/255 in a few pixels). There,
# and only where the reference has an edge (its 3x3 neighbourhood spans more than EDGE_CONTRAST in a channel), a
# pixel also matches when a reference pixel of that neighbourhood is within NEIGHBOUR_TOL (a sub-pixel shift at
# the spec's minimum filtering precision); still 0.995 of pixels must match, at least SAME_PIXEL_FLOOR in place,
# and the mean limit is unchanged. Smooth regions keep the 6/255 rule: a wrong shade fails on every device
# (tests/render/test_reference_compare.py). References are regenerated only on the reference device.
REFERENCE_DEVICE, SAME_PIXEL_FLOOR, NEIGHBOUR_TOL, EDGE_CONTRAST = "llvmpipe", 0.97, 16, 32
ORANGE = (230, 120, 30, 255)
TRILINEAR = {"magFilter": 9729, "minFilter": 9987}


def orange_texture(n: int = 32) -> np.ndarray:
    """Mostly orange with a dark-blue cross in the upper-left quarter (asymmetric, so a flipped U or V shows):
    the dominant colour is orange."""
    img = np.empty((n, n, 4), np.uint8)
    img[:] = ORANGE
    img[n // 4 - 2:n // 4 + 2, :] = (20, 40, 120, 255)
    img[:, n // 4 - 2:n // 4 + 2] = (20, 40, 120, 255)
    return img


def textured_cube(dir: Path, glb: bool = False) -> Path:
    b = GltfBuilder()
    img = b.image(orange_texture()) if glb else b.image(orange_texture(), uri="orange.png")
    tex = b.texture(img, TRILINEAR)
    mat = b.material(name="Orange", pbrMetallicRoughness={"baseColorTexture": {"index": tex}, "metallicFactor": 0.0,
                                                          "roughnessFactor": 0.5})
    b.mesh(*cube(), material=mat, name="cube")
    return b.save(dir / ("textured.glb" if glb else "textured.gltf"), glb=glb)


def vertex_colored(dir: Path) -> Path:
    """Two cubes: COLOR_0 as normalized unsigned bytes (RGBA) and as floats (RGB)."""
    b = GltfBuilder()
    mat = b.material(name="White", pbrMetallicRoughness={"metallicFactor": 0.0, "roughnessFactor": 0.6})
    pos, nor, uv, idx = cube()
    t = (pos[:, 1] + 0.5)[:, None]   # bottom to top
    bytes_rgba = np.concatenate([np.round(255 * np.hstack([1 - t, t, 0 * t])), np.full((24, 1), 255)], 1)
    b.mesh(pos, nor, uv, idx, material=mat, colors=bytes_rgba.astype(np.uint8), colors_normalized=True,
           translation=(-0.8, 0, 0), name="bytes")
    floats = np.hstack([0 * t + 0.1, 0.3 * t, 0.2 + 0.8 * (1 - t)]).astype(np.float32)
    b.mesh(pos, nor, uv, idx, material=mat, colors=floats, translation=(0.8, 0, 0), name="floats")
    return b.save(dir / "vertex_colored.gltf")


def bump_map(n: int = 64, tilt: tuple | None = None) -> np.ndarray:
    """A tangent-space normal map: round bumps, or one constant tilt (x, y) in tangent space."""
    if tilt is not None:
        v = np.array([tilt[0], tilt[1], 1.0])
        v /= np.linalg.norm(v)
        return np.broadcast_to(np.append(np.round((v * 0.5 + 0.5) * 255), 255).astype(np.uint8), (n, n, 4)).copy()
    y, x = (np.mgrid[0:n, 0:n] + 0.5) / n * 4 % 1.0 - 0.5
    nx, ny = -x * 1.6, y * 1.6   # image-down y is -Y in tangent space (green up)
    v = np.stack([nx, ny, np.ones_like(nx)], -1)
    v /= np.linalg.norm(v, axis=-1, keepdims=True)
    return np.concatenate([np.round((v * 0.5 + 0.5) * 255), np.full((n, n, 1), 255)], -1).astype(np.uint8)


def normal_mapped(dir: Path, tilt: tuple | None = None, name: str = "normal_mapped") -> Path:
    """A wall facing +Z with a normal map and no TANGENT attribute (tangents are generated)."""
    b = GltfBuilder()
    tex = b.texture(b.image(bump_map(tilt=tilt)), TRILINEAR)
    mat = b.material(name="Bumpy", normalTexture={"index": tex},
                     pbrMetallicRoughness={"baseColorFactor": [0.7, 0.7, 0.7, 1], "metallicFactor": 0.0,
                                           "roughnessFactor": 0.5})
    b.mesh(*wall(2.0), material=mat, name="wall")
    return b.save(dir / f"{name}.gltf")


def alpha_scene(dir: Path) -> Path:
    """A blue wall behind a MASK quad with round holes (cutoff 0.5) and a BLEND quad (alpha 0.5)."""
    b = GltfBuilder()
    n = 64
    y, x = (np.mgrid[0:n, 0:n] + 0.5) / n * 3 % 1.0 - 0.5
    holes = np.empty((n, n, 4), np.uint8)
    holes[..., :3] = (240, 240, 240)
    holes[..., 3] = np.where(x * x + y * y < 0.09, 0, 255)
    mask = b.material(name="Holes", alphaMode="MASK", alphaCutoff=0.5, doubleSided=True,
                      pbrMetallicRoughness={"baseColorTexture": {"index": b.texture(b.image(holes), TRILINEAR)},
                                            "metallicFactor": 0.0})
    glass = b.material(name="Glass", alphaMode="BLEND", pbrMetallicRoughness={
        "baseColorFactor": [1.0, 0.2, 0.1, 0.5], "metallicFactor": 0.0, "roughnessFactor": 0.3})
    back = b.material(name="Back", pbrMetallicRoughness={"baseColorFactor": [0.1, 0.3, 0.9, 1.0],
                                                         "metallicFactor": 0.0})
    b.mesh(*wall(3.0, z=-0.6), material=back, name="back")
    b.mesh(*wall(1.2, z=0.0), material=mask, translation=(-0.65, 0, 0), name="mask")
    b.mesh(*wall(1.2, z=0.3), material=glass, translation=(0.65, 0, 0), name="glass")
    return b.save(dir / "alpha.gltf")


def sided_walls(dir: Path) -> Path:
    """Two walls facing away from the camera (+Z camera, normals -Z): single-sided (culled) on the left,
    double-sided on the right; and an emissive black wall (red glow) facing the camera below them."""
    b = GltfBuilder()
    one = b.material(name="OneSided", pbrMetallicRoughness={"baseColorFactor": [0.9, 0.8, 0.1, 1], "metallicFactor": 0})
    two = b.material(name="TwoSided", doubleSided=True,
                     pbrMetallicRoughness={"baseColorFactor": [0.9, 0.8, 0.1, 1], "metallicFactor": 0})
    glow = b.material(name="Glow", emissiveFactor=[1.0, 0.0, 0.0],
                      pbrMetallicRoughness={"baseColorFactor": [0, 0, 0, 1], "metallicFactor": 0})
    pos, nor, uv, idx = wall(1.0)
    back = (pos, -nor, uv, idx[[0, 2, 1, 3, 5, 4]])   # reversed winding, normals -Z
    b.mesh(*back, material=one, translation=(-0.7, 0.55, 0), name="one")
    b.mesh(*back, material=two, translation=(0.7, 0.55, 0), name="two")
    b.mesh(pos, nor, uv, idx, material=glow, translation=(0, -0.6, 0), name="glow")
    return b.save(dir / "sided.gltf")


def checker_floor(dir: Path) -> Path:
    """A long floor with a fine checkerboard repeated 60 times (the mip-chain test)."""
    b = GltfBuilder()
    tex = b.texture(b.image(checker(64, 8)), {"magFilter": 9729, "minFilter": 9987, "wrapS": 10497,
                                              "wrapT": 10497})
    mat = b.material(name="Checker", pbrMetallicRoughness={"baseColorTexture": {"index": tex},
                                                           "metallicFactor": 0.0, "roughnessFactor": 1.0})
    b.mesh(*quad(20.0, uv_scale=60.0), material=mat, name="floor")
    return b.save(dir / "checker.gltf")


RED = {"name": "Red", "pbrMetallicRoughness": {"baseColorFactor": [0.9, 0.04, 0.03, 1.0], "metallicFactor": 0.0,
                                              "roughnessFactor": 0.6}}


def pose_targets_box(dir: Path) -> Path:
    """A unit cube whose 3 targets are whole-body poses: each moves it 8 units away, in a different direction
    (+X, +Y, -Z); default weights (1, 0, 0), so it is drawn at x = 8. Every target at full weight spans 9 units."""
    b = GltfBuilder()
    pos, nor, uv, idx = cube()
    moves = [np.tile(np.array(d, np.float32), (len(pos), 1)) for d in ((8, 0, 0), (0, 8, 0), (0, 0, -8))]
    b.mesh(pos, nor, uv, idx, material=b.material(**RED), name="poses", targets=moves, weights=(1, 0, 0))
    return b.save(dir / "pose_targets.gltf")


def flat_square(dir: Path) -> Path:
    """A flat red square facing up at y = 0 (zero height: the ground must go below it, not through it)."""
    b = GltfBuilder()
    b.mesh(*quad(2.0), material=b.material(**RED), name="flat")
    return b.save(dir / "flat.gltf")


def rising_cube(dir: Path) -> Path:
    """A rigid red cube (rest at y = 0) whose clip moves it from y = -3 at t = 0 up to y = 0 at t = 1."""
    b = GltfBuilder()
    node = b.mesh(*cube(), material=b.material(**RED), name="riser")
    b.animate_translation(node, [0.0, 1.0], [(0, -3, 0), (0, 0, 0)], name="rise")
    return b.save(dir / "rising.gltf")


def bad_materials(dir: Path) -> Path:
    """Three cubes: an external image that is missing, a corrupt PNG, a texture index out of range."""
    b = GltfBuilder()
    missing = b.texture(b.image(uri="nothere.png"))
    corrupt = b.texture(b.image(uri="corrupt.png", raw=b"\x89PNG\r\n\x1a\n this is not a png"))
    for i, (name, tex) in enumerate((("Missing", missing), ("Corrupt", corrupt), ("OutOfRange", 7))):
        m = b.material(name=name, pbrMetallicRoughness={"baseColorTexture": {"index": tex},
                                                        "baseColorFactor": [0.2, 0.6, 0.3, 1.0],
                                                        "metallicFactor": 0.0})
        b.mesh(*cube(), material=m, translation=(1.5 * (i - 1), 0, 0), name=name)
    return b.save(dir / "bad_materials.gltf")


def obj_textured_cube(dir: Path, texture: str = "orange.png") -> Path:
    """Wavefront OBJ + MTL (an Assimp-only format): diffuse colour and a diffuse texture map (OpenGL v-up UVs)."""
    pos, nor, uv, idx = cube()
    (dir / "orange.png").write_bytes(png_bytes(orange_texture()))
    (dir / "cube.mtl").write_text(f"newmtl Orange\nKd 1.0 1.0 1.0\nmap_Kd {texture}\n")
    lines = ["mtllib cube.mtl", "o cube"]
    lines += [f"v {x:.6f} {y:.6f} {z:.6f}" for x, y, z in pos]
    lines += [f"vt {u:.6f} {1.0 - v:.6f}" for u, v in uv]
    lines += [f"vn {x:.6f} {y:.6f} {z:.6f}" for x, y, z in nor]
    lines.append("usemtl Orange")
    lines += ["f " + " ".join(f"{i + 1}/{i + 1}/{i + 1}" for i in tri) for tri in idx.reshape(-1, 3)]
    path = dir / "cube.obj"
    path.write_text("\n".join(lines) + "\n")
    return path


def _neighbourhoods(a: np.ndarray):
    """The 9 shifted views of ``a`` (edge-padded) that make up each pixel's 3x3 neighbourhood."""
    pad = np.pad(a, ((1, 1), (1, 1), (0, 0)), mode="edge")
    h, w = a.shape[:2]
    return [pad[dy:dy + h, dx:dx + w] for dy in range(3) for dx in range(3)]


def _neighbourhood_match(img: np.ndarray, ref: np.ndarray) -> float:
    """Fraction of pixels within CHANNEL_TOL in place, or, where the reference has an edge, within NEIGHBOUR_TOL
    (every channel) of some reference pixel in their 3x3 neighbourhood."""
    a, views = img.astype(np.int16), _neighbourhoods(ref.astype(np.int16))
    edge = (np.max(views, axis=0) - np.min(views, axis=0)).max(axis=2) > EDGE_CONTRAST
    near = np.min([np.abs(a - v).max(axis=2) for v in views], axis=0) <= NEIGHBOUR_TOL
    in_place = np.abs(a - ref.astype(np.int16)).max(axis=2) <= CHANNEL_TOL
    return float((in_place | (edge & near)).mean())


def compare_reference(name: str, img: np.ndarray, device: str = REFERENCE_DEVICE) -> str | None:
    """None when ``img`` matches tests/render/reference/<name>.png (or it was regenerated), else why not.
    ``device``: the name of the device that rendered ``img`` (see REFERENCE_DEVICE)."""
    ref_path = REF / f"{name}.png"
    if os.environ.get("VKMORPH_UPDATE_REFERENCES") == "1":
        if REFERENCE_DEVICE not in device:
            return f"{name}: references are regenerated on {REFERENCE_DEVICE} only, not on {device}"
        Image.fromarray(img, "RGBA").save(ref_path)
        return None
    if not ref_path.exists():
        return f"no reference image {ref_path}; run with VKMORPH_UPDATE_REFERENCES=1"
    ref = np.asarray(Image.open(ref_path).convert("RGBA"))
    diff = np.abs(img.astype(np.int16) - ref.astype(np.int16))
    match = (diff.max(axis=2) <= CHANNEL_TOL).mean()
    mean = diff.mean()
    how = "in place"
    if match < MATCH_FRACTION and REFERENCE_DEVICE not in device and match >= SAME_PIXEL_FLOOR:
        match = _neighbourhood_match(img, ref)
        how = f"in place, or within {NEIGHBOUR_TOL}/255 of a 3x3 neighbour at reference edges ({device})"
    if match < MATCH_FRACTION or mean > MEAN_TOL:
        ARTIFACTS.mkdir(exist_ok=True)
        Image.fromarray(img, "RGBA").save(ARTIFACTS / f"{name}.png")
        Image.fromarray(np.clip(diff[..., :3] * 8, 0, 255).astype(np.uint8), "RGB").save(ARTIFACTS / f"{name}-diff.png")
        return (f"{name}: {match:.4f} of pixels within {CHANNEL_TOL}/255 {how} (need {MATCH_FRACTION}), mean diff "
                f"{mean:.3f} (max {MEAN_TOL}); see {ARTIFACTS}")
    return None
