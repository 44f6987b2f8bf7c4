#!/usr/bin/env python3
"""Generate glsl/gen/*.glsl from vkmorph/gpu/interface.py, then compile glsl/*.comp|vert|frag to spirv/<name>.spv
with glslangValidator (Vulkan 1.2 target env).

    python tools/compile_shaders.py            # (re)generate the headers and (re)compile everything
    python tools/compile_shaders.py --check    # exit 1 when a generated header or committed .spv is missing
                                               # or stale, or a generated layout disagrees with its dtype

Staleness is decided by generating / compiling again into a temporary folder and comparing bytes, so an edit to
an included file is caught too. Compile errors print glslang's own ``ERROR: file:line: message`` lines.
Every generated header is also compiled into a probe shader and glslang's reflection (offsets, array strides,
block sizes, bindings, vertex inputs) is compared with the numpy dtypes it came from (``layout_problems``).
"""

from __future__ import annotations

import argparse
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # run as a script from a checkout
    sys.path.insert(0, str(ROOT))

from vkmorph.gpu import interface as I  # noqa: E402  (after the sys.path fix)

GLSL = ROOT / "glsl"
GEN = GLSL / "gen"
SPIRV = ROOT / "spirv"  # top level; wheels ship it as vkmorph/spirv/ (pyproject.toml's package-dir mapping)
STAGES = (".comp", ".vert", ".frag")


def sources() -> list[Path]:
    return sorted(p for p in GLSL.iterdir() if p.suffix in STAGES)


def headers(interfaces=I.INTERFACES) -> dict[str, str]:
    """gen/ file name -> text, for every declared interface and both sides of every stage link."""
    out = {f"{i.name}.glsl": I.glsl_header(i) for i in interfaces}
    for link in I.STAGE_LINKS:
        out.update({name: I.glsl_varyings(link, direction) for name, (direction, _) in link.headers().items()})
    return out


def _glslang(args: list[str]) -> subprocess.CompletedProcess | str:
    exe = shutil.which("glslangValidator")
    if exe is None:
        return "glslangValidator not found: `apt-get install glslang-tools`"
    return subprocess.run([exe, "-V", "--target-env", "vulkan1.2", *args], capture_output=True, text=True)


def compile_one(src: Path, out: Path) -> str | None:
    """Compile ``src`` to ``out``; returns glslang's error text on failure, None on success."""
    proc = _glslang(["-I" + str(GLSL), "-o", str(out), str(src)])
    if isinstance(proc, str):
        return proc
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln or "error" in ln]
        return "\n".join(lines) or proc.stdout + proc.stderr
    return None


# ------------------------------------------------------------------------------------------- layout check
def _use(typ: str, expr: str) -> str:
    """A float expression that reads ``expr`` (so glslang keeps the block in its reflection)."""
    if typ in ("samplerBuffer", "usamplerBuffer"):
        return f"float(textureSize({expr}))"
    if typ.startswith("sampler"):
        return f"float(textureSize({expr}, 0).x)"
    if typ == "mat4":
        return f"{expr}[0][0]"
    if "vec" in typ:
        return f"float({expr}[0])"
    return f"float({expr})"


def probe_source(iface: I.ShaderInterface, header: str) -> str:
    """A shader that declares ``header`` and reads one member of every block and every vertex input."""
    uses = []
    for b in iface.bindings:
        ref = f"{b.instance}.{b.glsl_name}" if b.instance else b.glsl_name
        if b.kind in (I.SAMPLER, I.TEXEL):
            uses.append(_use(b.element, ref))
        elif b.kind == I.UNIFORM:
            typ, name, _ = b.element.fields()[0]
            uses.append(_use(typ, f"{b.instance}.{name}" if b.instance else name))
        elif b.kind == I.UNIFORM_ARRAY:
            uses.append(_use(b.element, f"{ref}[0]"))
        else:
            uses.append(f"float({ref}.length())")
    if iface.push is not None:
        typ, name, _ = iface.push.struct.fields()[0]
        uses.append(_use(typ, f"{iface.push.instance}.{name}"))
    uses += [_use(a.glsl, f"in{I.pascal(a.name)}") for a in iface.vertex_attributes()]
    body = "    float p = 0.0;\n" + "".join(f"    p += {u};\n" for u in uses)
    if iface.stage == I.VERTEX:
        body += "    gl_Position = vec4(p);\n"
    exts = "".join(f"#extension {e} : require\n" for e in iface.extensions)
    return f"#version 450\n{exts}{header}\nvoid main() {{\n{body}}}\n"


_LINE = re.compile(r"^(?P<name>[^:]+): offset (?P<offset>-?\d+), type (?P<type>[0-9a-f]+), size (?P<size>\d+), "
                   r"index (?P<index>-?\d+), binding (?P<binding>-?\d+), stages \d+(?P<rest>.*)$")


def reflect(iface: I.ShaderInterface, header: str | None = None) -> dict[str, dict[str, dict]]:
    """glslang's reflection of a probe shader over the interface's header: {section: {name: fields}}."""
    header = I.glsl_header(iface) if header is None else header
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / f"probe.{'comp' if iface.stage == I.COMPUTE else 'vert'}"
        src.write_text(probe_source(iface, header))
        proc = _glslang(["-l", "-q", "--reflect-all-block-variables", "-o", str(Path(tmp) / "probe.spv"), str(src)])
    if isinstance(proc, str) or proc.returncode != 0:
        raise RuntimeError(f"probe of interface {iface.name!r} failed to compile:\n"
                           f"{proc if isinstance(proc, str) else proc.stdout + proc.stderr}")
    sections: dict[str, dict[str, dict]] = {}
    current = None
    for line in proc.stdout.splitlines():
        if line.endswith("reflection:"):
            current = sections.setdefault(line[:-len(" reflection:")], {})
            continue
        m = _LINE.match(line)
        if m and current is not None:
            d = {k: int(v) if k in ("offset", "size", "index", "binding") else v
                 for k, v in m.groupdict().items() if k not in ("name", "rest")}
            d["type"] = int(d["type"], 16)
            for key, val in re.findall(r", (\w+) (\d+)", m["rest"]):
                d[key] = int(val)
            current[m["name"]] = d
    return sections


# OpenGL type enums of glslang's reflection -> (numpy kind, component count): independent of interface.glsl_type
GL_TYPES = {0x1406: ("f", 1), 0x8B50: ("f", 2), 0x8B51: ("f", 3), 0x8B52: ("f", 4), 0x8B5C: ("f", 16),
            0x1405: ("u", 1), 0x8DC6: ("u", 2), 0x8DC7: ("u", 3), 0x8DC8: ("u", 4),
            0x1404: ("i", 1), 0x8B53: ("i", 2), 0x8B54: ("i", 3), 0x8B55: ("i", 4)}


def _kind_count(sub) -> tuple[str, int]:
    """(kind GLSL sees, component count); an 8-bit unsigned vertex field is UNORM, i.e. float in GLSL."""
    n = 1
    for d in sub.shape:
        n *= d
    return ("f" if sub.base.itemsize == 1 and sub.base.kind == "u" else sub.base.kind), n


def _struct_problems(where: str, struct: I.Struct, members: dict[str, dict], prefix: str,
                     stride: int | None) -> list[str]:
    problems = []
    for name, (typ, gname, offset) in zip(struct.dtype.names, struct.fields()):
        r = members.get(prefix + gname)
        if r is None:
            problems.append(f"{where}: {gname} missing from glslang's reflection")
        elif GL_TYPES.get(r["type"]) != _kind_count(struct.dtype.fields[name][0]):
            problems.append(f"{where}: {gname} is GL type {r['type']:#x} in GLSL, {struct.dtype.fields[name][0]} "
                            "in the dtype")
        elif r["offset"] != offset:
            problems.append(f"{where}: {gname} ({typ}) is at byte {r['offset']} in GLSL, {offset} in the dtype")
        elif stride is not None and r.get("topLevelArrayStride") != stride:
            problems.append(f"{where}: array stride {r.get('topLevelArrayStride')} in GLSL, {stride} (itemsize)")
    return problems


def layout_problems(iface: I.ShaderInterface, header: str | None = None) -> list[str]:
    """Where the GLSL layout glslang computes for the generated header disagrees with the declaration."""
    refl = reflect(iface, header)
    members, blocks = refl.get("Uniform", {}), refl.get("Uniform block", {})
    problems = []
    for b in iface.bindings:
        where = f"{iface.name}.{b.name}"
        opaque = b.kind in (I.SAMPLER, I.TEXEL)             # a uniform variable, not a block
        key = b.glsl_name if opaque else b.block_name
        found = members.get(key) if opaque else blocks.get(key)
        if found is None:
            problems.append(f"{where}: {key} missing from glslang's reflection")
            continue
        if found["binding"] != b.binding:
            problems.append(f"{where}: binding {found['binding']} in GLSL, {b.binding} declared")
        if b.kind == I.STORAGE and isinstance(b.element, I.Struct):
            problems += _struct_problems(where, b.element, members, f"{b.glsl_name}[0].", b.element.dtype.itemsize)
        elif b.kind == I.UNIFORM:
            problems += _struct_problems(where, b.element, members, f"{b.block_name}.", None)
            if found["size"] != b.element.dtype.itemsize:
                problems.append(f"{where}: block size {found['size']} in GLSL, {b.element.dtype.itemsize} dtype")
        elif b.kind == I.UNIFORM_ARRAY and found["size"] != b.count * {"mat4": 64, "vec4": 16}.get(b.element, -1):
            problems.append(f"{where}: block size {found['size']} in GLSL, not {b.count} x {b.element} (std140)")
    if iface.push is not None:
        s = iface.push.struct
        problems += _struct_problems(f"{iface.name}.push", s, members, f"{s.name}.", None)
        size = blocks.get(s.name, {}).get("size")
        if size != s.dtype.itemsize:
            problems.append(f"{iface.name}.push: block size {size} in GLSL, {s.dtype.itemsize} in the dtype")
    inputs = refl.get("Pipeline input", {})
    for a in iface.vertex_attributes():
        r = inputs.get(f"in{I.pascal(a.name)}")
        if r is None:
            problems.append(f"{iface.name}: vertex input in{I.pascal(a.name)} missing from glslang's reflection")
        elif GL_TYPES.get(r["type"]) != _kind_count(iface.vertex.fields[a.name][0]):
            problems.append(f"{iface.name}: vertex input {a.name} is GL type {r['type']:#x}, "
                            f"{iface.vertex.fields[a.name][0]} in the dtype")
    if iface.vertex is not None:
        end = max(a.offset + iface.vertex.fields[a.name][0].itemsize for a in iface.vertex_attributes())
        if end != iface.vertex.itemsize or not all(a.offset % 4 == 0 for a in iface.vertex_attributes()):
            problems.append(f"{iface.name}: vertex dtype is not tightly packed 4-byte fields")
    return problems


# ------------------------------------------------------------------------------------------- stage check
_OP_NAME, _OP_TYPE_INT, _OP_TYPE_FLOAT, _OP_TYPE_VECTOR, _OP_TYPE_POINTER, _OP_VARIABLE, _OP_DECORATE = (
    5, 21, 22, 23, 32, 59, 71)
_LOCATION, _INPUT, _OUTPUT = 30, 1, 3     # Decoration Location; StorageClass Input, Output


def stage_io(spirv: bytes) -> dict[str, dict[int, tuple[str, str]]]:
    """{"in" | "out": {location: (GLSL type, name)}} of a SPIR-V module's located inputs and outputs, read from
    its own instructions (OpDecorate Location, OpVariable, OpType*): independent of the generator."""
    words = np.frombuffer(spirv, "<u4")
    names, types, pointers, locations, variables = {}, {}, {}, {}, []
    i = 5                                              # after the header
    while i < len(words):
        count, op = int(words[i]) >> 16, int(words[i]) & 0xFFFF
        w = [int(x) for x in words[i + 1:i + count]]
        if op == _OP_NAME:
            names[w[0]] = spirv[4 * (i + 2):4 * (i + count)].split(b"\0")[0].decode()
        elif op in (_OP_TYPE_INT, _OP_TYPE_FLOAT):
            types[w[0]] = "float" if op == _OP_TYPE_FLOAT else ("int" if w[2] else "uint")
        elif op == _OP_TYPE_VECTOR:
            prefix = {"float": "", "int": "i", "uint": "u"}.get(types.get(w[1], ""), "?")   # ?: bool vectors
            types[w[0]] = f"{prefix}vec{w[2]}"
        elif op == _OP_TYPE_POINTER:
            pointers[w[0]] = w[2]
        elif op == _OP_DECORATE and w[1] == _LOCATION:
            locations[w[0]] = w[2]
        elif op == _OP_VARIABLE and w[2] in (_INPUT, _OUTPUT):
            variables.append((w[1], w[2], w[0]))
        i += count
    io: dict[str, dict[int, tuple[str, str]]] = {"in": {}, "out": {}}
    for var, storage, ptr in variables:
        if var in locations:                           # built-ins (gl_Position) have no location
            io["in" if storage == _INPUT else "out"][locations[var]] = (types.get(pointers[ptr], "?"),
                                                                        names.get(var, "?"))
    return io


def link_problems(spirv=None) -> list[str]:
    """Where a compiled producer's outputs and a consumer's inputs (every pair of every ``StageLink``) or the
    declaration disagree on a location's type. ``spirv``: shader name -> SPIR-V bytes replacing spirv/'s."""
    def io(shader):
        return stage_io((spirv or {}).get(shader) or (SPIRV / f"{shader}.spv").read_bytes())

    problems = []
    for link in I.STAGE_LINKS:
        declared = {v.location: v.glsl for v in link.varyings}
        for shader, side in [(p, "out") for p in link.producers] + [(c, "in") for c in link.consumers]:
            for loc, (typ, name) in sorted(io(shader)[side].items()):
                if loc in declared and declared[loc] != typ:
                    problems.append(f"{link.name}: {shader} {side} location {loc} ({name}) is {typ}, "
                                    f"declared {declared[loc]}")
        for producer in link.producers:
            outs = io(producer)["out"]
            for consumer in link.consumers:
                for loc, (typ, name) in sorted(io(consumer)["in"].items()):
                    if loc not in outs:
                        problems.append(f"{link.name}: {consumer} reads location {loc} ({name}), "
                                        f"{producer} writes none")
                    elif outs[loc][0] != typ:
                        problems.append(f"{link.name}: location {loc} is {outs[loc][0]} {outs[loc][1]} in "
                                        f"{producer}, {typ} {name} in {consumer}")
    return problems


# ------------------------------------------------------------------------------------------- main
def write_headers(check: bool) -> list[str]:
    """Write glsl/gen/*.glsl (or, with ``check``, list the stale/missing/orphan ones)."""
    wanted = headers()
    GEN.mkdir(exist_ok=True)
    stale = []
    for name, text in wanted.items():
        dst = GEN / name
        if dst.is_file() and dst.read_text() == text:
            continue
        if check:
            stale.append(f"gen/{name}")
        else:
            dst.write_text(text)
            print(f"wrote glsl/gen/{name}")
    orphans = sorted(p for p in GEN.glob("*.glsl") if p.name not in wanted)
    if check:
        return stale + [f"gen/{p.name}" for p in orphans]
    for p in orphans:
        p.unlink()
        print(f"removed glsl/gen/{p.name}")
    return []


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="verify generated headers and SPIR-V are fresh; write nothing")
    args = ap.parse_args(argv)
    stale_headers = write_headers(args.check)
    problems = [p for i in I.INTERFACES for p in layout_problems(i)]
    for p in problems:
        print(f"layout: {p}", file=sys.stderr)
    SPIRV.mkdir(exist_ok=True)
    failed, stale = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for src in sources():
            name = src.name + ".spv"
            out = Path(tmp) / name
            err = compile_one(src, out)
            if err:
                print(f"{src.relative_to(ROOT)}: compile failed\n{err}", file=sys.stderr)
                failed.append(src.name)
                continue
            dst = SPIRV / name
            if args.check:
                if not dst.is_file() or dst.read_bytes() != out.read_bytes():
                    stale.append(name)
            elif not dst.is_file() or dst.read_bytes() != out.read_bytes():
                shutil.copyfile(out, dst)
                print(f"wrote spirv/{name}")
    if not failed:
        for p in link_problems():
            print(f"varyings: {p}", file=sys.stderr)
            problems.append(p)
    known = {s.name + ".spv" for s in sources()}
    orphans = sorted(p.name for p in SPIRV.glob("*.spv") if p.name not in known)
    if failed or problems:
        return 1
    if args.check and (stale or orphans or stale_headers):
        print(f"stale or missing generated headers: {stale_headers}; stale or missing SPIR-V: {stale}; "
              f"orphans: {orphans}; run tools/compile_shaders.py", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
