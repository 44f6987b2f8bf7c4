"""The renderer's frames in flight use the runtime's output slots (issue 13 item 4): frame slot k morphs into output
slot k and every pass draws slot k's vertices, on lavapipe under validation (cross-submit checks on).

Two frames with different weights go into slots 0 and 1 of a 2-frames-in-flight headless renderer: each slot's
morph output matches numpy for its own weights, the runtime recorded into the frame's slot, and each frame's image
is the one a 1-slot renderer draws for the same weights (drawing slot 0's vertices in frame 1 would show frame 0's
geometry)."""

from __future__ import annotations

import numpy as np
import pytest

from tests.render import scenes
from vkmorph import load_scene
from vkmorph.errors import UsageError
from vkmorph.morph.reference import morph_reference

pytestmark = pytest.mark.gpu
W, H = 96, 72
POSES = (np.array([1.0, 0.0, 0.0], np.float32), np.array([0.8, 0.15, 0.0], np.float32))  # moves the cube ~1.2


def _frames(ctx, scene, frames_in_flight: int):
    """(images, renderer's per-frame counters, per-slot morph output positions) of one frame per pose, frame i in
    frame slot i % frames_in_flight. The camera stays framed on the first pose."""
    from vkmorph.render.offscreen import OffscreenRenderer

    off = OffscreenRenderer(ctx, scene, W, H, ground=False, frames_in_flight=frames_in_flight)
    try:
        rt = off.renderer.runtime
        node = rt.pose.morph_nodes[0]
        images, counters = [], []
        for i, w in enumerate(POSES):
            rt.pose.set_weights(node, w)
            images.append(off.render(slot=i % frames_in_flight))
            counters.append(off.last_counters)
        outputs = [rt.read_vertices(node, slot=k)["position"] for k in range(rt.slots)]
        return images, counters, outputs
    finally:
        off.destroy()


def test_frames_in_flight_morph_and_draw_their_own_output_slot(ctx, tmp_path):
    scene = load_scene(scenes.pose_targets_box(tmp_path))
    prim = next(p for p in scene.primitives if p.morph_targets)     # the cube, on one node
    images, counters, outputs = _frames(ctx, scene, 2)
    assert [c.slot for c in counters] == [0, 1]
    assert all(c.dispatched == 1 for c in counters), counters
    for out, w in zip(outputs, POSES):          # slot k holds frame k's morph, not the last frame's
        np.testing.assert_allclose(out, morph_reference(prim, w)[0], atol=1e-5)
    single, counters1, outputs1 = _frames(ctx, scene, 1)
    assert [c.slot for c in counters1] == [0, 0]
    np.testing.assert_allclose(outputs1[0], morph_reference(prim, POSES[1])[0], atol=1e-5)
    assert np.abs(single[0].astype(int) - single[1]).max() > 100, "the two poses must draw different images"
    for i in range(2):                           # each frame draws its own slot's geometry
        diff = np.abs(images[i].astype(int) - single[i]).max()
        assert diff <= 2, f"frame {i} (slot {i}) differs from the 1-slot render of its pose by {diff}"


def test_runtime_with_other_slot_count_is_one_clear_error(ctx, tmp_path):
    from vkmorph.gpu.vk import vk
    from vkmorph.render.morph_pass import MorphRuntime
    from vkmorph.render.offscreen import COLOR_FORMAT
    from vkmorph.render.renderer import SceneRenderer

    scene = load_scene(scenes.pose_targets_box(tmp_path))
    with MorphRuntime(ctx, scene, slots=3) as rt:
        with pytest.raises(UsageError, match=r"2 output slots \(or 1\), got MorphRuntime\(slots=3\)"):
            SceneRenderer(ctx, scene, COLOR_FORMAT, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL, frames_in_flight=2,
                          runtime=rt)
