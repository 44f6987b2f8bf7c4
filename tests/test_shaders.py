"""Committed SPIR-V is fresh, and a broken shader gives glslang's file:line message."""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import ROOT


def test_committed_spirv_is_fresh():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "compile_shaders.py"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


def test_compile_error_names_file_and_line(tmp_path):
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import compile_shaders
    finally:
        sys.path.pop(0)
    src = tmp_path / "bad.comp"
    src.write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {\n  undefined_thing = 1;\n}\n")
    err = compile_shaders.compile_one(src, tmp_path / "bad.spv")
    assert err and "bad.comp:4" in err, err


def test_spirv_loader_caches():
    from vkmorph.gpu.shaders import load_spirv

    assert load_spirv("morph.comp") is load_spirv("morph.comp")
