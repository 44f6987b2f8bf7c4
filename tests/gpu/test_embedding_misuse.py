"""API misuse raises vkmorph's UsageError with a message saying what to do; never a crash or silent garbage."""

from __future__ import annotations

import numpy as np
import pytest

from vkmorph import load_scene
from vkmorph.errors import UsageError

pytestmark = pytest.mark.gpu


@pytest.fixture
def rt(ctx):
    from vkmorph.render.morph_pass import MorphRuntime

    r = MorphRuntime(ctx, load_scene())
    yield r
    r.destroy()


def test_use_after_runtime_destroy(ctx, rt):
    inst = rt.instance("Red")
    rt.destroy()
    rt.destroy()                                             # idempotent
    for call in (lambda: rt.read_vertices(inst), lambda: ctx.submit_and_wait(rt.record),
                 lambda: rt.set_weights("Red", [0, 0]), lambda: rt.instance("Red"), lambda: rt.draws(),
                 lambda: rt.vertex_buffer("Red")):
        with pytest.raises(UsageError, match="runtime was destroyed; build a new MorphRuntime"):
            call()


def test_record_after_destroy_does_not_report_skipped(ctx, rt):
    cb = ctx.allocate_command_buffer()
    ctx.begin(cb)
    rt.destroy()
    with pytest.raises(UsageError, match="destroyed"):
        rt.record(cb)                                        # not FrameCounters(pose_skipped=True)
    ctx.end(cb)
    ctx.free_command_buffer(cb)


def test_use_after_context_destroy(ctx, rt):
    from vkmorph.gpu import memory as M
    from vkmorph.render.morph_pass import MorphRuntime

    inst = rt.instance("Red")
    ctx.destroy()
    for call in (lambda: rt.read_vertices(inst), lambda: rt.set_weights("Red", [0.5, 0.5]),
                 lambda: ctx.submit_and_wait(lambda cb: None), lambda: M.device_buffer(ctx, np.zeros(4), M.STORAGE),
                 lambda: MorphRuntime(ctx, load_scene()), lambda: ctx.allocate_command_buffer()):
        with pytest.raises(UsageError, match="Context was destroyed"):
            call()
    rt.destroy()                                             # still safe: everything was released with the context


@pytest.mark.parametrize("bad,match", [(None, "not None"), ("cb", "expected a VkCommandBuffer handle, got str"),
                                       (42, "expected a VkCommandBuffer handle")])
def test_record_needs_a_command_buffer(rt, bad, match):
    with pytest.raises(UsageError, match=match):
        rt.record(bad)


def test_command_buffer_of_another_context(ctx, rt):
    from vkmorph.gpu.context import Context

    with Context.create(validation=False) as other:
        cb = other.allocate_command_buffer()
        other.begin(cb)
        with pytest.raises(UsageError, match="belongs to another vkmorph Context"):
            rt.record(cb)
        other.end(cb)
        other.free_command_buffer(cb)


def test_command_buffer_not_recording(ctx, rt):
    cb = ctx.allocate_command_buffer()
    with pytest.raises(UsageError, match=r"not recording \(initial\).*ctx.begin"):
        rt.record(cb)                                        # never begun
    ctx.begin(cb)
    ctx.end(cb)
    with pytest.raises(UsageError, match=r"not recording \(executable\)"):
        rt.record(cb)                                        # already ended
    ctx.free_command_buffer(cb)
    # the refused calls consumed nothing: the next real frame still morphs everything
    c = []
    ctx.submit_and_wait(lambda cb: c.append(rt.record(cb)))
    assert c[0].dispatched == len(rt.morphing)


def test_wrong_types(ctx, rt):
    from vkmorph.render.morph_pass import MorphRuntime

    with pytest.raises(UsageError, match="weights must be a sequence of numbers"):
        rt.set_weights("Red", ["a", "b"])
    with pytest.raises(UsageError, match="expected 2 weights"):
        rt.set_weights("Red", [0.1])
    with pytest.raises(UsageError, match="needs a scene from vkmorph.load_scene"):
        MorphRuntime(ctx, None)
    with pytest.raises(UsageError, match="needs a vkmorph Context"):
        MorphRuntime(None, load_scene())
    with pytest.raises(UsageError, match="slots must be an int >= 1"):
        MorphRuntime(ctx, load_scene(), slots=0)
    with pytest.raises(UsageError, match=r"slot must be an int in \[0, 1\)"):
        rt.vertex_buffer_offset("Red", slot=1)
    with pytest.raises(UsageError, match="consumer must be one of"):
        ctx.submit_and_wait(lambda cb: rt.record(cb, consumer="fragment"))
    assert ctx.live_children  # the runtime's objects only; the failed constructors left nothing (fixture checks)
