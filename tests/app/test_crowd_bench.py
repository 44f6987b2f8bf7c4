"""The crowd bench's GPU-animation, k-of-N and heads sections run (tiny sizes, under validation) and render;
bytes per extra head are measured from the allocator and equal the head's output plus its weight slots (the
deltas are shared). No speed is asserted."""

from __future__ import annotations

import numpy as np

from tests.helpers import asset


def test_gpu_anim_rows_scaling_and_heads_render(ctx, monkeypatch):
    from vkmorph.app import crowd_bench as B
    from vkmorph.app.bench import WindowTimer

    monkeypatch.setenv("VKMORPH_ASSETS", str(asset("RobotExpressive", "RobotExpressive.glb").parents[1]))
    timer = WindowTimer(ctx)
    try:
        rows = B.gpu_anim_costs(ctx, timer, (1, 3), frames=1)
        scaling = B.gpu_anim_scaling(ctx, timer, 4, (0, 2), frames=1)
        heads = B.crowd_heads(ctx, timer, (1, 3), frames=1)
    finally:
        timer.destroy()
    assert [r["instances"] for r in rows] == [1, 3]
    for r in rows:
        assert r["changed_animated"] == r["instances"] and r["unchanged_animated"] == 0
        assert r["changed_weights_changed"] == r["instances"] and r["unchanged_instances_dispatched"] == 0
        # per instance and slot: 43 joints + a model matrix per rigid node, and 80 B of clip parameters and transform
        assert r["changed_palette_cpu"] > 0 and r["anim_bytes_per_instance"] == 80 + r["palette_bytes_per_instance"]
        assert r["palette_bytes_per_instance"] > 64 * 43
    assert [d["instances_dispatched"] for d in scaling] == [0, 2]
    md = "\n".join(B.gpu_anim_markdown(rows) + B.gpu_scaling_markdown(scaling) + B.heads_markdown(heads))
    assert "| 3 |" in md and "weights changed" in md and "bytes per extra head" in md
    assert B.gpu_anim_line(rows[0]).startswith("crowd      1 (GPU animation)")
    assert heads[0]["bytes_per_extra_head"] is None
    per = heads[1]["bytes_per_extra_head"]
    assert 14_000 * 48 <= per <= 14_000 * 48 + 1024, per       # its output and weights, never its own deltas
    assert np.isfinite(heads[1]["gpu_ms"])
