"""Foundation: compute round trip, the harness catching a missing barrier, external handles, bad environments."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from tests.helpers import ROOT

pytestmark = pytest.mark.gpu


def test_compute_round_trip(ctx):
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.interface import COPY
    from vkmorph.gpu.pipeline import ComputePipeline
    from vkmorph.gpu.vk import vk

    rng = np.random.default_rng(1)
    data = rng.integers(0, 2**32, size=(1003, 4), dtype=np.uint32)
    src = M.device_buffer(ctx, data, M.STORAGE, name="src")
    dst = M.device_buffer(ctx, None, M.STORAGE, size=data.nbytes, name="dst")
    pipe = ComputePipeline(ctx, COPY)
    dset = pipe.make_set({"src": src, "dst": dst})
    push = np.array([len(data), 0x5A5A5A5A], np.uint32)

    def record(cb):
        pipe.bind(cb, dset)
        pipe.push(cb, M.cffi_pointer(push), push.nbytes)
        vk.vkCmdDispatch(cb, (len(data) + 255) // 256, 1, 1)

    ctx.submit_and_wait(record)
    out = M.readback(ctx, dst, np.uint32).reshape(-1, 4)
    np.testing.assert_array_equal(out, data ^ np.uint32(0x5A5A5A5A))
    for obj in (pipe, src, dst):
        obj.destroy()
        obj.destroy()  # idempotent
    assert ctx.live_children == []


def test_missing_barrier_is_reported(ctx):
    """Proof the harness can fail: vkCmdUpdateBuffer then a dispatch reading it, no transfer->compute barrier."""
    from vkmorph.gpu import barriers
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.interface import COPY
    from vkmorph.gpu.pipeline import ComputePipeline
    from vkmorph.gpu.vk import vk

    data = np.arange(64 * 4, dtype=np.uint32)
    src = M.device_buffer(ctx, data, M.STORAGE)
    dst = M.device_buffer(ctx, None, M.STORAGE, size=data.nbytes)
    pipe = ComputePipeline(ctx, COPY)
    dset = pipe.make_set({"src": src, "dst": dst})
    push = np.array([64, 0], np.uint32)

    def record(with_barrier):
        def rec(cb):
            vk.vkCmdUpdateBuffer(cb, src.handle, 0, data.nbytes, M.cffi_pointer(data))
            if with_barrier:
                barriers.record(cb, barriers.TRANSFER_TO_COMPUTE)
            pipe.bind(cb, dset)
            pipe.push(cb, M.cffi_pointer(push), push.nbytes)
            vk.vkCmdDispatch(cb, 1, 1, 1)
        return rec

    ctx.submit_and_wait(record(False))
    hazards = [m for m in ctx.messages if "SYNC-HAZARD" in m.message_id]
    assert hazards, f"synchronization validation missed the hazard; saw {ctx.messages}"
    assert any("READ-AFTER-WRITE" in m.message_id for m in hazards)
    ctx.clear_messages()
    ctx.submit_and_wait(record(True))
    assert ctx.errors_and_warnings() == []
    for obj in (pipe, src, dst):
        obj.destroy()


def test_external_handles_are_not_destroyed(user_device):
    from vkmorph.gpu import memory as M

    user, ctx = user_device
    data = np.arange(256, dtype=np.float32)
    buf = M.device_buffer(ctx, data, M.STORAGE)      # borrowed: the upload waits for the host's command buffer
    assert ctx.has_pending
    host_buf, view = user.host_buffer(data.nbytes)
    user.run(lambda cb: (ctx.record_pending(cb), user.record_compute_copy(cb, buf.handle, 0, data.nbytes, host_buf),
                         user.record_compute_read_barrier(cb)))
    ctx.completed()
    np.testing.assert_array_equal(view.view(np.float32), data)
    buf.destroy()
    with ctx:
        pass  # leaving the block destroys what vkmorph made, nothing else
    ctx.destroy()
    assert ctx.device is user.device and ctx.instance is user.instance
    # the user's device still works, then the user destroys it: no validation message anywhere
    user.run(lambda cb: None)  # the fixture then destroys the user's device and checks for messages


def test_leaked_object_is_reported():
    """The registry is the leak detector the fixtures use: an object never destroyed is listed by name."""
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.context import Context
    with Context.create(validation=False) as c:
        kept = M.device_buffer(c, np.zeros(4, np.float32), M.STORAGE, name="forgotten")
        gone = M.device_buffer(c, np.zeros(4, np.float32), M.STORAGE, name="destroyed")
        gone.destroy()
        assert c.live_children == ["forgotten (16 B)"]
    assert kept.handle is None  # ctx.destroy() released it anyway


def test_no_icd_gives_one_line_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "vkmorph.app.cli", "devices"], capture_output=True, text=True,
                       env={**os.environ, "VK_DRIVER_FILES": str(tmp_path / "none.json"),
                            "VK_ICD_FILENAMES": str(tmp_path / "none.json"), "VKMORPH_VALIDATION": "0"},
                       cwd=ROOT, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "mesa-vulkan-drivers" in lines[0], r.stderr


def test_no_validation_layer_gives_one_line_error(tmp_path):
    r = subprocess.run([sys.executable, "-m", "vkmorph.app.cli", "devices"], capture_output=True, text=True,
                       env={**os.environ, "VK_LAYER_PATH": str(tmp_path), "VKMORPH_VALIDATION": "1"},
                       cwd=ROOT, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "vulkan-validationlayers" in lines[0], r.stderr


def test_no_loader_gives_one_line_error():
    """Hide libvulkan.so.1 in a private mount namespace (root only), then run the CLI."""
    import shutil

    lib = "/usr/lib/x86_64-linux-gnu/libvulkan.so.1"
    if os.geteuid() != 0 or not shutil.which("unshare") or not os.path.exists(lib):
        pytest.skip("needs root, unshare and the Debian loader path to hide the loader")
    real = os.path.realpath(lib)
    r = subprocess.run(["unshare", "-m", "sh", "-c",
                        f"mount --bind /dev/null {real} && exec {sys.executable} -m vkmorph.app.cli devices"],
                       capture_output=True, text=True, cwd=ROOT, timeout=120)
    if "mount" in r.stderr and r.returncode != 2:
        pytest.skip(f"cannot make a private mount namespace here: {r.stderr.strip()}")
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "libvulkan1" in lines[0], r.stderr


def test_owner_releases_in_reverse_creation_order(ctx):
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.ownership import Owner

    order = []

    class Thing:
        def __init__(self, name):
            self.name = name

        def destroy(self):
            order.append(self.name)

    owner = Owner(ctx, "group")
    owner.own(Thing("a"))
    owner.add(lambda dev, handle, allocator: order.append(handle), "raw handle")
    buf = owner.own(M.device_buffer(ctx, None, M.STORAGE, size=16, name="buf"))
    owner.own(Thing("b"))
    assert ctx.live_children == ["group", "buf (16 B)"]
    owner.destroy()
    owner.destroy()
    assert order == ["b", "raw handle", "a"] and buf.handle is None and ctx.live_children == []


# ---------------------------------------------------------------------------------------------------------------
# Process-level leaks: every VkInstance/VkDevice goes, whatever fails (tests/leaks.py fails any test that leaves one)

def _live_now(before):
    from tests.leaks import TRACKER

    return [line for line in TRACKER.leaks_since(before) if not line.startswith("file descriptor")]


def test_leak_check_names_what_a_test_left_alive():
    """The check the autouse fixture runs after every test can fail: an instance + device, and a descriptor."""
    from tests.leaks import TRACKER
    from vkmorph.gpu.context import Context

    before = TRACKER.snapshot()
    c = Context.create(validation=False)
    with open(__file__, "rb"):
        leaks = TRACKER.leaks_since(before)
        assert any(line.startswith("VkInstance created at vkmorph/gpu/context.py:") for line in leaks), leaks
        assert any(line.startswith("VkDevice created at vkmorph/gpu/context.py:") for line in leaks), leaks
        assert any(line.startswith("file descriptor") and line.endswith(f"{__file__} left open")
                   for line in leaks), leaks
    c.destroy()
    assert TRACKER.leaks_since(before) == []


def test_context_destroy_releases_device_and_instance_when_a_child_fails():
    from tests.leaks import TRACKER
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.context import Context

    before = TRACKER.snapshot()
    c = Context.create(validation=False)
    buf = M.device_buffer(c, np.zeros(4, np.float32), M.STORAGE, name="after the failing one")

    def explode():
        raise RuntimeError("child destroy failed")

    c.track("exploding child", explode)
    with pytest.raises(RuntimeError, match="child destroy failed"):
        c.destroy()
    assert c.destroyed and buf.handle is None and c.device is None and c.instance is None
    assert _live_now(before) == []


@pytest.mark.parametrize("step", ["_pick_physical_device", "_finish_init"])
def test_failed_context_create_leaves_no_instance_or_device(monkeypatch, step):
    from tests.leaks import TRACKER
    from vkmorph.errors import GpuError
    from vkmorph.gpu.context import Context

    def fail(*a, **k):
        raise GpuError(f"{step} failed (injected)")

    monkeypatch.setattr(Context, step, fail)
    before = TRACKER.snapshot()
    with pytest.raises(GpuError, match="injected"):
        Context.create(validation=False)
    assert _live_now(before) == []


def test_raw_device_that_fails_half_way_leaves_nothing(monkeypatch):
    import vulkan as vk

    from tests.gpu.rawvk import RawDevice
    from tests.leaks import TRACKER

    def fail(*a, **k):
        raise vk.VkErrorInitializationFailed()

    before = TRACKER.snapshot()
    monkeypatch.setattr(vk, "vkCreateCommandPool", fail)       # after the instance and the device exist
    with pytest.raises(vk.VkErrorInitializationFailed):
        RawDevice()
    assert _live_now(before) == []


def test_borrowed_device_is_destroyed_whatever_fails(monkeypatch):
    """The user_device fixture's block: a test failing with work in flight and vkmorph's destroy failing still
    end with the host's device and instance destroyed; so does a from_external that refuses the handles."""
    from tests.gpu.rawvk import borrowed_device
    from tests.leaks import TRACKER
    from vkmorph.errors import UsageError
    from vkmorph.gpu import memory as M
    from vkmorph.gpu.context import Context

    before = TRACKER.snapshot()
    with pytest.raises(RuntimeError, match="destroy failed") as failed:
        with borrowed_device() as (user, ctx):
            buf = M.device_buffer(ctx, np.zeros(4, np.float32), M.STORAGE)
            user.submit(ctx.record_pending)                        # in flight, never waited for by the test
            ctx.track("exploding child", lambda: (_ for _ in ()).throw(RuntimeError("destroy failed")))
            raise RuntimeError("the test failed")
    assert "the test failed" in str(failed.value.__context__)
    assert buf.handle is None and user.device is None and user.instance is None
    assert user.messages == [], user.messages     # incl. the never-waited submission's fence, destroyed too
    assert _live_now(before) == []

    def refuse(*a, **k):
        raise UsageError("refused (injected)")

    monkeypatch.setattr(Context, "from_external", refuse)
    with pytest.raises(UsageError, match="injected"):
        with borrowed_device():
            pass
    assert _live_now(before) == []


_DRIVER_STAYS_LOADED = """
import os
def mapped():
    paths = {line.split()[-1] for line in open("/proc/self/maps") if len(line.split()) == 6}
    return {p for p in paths if ".so" in os.path.basename(p) and not os.path.basename(p).startswith("libVkLayer")}
before = mapped()
import vulkan as vk
host = vk.vkCreateInstance(vk.VkInstanceCreateInfo(), None)     # a host used Vulkan before importing vkmorph
from vkmorph.gpu.context import Context
vk.vkDestroyInstance(host, None)
c = Context.create(validation=False)
driver = mapped() - before
c.destroy()
gone = sorted(driver - mapped())
print("driver:", len(driver), "gone:", gone)
assert driver and not gone
for i in range(40):                       # NVIDIA's driver failed the 31st load/unload cycle in one process
    Context.create(validation=False).destroy()
"""


@pytest.mark.gpu
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc/self/maps")
def test_driver_stays_loaded_after_the_last_context_is_destroyed():
    """The loader dlclose-s the ICD when its last instance goes; NVIDIA's driver fails vkCreateInstance after ~30
    such cycles in one process (vkmorph/gpu/driver_pin.py). A fresh interpreter where a host's own instance came
    first: what the first Context mapped (layers aside) is still mapped after it is destroyed, and 40 more
    create/destroy cycles work."""
    r = subprocess.run([sys.executable, "-c", _DRIVER_STAYS_LOADED], capture_output=True, text=True, cwd=ROOT,
                       env={**os.environ, "VKMORPH_VALIDATION": "0"}, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr


def test_maps_parsing_takes_any_path_bytes():
    """Library paths in /proc/self/maps need not be UTF-8: parsed, not a crash at import."""
    from vkmorph.gpu.driver_pin import parse_maps

    data = (b"7f00-7f01 r-xp 00000000 08:01 1 /opt/caf\xe9/libx.so.1\n"
            b"7f01-7f02 r--p 00000000 00:00 0 [heap]\n"
            b"7f02-7f03 r--p 00000000 08:01 2 /usr/lib/data.bin\n")
    paths = parse_maps(data)
    assert len(paths) == 1 and os.fsencode(next(iter(paths))) == b"/opt/caf\xe9/libx.so.1"
