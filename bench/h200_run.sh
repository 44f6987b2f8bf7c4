#!/bin/bash
# One H200 session (../shared/DEVICE.md): unpack the Vulkan loader, layers, glslang and wheels, then run "$@".
cd "$(dirname "$0")/../.."          # the shipped checkout root (.gl .gl2 .whl beside .kx)
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
mkdir -p /tmp/x; for f in .gl2/*.deb; do dpkg -x $f /tmp/x; done
export LD_LIBRARY_PATH=/tmp/x/usr/lib/x86_64-linux-gnu PATH=/tmp/x/usr/bin:$PATH \
       VK_LAYER_PATH=/tmp/x/usr/share/vulkan/explicit_layer.d \
       VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
cd .kx
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 VKMORPH_ASSETS=$PWD/tests/assets
"$@"
