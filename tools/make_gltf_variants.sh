#!/usr/bin/env bash
# Regenerates tests/assets/variants/ with glTF-Transform (npm registry; Node.js >= 18). The outputs are committed:
# tests never run this. Usage: tools/make_gltf_variants.sh [gltf-transform command, default: npx -y @gltf-transform/cli@4.5.1]
set -euo pipefail
GT=${1:-"npx -y @gltf-transform/cli@4.5.1"}
cd "$(dirname "$0")/../tests/assets"
for src in SimpleSkin/SimpleSkin.gltf AnimatedMorphCube/AnimatedMorphCube.gltf; do
  b=$(basename "${src%.*}")
  for op in quantize meshopt draco sparse; do $GT $op "$src" "variants/$b.$op.glb"; done
  $GT optimize "$src" "variants/$b.optimize.glb" --texture-compress false --simplify false
done
