"""What vkmorph does with each glTF extension, and the decision for one file (refuse, warn, or read).

glTF says a loader must refuse a file whose ``extensionsRequired`` lists an extension it does not support, and
may ignore an unsupported ``extensionsUsed`` entry. vkmorph never ignores one silently: every extension a file
uses is in ``EXTENSIONS`` (supported, warned with what is lost, or refused) or is unknown, which is warned as
unread data. ``asset.minVersion`` above 2.0 is refused. The README's "glTF extensions" table lists the same.
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

from ..errors import AssetWarning

SUPPORTED, WARNED, REFUSED = "supported", "warned", "refused"


@dataclass(frozen=True)
class Extension:
    status: str      # SUPPORTED: read fully; WARNED: loads, with what is lost; REFUSED: never loads
    what: str        # what vkmorph does with it (supported) or what is lost (warned / refused)


EXTENSIONS = {
    "KHR_mesh_quantization": Extension(SUPPORTED, "integer attributes and morph deltas decoded to float by "
                                                  "vkmorph before import"),
    "EXT_meshopt_compression": Extension(SUPPORTED, "buffer views decoded with meshoptimizer before import"),
    "KHR_draco_mesh_compression": Extension(SUPPORTED, "meshes decoded by Assimp's Draco decoder, checked "
                                                             "against DracoPy's decode"),
    "EXT_mesh_gpu_instancing": Extension(SUPPORTED, "each instance imported as a node of its own (drawn; a "
                                                    "morphing mesh's instances keep the file's default weights)"),
    "KHR_materials_emissive_strength": Extension(SUPPORTED, "emissive factor scaled by the strength"),
    "EXT_texture_webp": Extension(SUPPORTED, "WebP images decoded with Pillow"),
    "KHR_materials_unlit": Extension(SUPPORTED, "drawn as the base colour, without lighting"),
    "KHR_texture_transform": Extension(SUPPORTED, "offset, rotation, scale and texCoord applied per texture (a "
                                                  "normal map keeps the untransformed tangent frame)"),
    "FB_ngon_encoding": Extension(SUPPORTED, "a marker (Assimp's and Facebook's exporters) that the triangles "
                                             "encode n-gons; the triangles are drawn as they are, nothing is lost"),
    "KHR_texture_basisu": Extension(WARNED, "KTX2 images are not decoded (no decoder here); the texture's "
                                            "fallback image is used, or the texture slot stays empty"),
    "KHR_animation_pointer": Extension(WARNED, "channels that animate a JSON pointer are skipped"),
    "KHR_lights_punctual": Extension(WARNED, "the file's lights are not used (vkmorph lights the scene itself)"),
    "KHR_materials_variants": Extension(WARNED, "material variants are not offered; the default material is "
                                                "drawn"),
    "KHR_xmp_json_ld": Extension(WARNED, "XMP metadata is not read"),
    "KHR_materials_pbrSpecularGlossiness": Extension(WARNED, "specular-glossiness materials are drawn with "
                                                             "their metallic-roughness fallback"),
}
for _name in ("clearcoat", "transmission", "volume", "ior", "specular", "sheen", "iridescence", "anisotropy",
              "dispersion", "diffuse_transmission"):
    EXTENSIONS[f"KHR_materials_{_name}"] = Extension(WARNED, f"the {_name.replace('_', ' ')} layer is not "
                                                             "rendered (core metallic-roughness only)")

# What the canonical file handed to Assimp still declares: everything else is decoded or read by vkmorph itself
ASSIMP_READS = ("KHR_draco_mesh_compression",)


def describe(name: str) -> Extension:
    """The entry for ``name``, or the one every unknown extension gets."""
    return EXTENSIONS.get(name, Extension(WARNED, "unknown to vkmorph: its data is not read"))


def _names(doc, key: str) -> list[str]:
    v = doc.json.get(key, [])
    if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
        raise doc.error(key, "must be an array of strings")
    return v


def file_extensions(doc) -> list[dict]:
    """Every extension the file declares: name, required, status and what vkmorph does (``vkmorph info``)."""
    used, required = _names(doc, "extensionsUsed"), _names(doc, "extensionsRequired")
    out = []
    for name in dict.fromkeys(used + required):
        e = describe(name)
        req = name in required
        status = REFUSED if req and e.status != SUPPORTED else e.status
        out.append({"name": name, "required": req, "status": status, "what": e.what})
    return out


def check_extensions(doc) -> None:
    """Refuse what glTF says must not load here (one ``AssetError``); warn once per extension that loses data."""
    asset = doc.json.get("asset", {})
    minv = asset.get("minVersion") if isinstance(asset, dict) else None
    if minv is not None and (not isinstance(minv, str) or _version(minv) is None):
        raise doc.error("asset.minVersion", f"{minv!r} is not a version such as '2.0'")
    if minv is not None and _version(minv) > (2, 0):
        raise doc.error("asset.minVersion", f"{minv!r}: the file needs a glTF {minv} loader; vkmorph reads 2.0")
    exts = file_extensions(doc)
    for e in exts:
        if e["status"] == REFUSED:
            raise doc.error("extensionsRequired", f"{e['name']} is required and not supported ({e['what']})")
    for e in exts:
        if e["status"] == WARNED:
            warnings.warn(AssetWarning(f"file {doc.file}: extension {e['name']}: {e['what']}"), stacklevel=3)


def _version(v: str) -> tuple[int, int] | None:
    major, _, minor = v.partition(".")
    return (int(major), int(minor)) if major.isdigit() and minor.isdigit() else None


__all__ = ["EXTENSIONS", "SUPPORTED", "WARNED", "REFUSED", "check_extensions", "describe", "file_extensions"]
