"""A/B of bake_ubo.comp variants on RobotExpressive: kernel and stores-only CPU per 64-frame batch, the variants
alternating, median of ROUNDS. A variant is a folder holding a bake_ubo.comp.spv compiled from an edited copy of
glsl/ (``glslangValidator -V --target-env vulkan1.2 -I<copy> -o <dir>/bake_ubo.comp.spv <copy>/bake_ubo.comp``);
"today" is the checkout's. Timing-only variants may bake wrong values (their max difference is printed).
``--one`` uses one pipeline for every mode (split_modes=False) for all of them. The figures of
bench/2026-12-02-lavapipe-bake-kernel.txt's "what was tried" came from this script (variants of bake_body.glsl).

    python bench/bake_variants_ab.py ROUNDS [--one] VARIANT_DIR ...
"""
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import vkmorph  # noqa: E402
import vkmorph.bake as VB  # noqa: E402
import vkmorph.gpu.shaders as S  # noqa: E402
from vkmorph.anim.pose_batch import PoseBatch  # noqa: E402
from vkmorph.app.bench import BAKE_MODEL, find_model  # noqa: E402
from vkmorph.bake import GpuBaker, frame_weights  # noqa: E402
from vkmorph.gpu import memory as M  # noqa: E402
from vkmorph.gpu.interface import BAKE_COPY, BAKE_ITEM  # noqa: E402

one = "--one" in sys.argv
names = [a for a in sys.argv[2:] if a != "--one"]
R = int(sys.argv[1])
F = 64
m = vkmorph.open(find_model(BAKE_MODEL))
clip = m.scene.clip("Dance")
times = np.linspace(0.0, clip.duration, F)
W = frame_weights(m, clip, times, None)
baker = GpuBaker(m, "world", pose="cpu", wide_stores=False)     # the variants are bake_ubo.comp's: its window
mats = baker.layout.matrices(PoseBatch(m.scene), times, clip)
orig_dirs = S.SPIRV_DIRS
setups = {}
for name in ["today", *names]:
    S.SPIRV_DIRS = orig_dirs if name == "today" else (Path(name),) + orig_dirs
    S.load_spirv.cache_clear()
    res = VB.BakeResources(m, baker.layout, F, True, False, baker.window, not one)
    slot = res.slots[0]
    slot.matrices.mapped[:mats.nbytes] = np.ascontiguousarray(mats.transpose(0, 1, 3, 2)).view(np.uint8).reshape(-1)
    items = M.readback(m.ctx, res.items, BAKE_ITEM).copy()
    ci = items.copy()
    ci["mode"] = BAKE_COPY
    setups[name] = (res, slot, items, ci)
S.SPIRV_DIRS = orig_dirs
S.load_spirv.cache_clear()
V = baker.layout.total
out = {}
ref = None
for r in range(R):
    for name, (res, slot, items, ci) in setups.items():
        for what, it in (("kernel", items), ("stores", ci)):
            M.upload(m.ctx, res.items, it)
            def batch(res=res, slot=slot):
                baker._record(res, slot, 0, W, F, slot.out_offsets())
                m.ctx.submit([slot.cb], fence=slot.fence)
                m.ctx.wait_fence(slot.fence)
            batch()
            if r == 0 and what == "kernel":
                got = np.empty((3, F, V, 3), np.float32)
                slot.copy_into(got, 0, F)
                if ref is None:
                    ref = got
                print(name, "max diff vs today", float(np.nanmax(np.abs(got - ref))))
            c0, t0 = time.process_time(), time.perf_counter()
            batch()
            out.setdefault((name, what), []).append((time.process_time() - c0, time.perf_counter() - t0))
fv = F * V
for (name, what), v in out.items():
    c = np.array(v)
    print(f"{name:<22} {what:<7} CPU {np.median(c[:,0])*1e3:6.1f} ms ({c[:,0].min()*1e3:.1f}-{c[:,0].max()*1e3:.1f})"
          f" {np.median(c[:,0])/fv*1e9:5.1f} ns/fv  wall {np.median(c[:,1])*1e3:6.1f} ms")
for res, *_ in setups.values():
    res.destroy()
m.close()
