#!/bin/bash
# One H200 loan (../shared/DEVICE.md): unpack the Vulkan loader, the Khronos layer, glslang, Assimp and the wheels
# brought along in .gl/ .gl2/ .whl/ (ignored paths, carried by the device tool), then run the named phases from the
# repository root, writing everything under $OUT/<tag>-*. Phases: bench-a bench-b (the full benchmark; two runs
# show the spread), suite (the whole test suite under the validation layer with synchronization validation),
# embed (tools/embed_example.py on every test model), render (a headless `vkmorph render` of every test model,
# compared with lavapipe's renders of the same commit in .rendref/, made beforehand by the loop in bench/render_compare.py's docstring),
# extra (bench/h200_extra.py: bake, k-of-N changed, draws CPU), crowd (vkmorph.app.crowd_bench --quick),
# crowd-full (N up to 10,000), crowd-passes (both skinning paths per pass; heads), sustained (frames back to
# back with GPU animation: SUST_COUNTS, SUST_LOD, SUST_FRAMES, SUST_ARGS), suite-par (the suite over 8 pytest-xdist
# workers), bake (bench/bake.py: BAKE_FRAMES, BAKE_REPEATS), raster-probe (bench/raster_probe.py: the LOD crowd's raster passes drawn several ways, N = 1,000 ... 10,000),
# copy-threads (bench/bake_copy_threads.py: COPYT_ARGS).
#   bash bench/h200_session.sh 2026-12-01-h200 bench-a bench-b      # one device call
#   bash bench/h200_session.sh 2026-12-01-h200 suite embed render   # another
set -u
cd "$(dirname "$0")/.."
tag=$1; shift
OUT=${OUT:-/tmp/out}; mkdir -p "$OUT"
for f in .gl/*.deb; do dpkg -x "$f" /; done; ldconfig
mkdir -p /tmp/x; for f in .gl2/*.deb; do dpkg -x "$f" /tmp/x; done      # never into /: the image's own libs stay
export LD_LIBRARY_PATH=/tmp/x/usr/lib/x86_64-linux-gnu PATH=/tmp/x/usr/bin:$PATH \
       VK_LAYER_PATH=/tmp/x/usr/share/vulkan/explicit_layer.d \
       VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl || exit 1
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1 VKMORPH_ASSETS=$PWD/tests/assets PYTHONWARNINGS=ignore::SyntaxWarning
# CLOCKS=1: sample the SM clock every 25 ms for the whole call (nvidia-smi polling itself keeps the GPU out of
# its deepest idle states: a run with it is not the same experiment as one without; say which in the file)
clocks_pid=
if [ "${CLOCKS:-0}" = 1 ]; then
  nvidia-smi --query-gpu=timestamp,clocks.sm,utilization.gpu,power.draw --format=csv -lms 25 >"$OUT/$tag-clocks.csv" 2>&1 &
  clocks_pid=$!
  trap '[ -n "$clocks_pid" ] && kill "$clocks_pid" 2>/dev/null' EXIT     # also when a timeout ends the script
fi
models=$(find tests/assets -name '*.gltf' -o -name '*.glb' -o -name '*.fbx' | sort)
for phase in "$@"; do
  echo "== $phase $(date -u +%H:%M:%S)"
  case $phase in
    bench-*)
      r=$OUT/$tag-${phase#bench-}
      timeout ${BENCH_S:-560} python3 -m vkmorph.app.cli bench ${BENCH_ARGS:-} --json "$r.json" --markdown "$r.md" --plot "$r.png" >"$r.txt" 2>&1
      echo "rc=$? $(tail -1 "$r.txt")" ;;
    extra)
      timeout ${EXTRA_S:-150} python3 bench/h200_extra.py "$OUT/$tag-extra.json" ${EXTRA_SECTIONS:-bake dirty draws} >"$OUT/$tag-extra.txt" 2>&1
      echo "rc=$?"; cat "$OUT/$tag-extra.txt" ;;
    crowd)
      timeout 150 python3 -m vkmorph.app.crowd_bench --quick --json "$OUT/$tag-crowd.json" \
        --markdown "$OUT/$tag-crowd.md" >"$OUT/$tag-crowd.txt" 2>&1
      echo "rc=$?"; cat "$OUT/$tag-crowd.txt" ;;
    suite-par)      # the same suite over 8 workers (pytest-xdist, a test file stays in one worker): fits one call
      VKMORPH_VALIDATION=1 timeout ${SUITE_S:-400} python3 -m pytest -q -p no:cacheprovider -ra -n ${SUITE_N:-8} --dist loadfile \
        >"$OUT/$tag-suite.log" 2>&1
      echo "rc=$?"; tail -25 "$OUT/$tag-suite.log" ;;
    crowd-full)     # N = 1 ... 10,000
      timeout ${CROWD_S:-300} python3 -m vkmorph.app.crowd_bench --json "$OUT/$tag-crowd.json" \
        --markdown "$OUT/$tag-crowd.md" >"$OUT/$tag-crowd.txt" 2>&1
      echo "rc=$?"; cat "$OUT/$tag-crowd.txt" ;;
    sustained)      # frames back to back with GPU animation, as an application runs the crowd: fps, GPU ms per pass
      timeout ${SUST_S:-300} python3 -m vkmorph.app.crowd_bench --sustained ${SUST_FRAMES:-120} \
        --counts ${SUST_COUNTS:-1000,10000} --lod ${SUST_LOD:-on} ${SUST_ARGS:-} --json "$OUT/$tag-sustained.json" \
        >"$OUT/$tag-sustained.txt" 2>&1
      echo "rc=$?"; cat "$OUT/$tag-sustained.txt" ;;
    crowd-passes)   # GPU ms per pass of both skinning paths, N = 1 ... 10,000, and Dawn-like heads as a crowd
      timeout ${PASSES_S:-200} python3 -m vkmorph.app.crowd_bench --passes --counts ${PASSES_COUNTS:-1,100,1000,10000} ${PASSES_ARGS:-} \
        --json "$OUT/$tag-crowd-passes.json" --markdown "$OUT/$tag-crowd-passes.md" >"$OUT/$tag-crowd-passes.txt" 2>&1
      echo "rc=$?"; cat "$OUT/$tag-crowd-passes.txt"
      [ "${HEADS_S:-90}" = 0 ] && continue                    # HEADS_S=0: no heads rows this time
      timeout ${HEADS_S:-90} python3 -m vkmorph.app.crowd_bench --heads 1 100 1000 5000 15000 --json "$OUT/$tag-heads.json" \
        --markdown "$OUT/$tag-heads.md" >"$OUT/$tag-heads.txt" 2>&1
      echo "rc=$?"; cat "$OUT/$tag-heads.txt" ;;
    bake)           # bench/bake.py: the bake against numpy, its readback limit, the kernels (and zero copy / copy) in turn
      timeout ${BAKE_S:-300} python3 bench/bake.py --frames ${BAKE_FRAMES:-256} --repeats ${BAKE_REPEATS:-5} \
        --json "$OUT/$tag-bake.json" >"$OUT/$tag-bake.txt" 2>&1
      echo "rc=$?"; cat "$OUT/$tag-bake.txt" ;;
    copy-threads)   # bench/bake_copy_threads.py: the copy path's bake against its host copy's threads and batch size
      timeout ${COPYT_S:-200} python3 bench/bake_copy_threads.py ${COPYT_ARGS:-} --out "$OUT/$tag-copy-threads.txt" \
        >"$OUT/$tag-copy-threads.log" 2>&1
      echo "rc=$?"; cat "$OUT/$tag-copy-threads.txt" ;;
    raster-probe)   # bench/raster_probe.py (issue 25): which way of drawing the LOD crowd's triangles stays linear in N
      timeout ${PROBE_S:-240} python3 bench/raster_probe.py ${PROBE_ARGS:-} --json "$OUT/$tag-raster-probe.json" \
        --out "$OUT/$tag-raster-probe.txt" >"$OUT/$tag-raster-probe.log" 2>&1
      echo "rc=$?"; cat "$OUT/$tag-raster-probe.log" ;;
    suite)
      VKMORPH_VALIDATION=1 timeout 540 python3 -m pytest -q -p no:cacheprovider -ra >"$OUT/$tag-suite.log" 2>&1
      echo "rc=$?"; tail -25 "$OUT/$tag-suite.log" ;;
    embed)
      for m in "" $models; do
        VKMORPH_VALIDATION=1 timeout 120 python3 tools/embed_example.py $m >"$OUT/embed.tmp" 2>&1
        echo "rc=$? ${m:-built-in scene}: $(tail -1 "$OUT/embed.tmp")"
      done | tee "$OUT/$tag-embed.txt"; rm -f "$OUT/embed.tmp" ;;
    render)         # renders stay on the device (too many files to bring back); compared there with the lavapipe
                    # renders of the same commit carried in .rendref/ (bench/render_compare.py, the suite's rule)
      mkdir -p /tmp/render
      for m in $models; do
        n=$(basename "$(dirname "$m")")-$(basename "${m%.*}")
        VKMORPH_VALIDATION=1 timeout 120 python3 -m vkmorph.app.cli render "$m" --out "/tmp/render/$n.png" >"$OUT/r.tmp" 2>&1
        echo "rc=$? $n $(tail -1 "$OUT/r.tmp")"
      done | tee "$OUT/$tag-render.txt"; rm -f "$OUT/r.tmp"
      gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
      python3 bench/render_compare.py .rendref /tmp/render "${gpu:-other GPU}" "$OUT/render-diffs" \
        | tee "$OUT/$tag-render-compare.txt" | tail -3 ;;
    *) echo "unknown phase $phase" ;;
  esac
done
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv >"$OUT/$tag-gpu.txt" 2>&1
[ -n "$clocks_pid" ] && { kill "$clocks_pid" 2>/dev/null; clocks_pid=; }     # the sampler started above, by its pid
echo "== done $(date -u +%H:%M:%S)"
