"""The skinning cost models of render/skin_cost.py (no Vulkan): the byte model, and the time model with a raster
term per drawn vertex and pass, calibrated from the compute path's measured milliseconds and used to predict
the vertex-shader path (crowd_bench --passes prints it beside the measured ratio)."""

from __future__ import annotations

import numpy as np
import pytest

from vkmorph.errors import UsageError
from vkmorph.render import skin_cost as C


def test_calibrated_model_reproduces_the_compute_path_it_was_fit_on():
    counts = {"passes": 2, "stride": 80, "skinned_vertices": 1000.0, "skinned_drawn": 1000.0, "other_drawn": 5000.0}
    cal = C.calibrate(**counts, skin_ms=0.002, raster_ms=0.05)
    m = C.pass_model(**counts, **cal)
    assert np.isclose(m["compute_skin"], 0.002) and np.isclose(m["compute_raster"], 0.05)
    assert np.isclose(m["compute"], 0.052)
    # the vertex path: the same raster term, (80 + 256) bytes instead of 48 per drawn skinned vertex and pass
    extra = 2 * 1000 * (80 + 256 - 48) / cal["bandwidth_gbs"] * 1e-6
    assert np.isclose(m["vertex"], 0.05 + extra)


def test_raster_term_dilutes_the_byte_ratio():
    """Bytes alone: 672 / 480 = 1.4 for an 80-byte vertex in two passes; a raster term per vertex and pass brings
    the ratio towards 1 (both paths pay it), never below it while every vertex is drawn."""
    base = {"passes": 2, "stride": 80, "skinned_vertices": 1.0, "skinned_drawn": 1.0, "other_drawn": 0.0,
            "bandwidth_gbs": 1.0}
    ratios = []
    for r in (0.0, 100.0, 1000.0):
        m = C.pass_model(**base, raster_ns=r)
        ratios.append(m["vertex"] / m["compute"])
    assert np.isclose(ratios[0], 672 / 480) and ratios[0] > ratios[1] > ratios[2] > 1.0


def test_levels_of_detail_turn_the_choice_to_the_vertex_path():
    """Compute skins every vertex, the vertex shader only the drawn ones: below (80 + 304) / (2 (80 + 208)) = 2/3
    of the vertices drawn per pass the vertex path wins, whatever the raster term."""
    for raster in (0.0, 50.0, 5000.0):
        assert C.choose_time(80, 2, bandwidth_gbs=100.0, raster_ns=raster) == "compute"
        assert C.choose_time(80, 2, bandwidth_gbs=100.0, raster_ns=raster, drawn_fraction=0.7) == "compute"
        assert C.choose_time(80, 2, bandwidth_gbs=100.0, raster_ns=raster, drawn_fraction=0.6) == "vertex"


def test_bad_inputs_refused():
    with pytest.raises(UsageError, match="bandwidth_gbs"):
        C.pass_model(passes=2, stride=80, skinned_vertices=1, skinned_drawn=1, other_drawn=0, bandwidth_gbs=0,
                     raster_ns=1)
    with pytest.raises(UsageError, match="calibrate"):
        C.calibrate(passes=2, stride=80, skinned_vertices=1, skinned_drawn=1, other_drawn=0, skin_ms=0,
                    raster_ms=1)
