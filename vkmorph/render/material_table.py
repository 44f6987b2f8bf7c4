"""Materials on the GPU: decoded, mip-mapped textures, the file's samplers, one uniform block and one descriptor
set (set 2 of the forward pipeline) per material.

Bad material data (an image that is missing or does not decode, references the importer already dropped) leaves
that texture slot empty, which glTF defines as "factor only", and adds one line to ``warnings`` naming the
material and the image. Nothing here raises for bad material data.
"""

from __future__ import annotations

import numpy as np

from ..asset.materials import Material, MaterialDataError, SamplerSettings, TextureRef
from ..gpu import graphics as G
from ..gpu import memory as M
from ..gpu.context import Context
from ..gpu.image import Image, Sampler, TextureData, upload_textures
from ..gpu.interface import MATERIAL_UBO, SCENE, UV_XFORM_FIELDS
from ..gpu.pipeline import descriptor_type, set_layout_bindings
from ..gpu.vk import vk

MATERIAL_SET = 2
UBO_STRIDE = 256                      # >= every device's minUniformBufferOffsetAlignment
ALPHA_CODES = {m: SCENE.constant(f"ALPHA_{m}") for m in ("OPAQUE", "MASK", "BLEND")}
# texture slots (bit i of modes.y is slot i): (Material attribute, interface binding, sRGB?)
SLOTS = (("base_color_texture", "base_color_tex", True),
         ("metallic_roughness_texture", "metallic_roughness_tex", False),
         ("normal_texture", "normal_tex", False), ("occlusion_texture", "occlusion_tex", False),
         ("emissive_texture", "emissive_tex", True))


def material_block(m: Material, has: dict[str, bool]) -> np.ndarray:
    """The uniform block of ``m``; ``has[slot]`` says whether that texture made it to the GPU."""
    u = np.zeros(1, MATERIAL_UBO)
    u["base_color"] = m.base_color_factor
    normal_scale = m.normal_texture.scale if m.normal_texture is not None else 1.0
    u["emissive"] = (*m.emissive_factor, normal_scale)
    strength = m.occlusion_texture.scale if m.occlusion_texture is not None and has["occlusion_texture"] else 0.0
    u["params"] = (m.metallic_factor, m.roughness_factor, strength, m.alpha_cutoff)
    uv1 = 0
    for i, (slot, _, _) in enumerate(SLOTS):
        ref = getattr(m, slot)
        if ref is not None and ref.texcoord == 1:
            uv1 |= 1 << i
    u["modes"] = (ALPHA_CODES[m.alpha_mode], uv1, int(has["normal_texture"]), int(m.unlit))
    rows = np.zeros((12, 4), np.float32)
    for i, (slot, _, _) in enumerate(SLOTS):
        ref = getattr(m, slot)
        a, b, c, d, e, f = ref.transform if ref is not None else TextureRef.transform
        rows[2 * i, :3], rows[2 * i + 1, :3] = (a, b, c), (d, e, f)
    for k, name in enumerate(UV_XFORM_FIELDS):   # a mat4 field is column-major: its four columns in order
        u[name] = rows[4 * k:4 * k + 4].reshape(16)
    return u


class MaterialTable:
    """Descriptor sets for ``materials`` (in that order); ``set_of(i)`` for drawing."""

    def __init__(self, ctx: Context, group: G.ObjectGroup, materials: list[Material], mipmaps: bool = True):
        self.ctx, self.materials = ctx, materials
        self.warnings: list[str] = [p for m in materials for p in m.problems]
        self._owned: list = []          # images, samplers, buffers: destroyed in reverse order
        self.layout = G.set_layout(ctx, group, set_layout_bindings(SCENE, MATERIAL_SET))
        n = len(materials)
        counts: dict[int, int] = {}
        for b in SCENE.set_bindings(MATERIAL_SET):
            counts[descriptor_type(b)] = counts.get(descriptor_type(b), 0) + n
        self.pool = G.descriptor_pool(ctx, group, n, counts)
        try:
            self._build(group, mipmaps)
        except BaseException:
            self.destroy()
            raise

    def _build(self, group, mipmaps: bool) -> None:
        ctx = self.ctx
        # decode every distinct (image, colour space) once; failures become warnings and empty slots
        keys: dict[tuple[str, bool], int] = {}
        data: list[TextureData] = []
        per_material: list[dict[str, tuple[int, SamplerSettings] | None]] = []
        for m in self.materials:
            slots = {}
            for slot, _, srgb in SLOTS:
                ref: TextureRef | None = getattr(m, slot)
                slots[slot] = None
                if ref is None:
                    continue
                k = (ref.image.key, srgb)
                if k not in keys:
                    try:
                        rgba = ref.image.decode()
                    except MaterialDataError as exc:
                        self.warnings.append(f"material {m.name!r} image {ref.image.name!r}: {exc}; "
                                             "rendered without it")
                        keys[k] = -1
                    else:
                        rgba = self._fit(rgba, m.name, ref.image.name)
                        keys[k] = len(data)
                        data.append(TextureData(rgba, srgb, mipmaps=mipmaps and ref.sampler.mipmaps,
                                                name=f"texture {ref.image.name}"))
                elif keys[k] < 0:
                    self.warnings.append(f"material {m.name!r} image {ref.image.name!r}: unusable (see above); "
                                         "rendered without it")
                if keys[k] >= 0:
                    settings = ref.sampler if mipmaps else _without_mips(ref.sampler)
                    slots[slot] = (keys[k], settings)
            per_material.append(slots)
        white = np.full((1, 1, 4), 255, np.uint8)
        data += [TextureData(white, True, False, "white sRGB"), TextureData(white, False, False, "white linear")]
        images: list[Image] = upload_textures(ctx, data)
        self._owned += images
        default_image = {True: images[-2], False: images[-1]}
        samplers: dict[SamplerSettings, Sampler] = {}

        def sampler(settings: SamplerSettings) -> Sampler:
            if settings not in samplers:
                samplers[settings] = Sampler(ctx, settings=settings)
                self._owned.append(samplers[settings])
            return samplers[settings]

        blocks = np.zeros(max(1, len(self.materials)) * UBO_STRIDE, np.uint8)
        for i, (m, slots) in enumerate(zip(self.materials, per_material)):
            has = {slot: slots[slot] is not None for slot, _, _ in SLOTS}
            blocks[i * UBO_STRIDE:i * UBO_STRIDE + MATERIAL_UBO.itemsize] = material_block(m, has).view(np.uint8)
        self.ubo = M.device_buffer(ctx, blocks, M.UNIFORM, name="material constants")
        self._owned.append(self.ubo)
        self.sets = []
        for i, slots in enumerate(per_material):
            s = G.allocate_set(ctx, self.pool, self.layout)
            ubo = SCENE["material"]
            G.write_buffer(ctx, s, ubo.binding, descriptor_type(ubo), self.ubo.handle, i * UBO_STRIDE,
                           MATERIAL_UBO.itemsize)
            for slot, binding, srgb in SLOTS:
                if slots[slot] is None:
                    img, smp = default_image[srgb], sampler(SamplerSettings())
                else:
                    img, smp = images[slots[slot][0]], sampler(slots[slot][1])
                G.write_image(ctx, s, SCENE[binding].binding, img.view, smp.handle,
                              vk.VK_IMAGE_LAYOUT_SHADER_READ_ONLY_OPTIMAL)
            self.sets.append(s)
        self.texture_count = len(data) - 2
        self.mip_levels = [img.mip_levels for img in images[:-2]]

    def _fit(self, rgba: np.ndarray, material: str, image: str) -> np.ndarray:
        """Images larger than the device's maxImageDimension2D are scaled down (with a warning)."""
        limit = vk.vkGetPhysicalDeviceProperties(self.ctx.physical_device).limits.maxImageDimension2D
        fitted = fit_to_limit(rgba, limit)
        if fitted is rgba:
            return rgba
        self.warnings.append(f"material {material!r} image {image!r}: {rgba.shape[1]}x{rgba.shape[0]} exceeds "
                             f"the device's {limit}x{limit}; scaled to {fitted.shape[1]}x{fitted.shape[0]}")
        return fitted

    def destroy(self) -> None:
        while self._owned:
            self._owned.pop().destroy()


def fit_to_limit(rgba: np.ndarray, limit: int) -> np.ndarray:
    """``rgba`` itself when both sides are within ``limit``, else a Lanczos-scaled copy whose longer side is it."""
    h, w = rgba.shape[:2]
    if max(h, w) <= limit:
        return rgba
    from PIL import Image as PILImage

    scale = limit / max(h, w)
    size = (max(1, round(w * scale)), max(1, round(h * scale)))
    return np.asarray(PILImage.fromarray(rgba).resize(size, PILImage.LANCZOS))


def _without_mips(s: SamplerSettings) -> SamplerSettings:
    return SamplerSettings(s.mag_linear, s.min_linear, s.mip_linear, False, s.wrap_s, s.wrap_t)
