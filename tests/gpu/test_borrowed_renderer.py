"""SceneRenderer on a host's (borrowed) device: destroy() while the host's frame is in flight releases through the
context's retirement, so nothing the GPU still reads is destroyed (VUID-vkDestroy*-00922 / -01241 under the
host's validation layer), and everything goes once the host reports the frame complete."""

from __future__ import annotations

import pytest

from vkmorph import load_scene

pytestmark = pytest.mark.gpu
W, H = 64, 48


def test_renderer_destroy_in_flight_waits_for_the_hosts_completion(user_device):
    from vkmorph.gpu.image import Image
    from vkmorph.gpu.vk import vk
    from vkmorph.render.offscreen import COLOR_FORMAT
    from vkmorph.render.renderer import SceneRenderer

    user, ctx = user_device
    r = SceneRenderer(ctx, load_scene(), COLOR_FORMAT, vk.VK_IMAGE_LAYOUT_TRANSFER_SRC_OPTIMAL)
    color = Image(ctx, W, H, COLOR_FORMAT, vk.VK_IMAGE_USAGE_COLOR_ATTACHMENT_BIT | vk.VK_IMAGE_USAGE_TRANSFER_SRC_BIT,
                  vk.VK_IMAGE_ASPECT_COLOR_BIT, name="host target")
    targets = r.create_targets([color.view], W, H)
    try:
        r.frame_camera()
        r.update(0, W / H, W, H)
        user.run(lambda cb: r.record(cb, 0, targets.framebuffers[0], W, H))   # uploads + first morph
        ctx.completed(ctx.last_serial)
        r.update(0, W / H, W, H)
        sub = user.submit(lambda cb: r.record(cb, 0, targets.framebuffers[0], W, H))  # nothing to morph
        serial = ctx.last_serial
        before = len(ctx.live_children)
        r.destroy()                                   # the frame is still in flight
        assert "scene renderer" in ctx.retiring and len(ctx.live_children) == before
        user.wait(sub)
        ctx.completed(serial)
        assert ctx.retiring == []
    finally:
        user.wait_idle()
        ctx.completed()
        targets.destroy()
        color.destroy()
        r.destroy()
    assert ctx.live_children == []
    assert user.messages == []
