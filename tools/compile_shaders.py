#!/usr/bin/env python3
"""Compile glsl/*.comp|vert|frag to spirv/<name>.spv with glslangValidator (Vulkan 1.2 target env).

    python tools/compile_shaders.py            # (re)compile everything
    python tools/compile_shaders.py --check    # exit 1 when a committed .spv is missing or stale

Staleness is decided by compiling again into a temporary folder and comparing bytes, so an edit to an
included file is caught too. Compile errors print glslang's own ``ERROR: file:line: message`` lines.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GLSL = ROOT / "glsl"
SPIRV = ROOT / "vkmorph" / "spirv"  # inside the package, so wheels ship it
STAGES = (".comp", ".vert", ".frag")


def sources() -> list[Path]:
    return sorted(p for p in GLSL.iterdir() if p.suffix in STAGES)


def compile_one(src: Path, out: Path) -> str | None:
    """Compile ``src`` to ``out``; returns glslang's error text on failure, None on success."""
    exe = shutil.which("glslangValidator")
    if exe is None:
        return "glslangValidator not found: `apt-get install glslang-tools`"
    cmd = [exe, "-V", "--target-env", "vulkan1.2", "-I" + str(GLSL), "-o", str(out), str(src)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        lines = [ln for ln in (proc.stdout + proc.stderr).splitlines() if "ERROR" in ln or "error" in ln]
        return "\n".join(lines) or proc.stdout + proc.stderr
    return None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="verify committed SPIR-V is fresh; write nothing")
    args = ap.parse_args(argv)
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
                print(f"wrote vkmorph/spirv/{name}")
    known = {s.name + ".spv" for s in sources()}
    orphans = sorted(p.name for p in SPIRV.glob("*.spv") if p.name not in known)
    if failed:
        return 1
    if args.check and (stale or orphans):
        print(f"stale or missing SPIR-V: {stale}; orphans: {orphans}; run tools/compile_shaders.py",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
