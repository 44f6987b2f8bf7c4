"""Cached SPIR-V loading. SPIR-V is compiled offline by tools/compile_shaders.py and committed under the top-level
spirv/; a wheel ships it inside the package as vkmorph/spirv/ (pyproject.toml's package-dir mapping)."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from ..errors import GpuError

_PKG = Path(__file__).resolve().parents[1]
# a checkout's (or an editable install's) top-level spirv/ first — only where the folder above the package is
# vkmorph's checkout (its glsl/ beside it), never an unrelated site-packages/spirv — then the installed copy
_CHECKOUT = _PKG.parent
SPIRV_DIRS = ((_CHECKOUT / "spirv",) if (_CHECKOUT / "glsl").is_dir() else ()) + (_PKG / "spirv",)


@cache
def load_spirv(name: str) -> bytes:
    """Bytes of ``spirv/<name>.spv`` (e.g. ``morph.comp``); cached so pipelines share one read."""
    for d in SPIRV_DIRS:
        p = d / f"{name}.spv"
        if p.is_file():
            code = p.read_bytes()
            if len(code) % 4 or code[:4] != b"\x03\x02\x23\x07":
                raise GpuError(f"{p} is not SPIR-V; run tools/compile_shaders.py")
            return code
    raise GpuError(f"SPIR-V {name}.spv not found in {[str(d) for d in SPIRV_DIRS]}; run tools/compile_shaders.py")
