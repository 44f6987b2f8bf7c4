"""The demo panel's display metrics (no GPU, no ImGui): what ImGui is told about the window."""

from __future__ import annotations

from vkmorph.app.panel import display_metrics


def test_hidpi_window_scales_by_framebuffer_over_window():
    assert display_metrics((480, 320), (960, 640)) == ((480.0, 320.0), (2.0, 2.0))


def test_window_gone_mid_frame_gives_scale_one_not_the_framebuffer_size():
    """The X server killed the window: GLFW answers (0, 0) for it; the old scale was 960 (fonts ~1000x)."""
    assert display_metrics((0, 0), (960, 640)) == ((960.0, 640.0), (1.0, 1.0))
    assert display_metrics((0, 0), (0, 0)) == ((1.0, 1.0), (1.0, 1.0))


def test_scale_is_clamped():
    assert display_metrics((1, 1), (4000, 4000))[1] == (8.0, 8.0)
