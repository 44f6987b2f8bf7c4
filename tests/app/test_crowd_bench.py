"""The crowd bench's GPU-animation, k-of-N and heads sections run (tiny sizes, under validation) and render;
bytes per extra head are measured from the allocator and equal the head's output plus its weight slots (the
deltas are shared). No speed is asserted."""

from __future__ import annotations

import numpy as np
import pytest

from tests.helpers import asset


def test_gpu_anim_rows_scaling_and_heads_render(ctx, monkeypatch):
    from vkmorph.app import crowd_bench as B
    from vkmorph.app.bench_timing import WindowTimer

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


def test_pass_rows_with_lod_report_triangles_and_levels_per_pass(ctx, monkeypatch):
    """``crowd_bench --passes --lod off,on``: both skinning paths per row, the triangles each pass drew and the
    instances per level; a forced coarse level draws fewer triangles than LOD off, in both passes."""
    import pytest

    from vkmorph.app import crowd_bench as B
    from vkmorph.errors import UsageError

    monkeypatch.setenv("VKMORPH_ASSETS", str(asset("RobotExpressive", "RobotExpressive.glb").parents[1]))
    off, coarse = (B.pass_rows(ctx, (2,), frames=1, lod=lod)[0] for lod in ("off", 3))
    for r in (off, coarse):
        for p in ("compute", "vertex"):
            for w in ("shadow", "forward"):
                assert sum(r[f"{p}_{w}_lod"]) == 2 and r[f"{p}_{w}_triangles"] > 0
    assert off["compute_forward_triangles"] == 2 * 3237 and off["compute_forward_lod"] == [2]
    assert coarse["compute_forward_lod"] == [0, 0, 0, 2]
    for w in ("shadow", "forward"):
        assert coarse[f"vertex_{w}_triangles"] < 0.15 * off[f"vertex_{w}_triangles"]
    for r in (off, coarse):      # the time model, fit on the compute path, predicts the vertex path's ratio
        tm = r["time_model"]
        assert tm["bandwidth_gbs"] > 0 and tm["raster_ns"] >= 0 and np.isfinite(tm["vertex_over_compute"])
        assert np.isclose(tm["compute_ms"], r["compute_skin_ms"] + r["compute_shadow_ms"] + r["compute_forward_ms"])
        assert r["drawn_skinned_vertices"] > 0 and r["drawn_other_vertices"] > 0
    assert coarse["drawn_skinned_vertices"] < off["drawn_skinned_vertices"]
    line = B.pass_line(coarse)
    assert "time model on the compute path" in line
    assert line.startswith("crowd passes      2 lod 3:") and "lod 0/0/0/2" in line and "vertex:" in line
    md = "\n".join(B.pass_markdown([off, coarse]))
    assert "| 2 | 3 | compute" in md and "(0/0/0/2)" in md
    assert B.lod_option("on") == "on" and B.lod_option("2") == 2
    with pytest.raises(UsageError, match="--lod"):
        B.lod_option("fast")


def test_sustained_rows_and_again(ctx, monkeypatch):
    """``crowd_bench --sustained``: frames back to back with GPU animation on both paths; the triangles each pass
    drew are the file's own (3,237 per RobotExpressive at full detail); ``--again``: the passes resubmitted, the
    steady times present and recorded in the row."""
    from vkmorph.app import crowd_bench as B

    monkeypatch.setenv("VKMORPH_ASSETS", str(asset("RobotExpressive", "RobotExpressive.glb").parents[1]))
    rows = B.sustained_rows(ctx, (2,), frames=4, lod="off") + B.sustained_rows(ctx, (2,), frames=5, lod=3,
                                                                            paths=("compute",), in_flight=2)
    assert [(r["path"], r["in_flight"]) for r in rows] == [("compute", 1), ("vertex", 1), ("compute", 2)]
    for r in rows[:2]:
        assert r["triangles"] == {"shadow": 2 * 3237, "forward": 2 * 3237}
        assert r["fps"] > 0 and r["frame_wall_ms"] >= r["gpu_ms"] > 0
        assert all(np.isfinite(r[f"{k}_ms"]) for k in ("morph", "skin", "shadow", "forward"))
        line = B.sustained_line(r)
        assert line.startswith("sustained      2 lod off") and "fps" in line and "morph+anim" in line
    two = rows[2]        # two frames in flight, the coarsest level: the file's level-3 triangles, every frame timed
    assert two["lod_levels"]["forward"] == [0, 0, 0, 2] and 0 < two["triangles"]["forward"] < 0.15 * 2 * 3237
    assert two["fps"] > 0 and all(np.isfinite(two[f"{k}_ms"]) for k in ("morph", "skin", "shadow", "forward"))
    assert "(2 in flight)" in B.sustained_line(two)
    md = "\n".join(B.sustained_markdown(rows))
    assert "| 2 | off | vertex | 1 |" in md and "| 2 | 3 | compute | 2 |" in md and f"| {2 * 3237:,} |" in md
    row = B.pass_rows(ctx, (2,), frames=1, lod=3, again=3)[0]
    assert row["again"] == 3 and row["compute_shadow_steady_ms"] > 0 and row["vertex_forward_steady_ms"] > 0
    assert "3 times, the median of the last half" in "\n".join(B.pass_markdown([row]))


def test_sustained_waits_for_every_frame_inside_the_timed_loop(ctx, monkeypatch):
    """With two frames in flight the loop runs past the last submit until every frame it submitted was waited for
    (so the last frame's GPU time is part of the loop's wall time and its passes are sampled), not left to the
    clean-up's wait_idle: as many waits as frames inside the loop, whatever the frames in flight."""
    from vkmorph.app import crowd_bench as B

    monkeypatch.setenv("VKMORPH_ASSETS", str(asset("RobotExpressive", "RobotExpressive.glb").parents[1]))
    events: list[str] = []
    real_submit, real_wait, real_idle = ctx.submit, ctx.wait_fence, ctx.wait_idle

    def submit(cbs, fence=None, **kw):                  # the frames' own fences (submit_and_wait has ctx's)
        if fence is not None and fence != ctx._fence:
            events.append("submit")
        real_submit(cbs, fence=fence, **kw)

    def wait_fence(fence, *a, **kw):
        if fence != ctx._fence:
            events.append("wait")
        real_wait(fence, *a, **kw)

    def wait_idle():
        events.append("idle")
        real_idle()

    monkeypatch.setattr(ctx, "submit", submit)
    monkeypatch.setattr(ctx, "wait_fence", wait_fence)
    monkeypatch.setattr(ctx, "wait_idle", wait_idle)
    for in_flight in (1, 2):
        events.clear()
        B.sustained_rows(ctx, (2,), frames=5, lod=3, paths=("compute",), in_flight=in_flight)
        loop = events[:events.index("idle")]            # up to the clean-up's wait_idle
        assert loop.count("submit") == 5 and loop.count("wait") == 5, (in_flight, loop)


@pytest.mark.gpu
def test_bad_options_are_one_usage_line_before_any_work(monkeypatch, capsys):
    """--sustained, --spacing, --again, --size, --counts and --lod are checked before the device is touched: one
    argparse error line (exit status 2), never a traceback, a silently ignored value or the whole default bench."""
    from vkmorph.app import crowd_bench as B

    monkeypatch.setenv("VKMORPH_ASSETS", str(asset("RobotExpressive", "RobotExpressive.glb").parents[1]))
    cases = {("--sustained", "-1", "--counts", "1"): "--sustained",
             ("--sustained", "0"): "--sustained",
             ("--passes", "--counts", "1", "--spacing", "0"): "--spacing",
             ("--passes", "--counts", "1", "--spacing", "nan"): "--spacing",
             ("--passes", "--counts", "1", "--again", "0"): "--again",
             ("--passes", "--counts", "1", "--size", "0x10"): "--size",
             ("--passes", "--counts", "1,x"): "--counts",
             ("--passes", "--counts", "1", "--lod", "fast"): "--lod",
             ("--sustained", "2", "--counts", "1", "--lod", "off,on"): "--lod"}
    for argv, name in cases.items():
        with pytest.raises(SystemExit) as exc:
            B.main(list(argv))
        err = capsys.readouterr().err.strip().splitlines()
        assert exc.value.code == 2 and err[-1].startswith("python -m vkmorph.app.crowd_bench: error: " + name), \
            (argv, err)
