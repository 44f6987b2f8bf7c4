"""Generated headers and committed SPIR-V are fresh, every generated layout matches its numpy dtype (glslang's
reflection of the generated GLSL against the declaration), and a broken shader gives glslang's file:line message."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import ROOT

sys.path.insert(0, str(ROOT / "tools"))
try:
    import compile_shaders
finally:
    sys.path.pop(0)

from vkmorph.gpu import interface as I  # noqa: E402


def test_committed_headers_and_spirv_are_fresh():
    r = subprocess.run([sys.executable, str(ROOT / "tools" / "compile_shaders.py"), "--check"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("iface", I.INTERFACES, ids=[i.name for i in I.INTERFACES])
def test_generated_layout_matches_declaration(iface):
    """Every struct, uniform block, push-constant block, binding number and vertex input of every interface."""
    refl = compile_shaders.reflect(iface)
    checked = sum(len(s.dtype.names) for s in iface.structs()) + len(iface.vertex_attributes())
    checked += sum(len(b.element.dtype.names) for b in iface.bindings if b.kind == I.UNIFORM)
    checked += len(iface.push.struct.dtype.names) if iface.push else 0
    assert checked and refl, iface.name
    assert compile_shaders.layout_problems(iface) == []


def test_layout_check_catches_a_mismatch():
    """A vec3 followed by a vec4 is 12 bytes apart in numpy but 16 in std430/std140: all three blocks flag it."""
    bad = np.dtype([("a", "<f4", 3), ("b", "<f4", 4)])
    iface = I.ShaderInterface(
        "bad", ("bad.comp",), local_size=1,
        bindings=(I.Binding("items", 0, I.STORAGE, (I.COMPUTE,), I.Struct("Bad", bad), "readonly"),
                  I.Binding("consts", 1, I.UNIFORM, (I.COMPUTE,), I.Struct("Consts", bad), instance="k")),
        push=I.PushConstants(I.Struct("Push", np.dtype([("count", "<u4"), ("m", "<f4", 16)])), (I.COMPUTE,)))
    problems = compile_shaders.layout_problems(iface)
    assert any("bad.items: b (vec4) is at byte 16 in GLSL, 12" in p for p in problems), problems
    assert any("bad.items: array stride 32 in GLSL, 28" in p for p in problems), problems
    assert any("bad.consts: b (vec4) is at byte 16" in p for p in problems), problems
    assert any("bad.push: m (mat4) is at byte 16 in GLSL, 4" in p for p in problems), problems


def test_layout_check_catches_a_wrong_binding_and_type():
    header = I.glsl_header(I.COPY).replace("binding = 1", "binding = 3").replace("uint count;", "int count;")
    problems = compile_shaders.layout_problems(I.COPY, header)
    assert "copy.dst: binding 3 in GLSL, 1 declared" in problems, problems
    assert any(p.startswith("copy.push: count is GL type 0x1404") for p in problems), problems


def test_stale_header_fails_check(tmp_path, monkeypatch):
    monkeypatch.setattr(compile_shaders, "GEN", tmp_path)
    assert len(compile_shaders.write_headers(check=True)) == len(compile_shaders.headers())   # all missing
    compile_shaders.write_headers(check=False)
    assert compile_shaders.write_headers(check=True) == []
    (tmp_path / "copy.glsl").write_text((tmp_path / "copy.glsl").read_text().replace("256", "128"))
    (tmp_path / "old.glsl").write_text("// orphan\n")
    assert compile_shaders.write_headers(check=True) == ["gen/copy.glsl", "gen/old.glsl"]
    compile_shaders.write_headers(check=False)
    assert compile_shaders.write_headers(check=True) == [] and not (tmp_path / "old.glsl").exists()


def test_names_are_unique_and_constants_agree():
    from vkmorph.morph.reference import NORMALIZE_EPSILON

    assert len({i.name for i in I.INTERFACES}) == len(I.INTERFACES)
    for iface in I.INTERFACES:
        slots = [(b.set, b.binding) for b in iface.bindings]
        assert len(set(slots)) == len(slots), iface.name
        assert len({b.name for b in iface.bindings}) == len(iface.bindings), iface.name
        for shader in iface.shaders:
            assert f'#include "gen/{iface.name}.glsl"' in _with_includes(ROOT / "glsl" / shader), (iface.name, shader)
    assert I.MORPH.constant("NORMALIZE_EPSILON") == NORMALIZE_EPSILON


_LOCATION_DECL = re.compile(r"layout\s*\(\s*location\s*=\s*\d+\s*\)\s*(in|out)\b")


def test_varyings_are_declared_only_by_the_generator():
    """No hand-written ``layout(location = N) in/out`` outside glsl/gen/; every stage link's shaders include its
    generated side, locations are unique per link, and a shader includes no generated varyings it is not listed for."""
    hand = [f"{p.name}:{n}" for p in sorted((ROOT / "glsl").iterdir()) if p.is_file()
            for n, line in enumerate(p.read_text().splitlines(), 1) if _LOCATION_DECL.search(line)]
    assert hand == [], f"location declared by hand (declare it in interface.py STAGE_LINKS): {hand}"
    included = {}
    for link in I.STAGE_LINKS:
        assert len({v.location for v in link.varyings}) == len(link.varyings), link.name
        assert len({v.name for v in link.varyings}) == len(link.varyings), link.name
        for header, (_, shaders) in link.headers().items():
            for shader in shaders:
                included.setdefault(shader, set()).add(header)
    for shader in sorted(p.name for p in compile_shaders.sources()):
        text = _with_includes(ROOT / "glsl" / shader)
        used = set(re.findall(r'#include "gen/(\w+_(?:in|out)\.glsl)"', text))
        assert used == included.get(shader, set()), (shader, used, included.get(shader))


def test_compiled_stages_agree_on_every_location():
    """The committed SPIR-V, read instruction by instruction: every producer's output at a location has the type of
    every consumer's input there and of the declaration."""
    io = compile_shaders.stage_io((compile_shaders.SPIRV / "skin.vert.spv").read_bytes())
    assert io["out"] == {v.location: (v.glsl, "out" + I.pascal(v.name)) for v in I.SCENE_VARYINGS.varyings}
    assert io["in"][0] == ("vec3", "inPosition") and io["in"][4] == ("uvec4", "inJoints")
    assert compile_shaders.link_problems() == []


def test_link_check_catches_a_mismatch(tmp_path):
    """A fragment shader that reads the overlay's uv as a vec3 and a location nothing writes."""
    src = tmp_path / "bad.frag"
    src.write_text("#version 450\nlayout(location = 0) in vec4 inColor;\nlayout(location = 1) in vec3 inUv;\n"
                   "layout(location = 3) in float inExtra;\nlayout(location = 0) out vec4 outColor;\n"
                   "void main() { outColor = inColor + vec4(inUv, inExtra); }\n")
    assert compile_shaders.compile_one(src, tmp_path / "bad.spv") is None
    problems = compile_shaders.link_problems({"ui.frag": (tmp_path / "bad.spv").read_bytes()})
    assert "ui_varyings: ui.frag in location 1 (inUv) is vec3, declared vec2" in problems, problems
    assert "ui_varyings: location 1 is vec2 outUv in ui.vert, vec3 inUv in ui.frag" in problems, problems
    assert "ui_varyings: ui.frag reads location 3 (inExtra), ui.vert writes none" in problems, problems


def _with_includes(path) -> str:
    """A shader's text with its non-generated local includes inlined."""
    text = path.read_text()
    for inc in [ln.split('"')[1] for ln in text.splitlines() if ln.startswith("#include") and "gen/" not in ln]:
        text += _with_includes(path.parent / inc)
    return text


def test_compile_error_names_file_and_line(tmp_path):
    src = tmp_path / "bad.comp"
    src.write_text("#version 450\nlayout(local_size_x = 1) in;\nvoid main() {\n  undefined_thing = 1;\n}\n")
    err = compile_shaders.compile_one(src, tmp_path / "bad.spv")
    assert err and "bad.comp:4" in err, err


def test_spirv_loader_caches():
    from vkmorph.gpu.shaders import load_spirv

    assert load_spirv("morph.comp") is load_spirv("morph.comp")
