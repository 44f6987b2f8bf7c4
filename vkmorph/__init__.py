"""vkmorph: GPU morph targets and four-bone skinning on Vulkan.

Layers import one way: asset -> morph -> anim -> gpu -> render -> app. Importing ``vkmorph`` (and the CPU
layers) never loads ``vulkan``; GPU names are resolved lazily on first use.
"""

from __future__ import annotations

from .errors import AssetError, GpuError, UsageError, VkmorphError

__version__ = "0.1.0"
__all__ = ["AssetError", "GpuError", "UsageError", "VkmorphError", "load_scene", "__version__"]


def load_scene(path=None, **options):
    """Import and validate a scene (glTF/FBX/... through Assimp); ``None`` loads the built-in default scene.

    Options (see ``vkmorph.asset.importer.load_scene``): ``isolate``, ``allow_external_uris``, ``validate``."""
    from .asset.importer import load_scene as _load

    return _load(path, **options)
