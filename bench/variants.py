"""Kernel-variant experiment (not part of vkmorph): the same cases through MorphRuntime with different SPIR-V
builds of glsl/morph.comp / morph_compact.comp (preprocessor switches), timed like ``vkmorph bench`` (warm-up,
same-window copy reference, median of per-try ratios). Used to choose the shipped variant; results in bench/.

    python bench/variants.py [--quick] [--variants base,sg,...] [--cases ...]
    python bench/variants.py --vertex-layout --variants vertex      # the per-vertex kernel on a GPU

Variants are compiled here with glslangValidator -D<flags> into a temporary folder.
"""
from __future__ import annotations

import argparse
import dataclasses
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

GPU = ("morph.comp", "morph_compact.comp")
CPU = ("morph_vertex.comp", "morph_compact_vertex.comp")
X = "-DEXPERIMENT"
VARIANTS = {"shipped": (GPU, []), "base": (GPU, [X]), "sg": (GPU, [X, "-DSUBGROUP"]),
            "sg_pf": (GPU, [X, "-DSUBGROUP", "-DPREFETCH"]), "io": (GPU, ["-DIO_ONLY"]),
            "u1": (GPU, [X, "-DSUBGROUP", "-DPREFETCH", "-DUNROLL1"]), "empty": (GPU, ["-DEMPTY"]),
            "late": (GPU, ["-DLATE_BASE"]), "u2": (GPU, ["-DUNROLL2"]), "late_u2": (GPU, ["-DLATE_BASE", "-DUNROLL2"]),
            "r256": (GPU, ["-DROUND=256u"]), "r32": (GPU, ["-DROUND=32u"]),
            "vertex": (CPU, []), "vword": (CPU, ["-DWORD_LOOP"]), "vio": (CPU, ["-DVIO"])}


def compile_variants(names, out: Path):
    for name in names:
        sources, flags = VARIANTS[name]
        for fmt, src in zip(("full", "compact"), sources):
            dst = out / f"{name}_{fmt}.spv"             # load_spirv(shader) reads <shader>.spv
            cmd = ["glslangValidator", "-V", "--target-env", "vulkan1.2", "-I" + str(ROOT / "glsl"),
                   *flags, "-o", str(dst), str(ROOT / "glsl" / src)]
            r = subprocess.run(cmd, capture_output=True, text=True)
            if r.returncode:
                sys.exit(r.stdout + r.stderr)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--variants", default="base,sg,io")
    ap.add_argument("--formats", default="full,compact")
    ap.add_argument("--tries", type=int, default=3)
    ap.add_argument("--cases", help="indices into the case list, e.g. 0,4")
    ap.add_argument("--rounds", type=int, default=1, help="alternate the variants this many times per case")
    ap.add_argument("--vertex-layout", action="store_true",
                    help="build the per-vertex layout (the CPU path's) on any device: for the vertex* variants")
    args = ap.parse_args()
    names = args.variants.split(",")
    tmp = Path(tempfile.mkdtemp())
    compile_variants(names, tmp)
    from vkmorph.app import bench as B
    from vkmorph.gpu import shaders
    from vkmorph.gpu.context import Context
    from vkmorph.gpu.pipeline import ComputePipeline
    from vkmorph.morph.reference import morph_reference
    from vkmorph.render.morph_pass import MorphRuntime

    # the layout follows the kernel family: every variant of one run must belong to the family built here
    family = CPU if args.vertex_layout else GPU
    if any(VARIANTS[n][0] is not family for n in names):
        sys.exit(f"variants {names}: all must be {'vertex' if args.vertex_layout else 'workgroup'} kernels "
                 "(--vertex-layout selects the per-vertex family)")
    kernel = "per-vertex" if args.vertex_layout else "workgroup"
    shaders.SPIRV_DIRS = (tmp,) + tuple(shaders.SPIRV_DIRS)
    shaders.load_spirv.cache_clear()
    ctx = Context.create()
    disc = ctx.info.device_type == "discrete"
    print("device", ctx.info.name, ctx.info.driver_version, flush=True)
    timer = B.WindowTimer(ctx)
    if args.quick:
        cases = [B.Case(50_000, 52, 0.25, 5, "random"), B.Case(50_000, 52, 0.05, 52, "clustered"),
                 B.Case(50_000, 8, 1.0, 8, "random"), B.Case(50_000, 52, 0.05, 52, "random"),
                 B.Case(50_000, 200, 0.05, 1, "random")]
    else:
        cases = [B.Case(500_000, 52, 0.25, 5, "random"), B.Case(500_000, 52, 0.25, 5, "clustered"),
                 B.Case(500_000, 52, 0.05, 52, "random"), B.Case(500_000, 52, 0.05, 52, "clustered"),
                 B.Case(2_000_000, 52, 0.25, 5, "random"), B.Case(2_000_000, 52, 0.05, 52, "clustered"),
                 B.Case(500_000, 200, 0.05, 1, "clustered"), B.Case(500_000, 8, 1.0, 8, "random"),
                 B.Case(5_000_000, 52, 0.05, 5, "clustered")]
    if args.cases:
        cases = [cases[int(i)] for i in args.cases.split(",")]
    for case in cases:
        t0 = time.perf_counter()
        prim = B.synthetic_primitive(case.vertices, case.targets, case.coverage, case.pattern)
        gen = time.perf_counter() - t0
        for fmt in args.formats.split(","):
            line = []
            t0 = time.perf_counter()
            rt = MorphRuntime(ctx, B.synthetic_scene([prim]), delta_format=fmt, kernel=kernel)
            build = time.perf_counter() - t0
            batch = rt.batch
            shipped = batch.pipeline, batch.descriptor_sets
            w = np.zeros(case.targets, np.float32)
            w[:case.active] = np.linspace(0.3, 0.9, case.active)
            act = sum(int(np.count_nonzero(np.any(prim.morph_targets[t].position_deltas != 0, axis=1)))
                      for t in range(case.active))
            floor = B.floor_bytes_of(case.vertices, act)
            cp = B.CopyFrames(ctx, floor)
            for name in [n for _ in range(args.rounds) for n in names]:
                pipe = ComputePipeline(ctx, dataclasses.replace(batch.kernel, shaders=(f"{name}_{fmt}",)), max_sets=1)
                batch.pipeline, batch.descriptor_sets = pipe, [pipe.make_set(batch.buffers)]
                frames, res = timer.same_window(B._changing_record(rt, w), cp.frame, args.tries,
                                                0.3 if disc else 0.0, 4.0 if disc else 1.0)
                fr = [c / m for m, c in res]
                out = rt.read_vertices(rt.morphing[0])
                p, _, _ = morph_reference(prim, rt.pose.flat.astype(np.float64))
                err = float(np.abs(out["position"] - p).max())
                line.append(f"{name}: {np.median([m for m, _ in res]) * 1e3:8.1f} us f={np.median(fr):.2f} "
                            f"[{min(fr):.2f}-{max(fr):.2f}] err {err:.0e}")
                pipe.destroy()
            batch.pipeline, batch.descriptor_sets = shipped
            cp.destroy()
            rt.destroy()
            print(f"{case.vertices:>9,} x{case.targets:>3} {case.coverage:4.0%} {case.pattern:>9} act {case.active:>2} "
                  f"{fmt:>7} (gen {gen:.1f}s build {build:.2f}s floor {floor / 1e6:.1f} MB) | " + " | ".join(line),
                  flush=True)
        del prim
    timer.destroy()
    ctx.destroy()


if __name__ == "__main__":
    main()
