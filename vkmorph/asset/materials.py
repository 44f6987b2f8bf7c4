"""Materials (glTF 2.0 metallic-roughness) read from a glTF/GLB file through the same ``GltfDocument`` as its
geometry (URI policy included; KHR_texture_transform, KHR_materials_unlit, KHR_materials_emissive_strength,
EXT_texture_webp), or from Assimp's material properties for other formats (FBX, Collada: diffuse colour, diffuse
texture, two-sided, opacity).

Nothing here touches the GPU. Images stay undecoded until the renderer asks (``ImageSource.decode``, Pillow).
Bad material data never stops an import: a missing image file, an undecodable image or a texture index out of
range leaves that texture slot empty (glTF's "no texture" meaning: factor only) and records one line naming the
material and the image in ``Material.problems``; the renderer reports them as warnings.
"""

from __future__ import annotations

import base64
import ctypes
import io
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import AssetError, abridged

ALPHA_MODES = ("OPAQUE", "MASK", "BLEND")
# glTF sampler enums (OpenGL values)
_NEAREST, _LINEAR = 9728, 9729
_MIN_NEAREST = {9728, 9984, 9986}          # NEAREST, NEAREST_MIPMAP_NEAREST, NEAREST_MIPMAP_LINEAR
_MIP_NEAREST = {9984, 9985}                # *_MIPMAP_NEAREST
_NO_MIP = {9728, 9729}                     # minFilter without mipmaps
_WRAP = {33071: "clamp", 33648: "mirror", 10497: "repeat"}


class MaterialDataError(Exception):
    """An image that cannot be read or decoded (turned into a warning by the caller)."""


@dataclass(frozen=True)
class SamplerSettings:
    """The file's sampler: filters, whether the min filter uses mipmaps, wrap modes."""

    mag_linear: bool = True
    min_linear: bool = True
    mip_linear: bool = True
    mipmaps: bool = True
    wrap_s: str = "repeat"    # repeat | clamp | mirror
    wrap_t: str = "repeat"

    @classmethod
    def from_gltf(cls, s: dict) -> SamplerSettings:
        mag, mn = s.get("magFilter"), s.get("minFilter")
        return cls(mag_linear=mag != _NEAREST, min_linear=mn not in _MIN_NEAREST,
                   mip_linear=mn not in _MIP_NEAREST, mipmaps=mn not in _NO_MIP,
                   wrap_s=_WRAP.get(s.get("wrapS", 10497), "repeat"), wrap_t=_WRAP.get(s.get("wrapT", 10497), "repeat"))


@dataclass
class ImageSource:
    """Encoded image bytes (embedded) or a file path (external), decoded on demand with Pillow."""

    name: str
    key: str                      # identity for de-duplication (file index or path)
    data: bytes | None = None
    path: Path | None = None

    def decode(self, max_dimension: int | None = None) -> np.ndarray:
        """(H, W, 4) uint8 RGBA within the image limits (``asset.images``); raises MaterialDataError."""
        from .images import decode_image

        return decode_image(self.data, self.path, max_dimension)


@dataclass
class TextureRef:
    image: ImageSource
    sampler: SamplerSettings = SamplerSettings()
    texcoord: int = 0              # TEXCOORD_n set (0 or 1)
    scale: float = 1.0             # normalTexture.scale / occlusionTexture.strength
    # KHR_texture_transform as the rows of a 2 x 3 affine map: uv' = (a u + b v + c, d u + e v + f), glTF's
    # (v-down) coordinates; identity without the extension
    transform: tuple = (1.0, 0.0, 0.0, 0.0, 1.0, 0.0)


@dataclass
class Material:
    name: str = "default"
    base_color_factor: tuple = (1.0, 1.0, 1.0, 1.0)
    base_color_texture: TextureRef | None = None
    metallic_factor: float = 1.0
    roughness_factor: float = 1.0
    metallic_roughness_texture: TextureRef | None = None
    normal_texture: TextureRef | None = None
    occlusion_texture: TextureRef | None = None
    emissive_factor: tuple = (0.0, 0.0, 0.0)
    emissive_texture: TextureRef | None = None
    alpha_mode: str = "OPAQUE"
    alpha_cutoff: float = 0.5
    double_sided: bool = False
    problems: list[str] = field(default_factory=list)
    unnamed: bool = False          # the file gave no name (``name`` was made up)
    unlit: bool = False            # KHR_materials_unlit: drawn as base colour, no lighting

    TEXTURE_SLOTS = ("base_color_texture", "metallic_roughness_texture", "normal_texture", "occlusion_texture",
                     "emissive_texture")

    @classmethod
    def plain(cls, rgba, name: str = "default") -> Material:
        """A dielectric of one colour (the ground, files without materials)."""
        return cls(name=name, base_color_factor=tuple(float(x) for x in rgba), metallic_factor=0.0,
                   roughness_factor=0.6, double_sided=True)


# ---------------------------------------------------------------------------------------------- glTF
def _finite(values, default, n):
    try:
        arr = [float(x) for x in values]
    except (TypeError, ValueError):
        return default
    return tuple(arr) if len(arr) == n and all(np.isfinite(arr)) else default


def gltf_image(doc, i: int) -> ImageSource:
    """Image ``i`` of a ``GltfDocument``: its bytes (bufferView, ``data:`` URI) or its file (a relative URI, which
    the document has already checked against its URI policy), read through the same document as the geometry."""
    img = doc.json["images"][i]
    name = img.get("name") or (img.get("uri", "")[:60] if isinstance(img.get("uri"), str) else "") or f"image {i}"
    key = f"{doc.file}#{i}"
    if "uri" in img:
        uri = img["uri"]
        if uri.startswith("data:"):
            try:
                data = base64.b64decode(uri.split(",", 1)[1])
            except (IndexError, ValueError):
                data = b""
            return ImageSource(name=name, key=key, data=data)
        return ImageSource(name=name, key=key, path=doc._uri_path(uri, f"images[{i}].uri"))
    try:
        data = bytes(doc.view_range(img["bufferView"], f"images[{i}].bufferView")[0])
    except (KeyError, TypeError, AssetError):  # a bad view is a missing image, reported when decoded
        data = b""
    return ImageSource(name=name, key=key, data=data)


def _texture_source(tex: dict):
    """The image a texture shows: EXT_texture_webp's source first (Pillow decodes WebP), then the core source;
    a KHR_texture_basisu image is never chosen (no KTX2 decoder here)."""
    ext = tex.get("extensions") if isinstance(tex.get("extensions"), dict) else {}
    webp = ext.get("EXT_texture_webp")
    if isinstance(webp, dict) and "source" in webp:
        return webp["source"]
    if "source" not in tex and isinstance(ext.get("KHR_texture_basisu"), dict):
        return "basisu"
    return tex.get("source")


def texture_transform(tt: dict) -> tuple:
    """KHR_texture_transform's T(offset) x R(rotation) x S(scale) as affine rows (a, b, c, d, e, f); values
    that are not finite numbers count as absent."""
    off = _finite(tt.get("offset", (0, 0)), (0.0, 0.0), 2)
    rot = _finite([tt.get("rotation", 0.0)], (0.0,), 1)[0]
    sx, sy = _finite(tt.get("scale", (1, 1)), (1.0, 1.0), 2)
    c, s = float(np.cos(rot)), float(np.sin(rot))
    # the extension's rotation matrix is [[cos, sin], [-sin, cos]] (counter-clockwise in v-down coordinates)
    return (c * sx, s * sy, off[0], -s * sx, c * sy, off[1])


def gltf_materials(g) -> list[Material]:
    """Every material of a ``GltfDocument``, in file order."""
    doc = g.json
    textures, images, samplers = doc.get("textures", []), doc.get("images", []), doc.get("samplers", [])
    out = []
    for m_i, m in enumerate(doc.get("materials", [])):
        mat = Material(name=m.get("name") or f"material {m_i}", unnamed=not m.get("name"))

        def tex(info, slot, mat=mat):
            if not isinstance(info, dict):
                return None
            t = info.get("index")
            if not isinstance(t, int) or not 0 <= t < len(textures):
                mat.problems.append(f"material {abridged(mat.name)}: {slot} refers to texture {t!r}, but the file has "
                                    f"{len(textures)} textures; ignored")
                return None
            src = _texture_source(textures[t])
            if src == "basisu":
                mat.problems.append(f"material {abridged(mat.name)}: texture {t} has only a KTX2 image "
                                    "(KHR_texture_basisu), which vkmorph cannot decode; ignored")
                return None
            if not isinstance(src, int) or not 0 <= src < len(images):
                mat.problems.append(f"material {abridged(mat.name)}: texture {t} refers to image {src!r}, but the file "
                                    f"has {len(images)} images; ignored")
                return None
            s = textures[t].get("sampler")
            sampler = SamplerSettings()
            if isinstance(s, int) and 0 <= s < len(samplers) and isinstance(samplers[s], dict):
                sampler = SamplerSettings.from_gltf(samplers[s])
            elif s is not None:
                mat.problems.append(f"material {abridged(mat.name)}: texture {t} refers to sampler {s!r}, but the file "
                                    f"has {len(samplers)} samplers; using the default sampler")
            transform = TextureRef.transform
            tt = (info.get("extensions") or {}).get("KHR_texture_transform")
            coord = info.get("texCoord", 0)
            if isinstance(tt, dict):
                transform = texture_transform(tt)
                coord = tt.get("texCoord", coord)
            if coord not in (0, 1):
                mat.problems.append(f"material {abridged(mat.name)}: {slot} uses TEXCOORD_{coord}; only 0 and 1 are "
                                    "supported, using 0")
                coord = 0
            scale = info.get("scale", info.get("strength", 1.0))
            return TextureRef(image=gltf_image(g, src), sampler=sampler, texcoord=coord,
                              scale=float(scale) if np.isfinite(scale) else 1.0, transform=transform)

        pbr = m.get("pbrMetallicRoughness", {})
        mat.base_color_factor = _finite(pbr.get("baseColorFactor", (1, 1, 1, 1)), (1.0, 1.0, 1.0, 1.0), 4)
        mat.base_color_texture = tex(pbr.get("baseColorTexture"), "baseColorTexture")
        mat.metallic_factor = _finite([pbr.get("metallicFactor", 1.0)], (1.0,), 1)[0]
        mat.roughness_factor = _finite([pbr.get("roughnessFactor", 1.0)], (1.0,), 1)[0]
        mat.metallic_roughness_texture = tex(pbr.get("metallicRoughnessTexture"), "metallicRoughnessTexture")
        mat.normal_texture = tex(m.get("normalTexture"), "normalTexture")
        mat.occlusion_texture = tex(m.get("occlusionTexture"), "occlusionTexture")
        mat.emissive_factor = _finite(m.get("emissiveFactor", (0, 0, 0)), (0.0, 0.0, 0.0), 3)
        strength = (m.get("extensions") or {}).get("KHR_materials_emissive_strength")
        if isinstance(strength, dict):
            k = _finite([strength.get("emissiveStrength", 1.0)], (1.0,), 1)[0]
            mat.emissive_factor = tuple(c * max(k, 0.0) for c in mat.emissive_factor)
        mat.emissive_texture = tex(m.get("emissiveTexture"), "emissiveTexture")
        mode = m.get("alphaMode", "OPAQUE")
        if mode not in ALPHA_MODES:
            mat.problems.append(f"material {abridged(mat.name)}: unknown alphaMode {mode!r}; using OPAQUE")
            mode = "OPAQUE"
        mat.alpha_mode = mode
        mat.alpha_cutoff = _finite([m.get("alphaCutoff", 0.5)], (0.5,), 1)[0]
        mat.double_sided = bool(m.get("doubleSided", False))
        mat.unlit = isinstance((m.get("extensions") or {}).get("KHR_materials_unlit"), dict)
        out.append(mat)
    return out


# ---------------------------------------------------------------------------------------------- Assimp
_PTI_FLOAT, _PTI_STRING, _PTI_INT = 1, 3, 4
_TEX_DIFFUSE, _TEX_BASE_COLOR = 1, 12


def assimp_material(material, file: str, embedded: list[ImageSource], index: int) -> Material:
    """What Assimp gives for non-glTF formats: diffuse colour, diffuse texture, two-sided, opacity."""
    props = _assimp_props(material)
    name = props.get(("?mat.name", 0)) or f"material {index}"
    mat = Material.plain((0.8, 0.8, 0.8, 1.0), name=str(name))
    mat.double_sided = bool(props.get(("$mat.twosided", 0), 0))
    for key in ("$clr.base", "$clr.diffuse"):
        v = props.get((key, 0))
        if isinstance(v, list) and len(v) >= 3 and all(np.isfinite(v)):
            mat.base_color_factor = tuple(float(x) for x in (v + [1.0])[:4])
            break
    opacity = props.get(("$mat.opacity", 0))
    if isinstance(opacity, list) and opacity and np.isfinite(opacity[0]) and opacity[0] < 1.0:
        mat.base_color_factor = (*mat.base_color_factor[:3], float(opacity[0]))
        mat.alpha_mode = "BLEND"
    for sem in (_TEX_BASE_COLOR, _TEX_DIFFUSE):
        f = props.get(("$tex.file", sem))
        if isinstance(f, str) and f:
            mat.base_color_texture = TextureRef(image=_assimp_image(f, file, embedded))
            break
    return mat


def _assimp_props(material) -> dict:
    from . import assimp_structs as A

    props: dict[tuple[str, int], object] = {}
    for i in range(material.mNumProperties):
        p = material.mProperties[i].contents
        key = A.string(p.mKey)
        if p.mType == _PTI_FLOAT and p.mDataLength >= 4:
            n = p.mDataLength // 4
            props[(key, p.mSemantic)] = list(ctypes.cast(p.mData, ctypes.POINTER(ctypes.c_float * n)).contents)
        elif p.mType == _PTI_INT and p.mDataLength >= 4:
            props[(key, p.mSemantic)] = ctypes.cast(p.mData, ctypes.POINTER(ctypes.c_int)).contents.value
        elif p.mType == _PTI_STRING and p.mDataLength > 4:
            length = ctypes.cast(p.mData, ctypes.POINTER(ctypes.c_uint32)).contents.value
            raw = ctypes.string_at(ctypes.cast(p.mData, ctypes.c_void_p).value + 4, length)
            props[(key, p.mSemantic)] = raw.decode("utf-8", errors="replace")
    return props


def _assimp_image(ref: str, file: str, embedded: list[ImageSource]) -> ImageSource:
    if ref.startswith("*") and ref[1:].isdigit() and int(ref[1:]) < len(embedded):
        return embedded[int(ref[1:])]
    p = Path(ref.replace("\\", "/"))
    if not p.is_absolute():
        p = Path(file).parent / p
    return ImageSource(name=ref, key=str(p), path=p)


def assimp_embedded_images(raw) -> list[ImageSource]:
    """Compressed embedded textures (``aiTexture`` with mHeight == 0: PNG/JPEG bytes)."""
    out = []
    for i in range(raw.mNumTextures):
        t = raw.mTextures[i].contents
        if t.mHeight == 0 and t.mWidth > 0:
            data = ctypes.string_at(ctypes.cast(t.pcData, ctypes.c_void_p).value, t.mWidth)
        else:  # uncompressed BGRA texels: encoded as PNG so every image source decodes the same way
            n = t.mWidth * t.mHeight
            texels = np.ctypeslib.as_array(ctypes.cast(t.pcData, ctypes.POINTER(ctypes.c_uint8)), (n * 4,))
            rgba = texels.reshape(t.mHeight, t.mWidth, 4)[..., [2, 1, 0, 3]]
            buf = io.BytesIO()
            from PIL import Image

            Image.fromarray(np.ascontiguousarray(rgba)).save(buf, format="PNG")
            data = buf.getvalue()
        out.append(ImageSource(name=f"*{i}", key=f"embedded {i}", data=data))
    return out
