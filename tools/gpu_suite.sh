#!/usr/bin/env bash
# The GPU suite where the CMake build folder is not at hand (a copy of the tree on a GPU machine): the test
# binaries and nanoconv from DIR (plain, gzipped or xz; from a -DBUILD_SHARED_LIBS=ON build, libnanoconv.so beside
# them, which keeps the bundle small), shared libraries the machine lacks in DIR/lib, the Fashion-MNIST files
# in DIR/data. Runs every GPU test, compute-sanitizer on the layer test, and the eval
# lines of the default model on both GPU backends; logs go under OUT; the summary line closes the output.
#   tools/gpu_suite.sh DIR [OUT]
# STEP_LOGS=DIR puts each step's own log there instead (the summary, gpu_suite.log, and eval.log stay in OUT): on the
# GPU machine, where only 8 files of $OUT come back, `STEP_LOGS=/tmp/suite tools/gpu_suite.sh .c2 $OUT` brings back
# the summary as far as it got, even from a call that runs out of time.
# ONLY=REGEX runs only the steps whose names match it (grep -E); "eval" and "rss" name the closing eval lines and peak
# RSS. With its racechecks the whole suite no longer fits in one 600 s call (cut after 17 steps on 2026-11-26 at
# 19:54), so it takes two: RACECHECK=0 in one, ONLY='^racecheck' in the next (on the H200, 2026-11-28: the
# steps of the first about 470 s, of the second about 550 s; bench/results/gpu-2026-11-28-h200-s62-suite.log).
set -u
D=$1
OUT=${2:-${OUT:-/tmp/nanoconv-gpu}}
SL=${STEP_LOGS:-$OUT}
mkdir -p "$OUT" "$SL"
. "$(dirname "${BASH_SOURCE[0]}")/bundle.sh"
nc_unpack_bundle "$D"
export NANOCONV=$BIN/nanoconv
export PYTHONDONTWRITEBYTECODE=1
pass=0 fail=0
LOG=$OUT/gpu_suite.log
{
    date -u '+%Y-%m-%d %H:%M UTC'
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    $NANOCONV --version
} | tee "$LOG"
want() { [ -z "${ONLY:-}" ] || echo "$1" | grep -qE "$ONLY"; }
run() { # name command...   (each step at most STEP_TIMEOUT seconds, 300 by default: exit 124 past it)
    want "$1" || return 0
    local t0=$SECONDS
    timeout "${STEP_TIMEOUT:-300}" "${@:2}" >"$SL/$1.log" 2>&1
    local rc=$?
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    printf '%-28s exit %d  %4d s  %s\n' "$1" $rc $((SECONDS - t0)) "$(grep -E 'passed|SUMMARY|SKIP' "$SL/$1.log" | tail -1)" |
        tee -a "$LOG"
}
# On an sm_90 GPU the default build runs the reduced precisions' dense layers on wgmma (dense_tc.cu built for sm_90a):
# test_dense_tc must find it there, not quietly test mma.sync twice.
[ "$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null | head -1)" = "9.0" ] &&
    export NC_TEST_WANT_WGMMA=1
for t in $BIN/test_*; do
    [ -x "$t" ] && run "$(basename "$t")" "$t"
done
for t in tests/gpu/test_*.py tests/e2e/test_mxnet_import.py; do
    run "$(basename "$t" .py)" python3 "$t"
done
if command -v compute-sanitizer >/dev/null; then
    NC_GPU_TEST_QUICK=1 run memcheck compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 \
        $BIN/test_gpu_layers
    # RACECHECK=0 leaves out the racecheck steps, the slowest (about 320 s of the suite's 520 on an H100), e.g.
    # where no kernel's code changed.
    [ "${RACECHECK:-1}" = 0 ] ||
        NC_GPU_TEST_QUICK=1 run racecheck compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 1 \
            $BIN/test_gpu_layers
    # The barriers of the layer test's kernels (the dense layer's cp.async pipeline among them).
    NC_GPU_TEST_QUICK=1 run synccheck compute-sanitizer --tool synccheck --report-api-errors no --error-exitcode 1 \
        $BIN/test_gpu_layers
    # The cp.async pipelines of the tensor-core kernels, on the dense test (the conv test's large batches would take
    # many minutes under the tool), and the dense GEMM's clusters: k split among a cluster's blocks, whose sums are
    # added through each other's shared memory between two cluster barriers. racecheck on the test's quick shapes
    # (the whole test took over 280 s under it on an H100; 33 s quick).
    tools="memcheck synccheck"
    [ "${RACECHECK:-1}" = 0 ] || tools="memcheck racecheck synccheck"
    if [ -x $BIN/test_dense_tc ]; then
        for tool in $tools; do
            q=0
            [ $tool = racecheck ] && q=1
            NC_GPU_TEST_QUICK=$q run $tool-dense compute-sanitizer --tool $tool --report-api-errors no \
                --error-exitcode 1 $BIN/test_dense_tc
        done
    fi
    # The fp32 dense layer on int8 slices (dense_i8.cu): its cp.async and wgmma pipelines, the split's atomics;
    # racecheck on two small shapes (the quick test ran past 300 s under it on the H200).
    if [ -x $BIN/test_dense_i8 ]; then
        for tool in $tools; do
            q=1
            [ $tool = racecheck ] && q=2
            NC_GPU_TEST_QUICK=$q run $tool-dense-i8 compute-sanitizer --tool $tool --report-api-errors no \
                --error-exitcode 1 $BIN/test_dense_i8
        done
    fi
    # The convolution's: the zoo's first layers (the fixed-shape kernels' staged outputs and bulk copies), and the
    # exact versions' copies ahead: rings of channel planes and team barriers on layers of several channels
    # (conv_directc.cu), the next band of one-channel layers, pixels aligned or not (conv_direct.cu).
    for tool in $tools; do
        NC_GPU_TEST_QUICK=1 run $tool-conv-tc compute-sanitizer --tool $tool --report-api-errors no --error-exitcode 1 \
            $BIN/test_conv_tc
        NC_GPU_TEST_QUICK=1 run $tool-conv-ladder compute-sanitizer --tool $tool --report-api-errors no \
            --error-exitcode 1 $BIN/test_conv_ladder
    done
fi
M=models/fashion-2017-high.safetensors
[ -f "$M" ] || M=$D/models/fashion-2017-high.safetensors
[ -f "$M" ] && want eval && {
    for b in cuda cudnn; do
        for n in 100 1000 10000; do
            echo "\$ nanoconv eval --model $M -n $n --backend $b"
            $NANOCONV eval --model $M -n $n --backend $b
        done
    done
    for p in tf32 3xtf32; do
        echo "\$ nanoconv eval --model $M --backend cuda --precision $p"
        $NANOCONV eval --model $M --backend cuda --precision $p
    done
    for b in cuda cudnn; do
        echo "\$ nanoconv profile --model $M -n 10000 --backend $b --top 10"
        $NANOCONV profile --model $M -n 10000 --backend $b --top 10
    done
} >"$OUT/eval.log" 2>&1
[ -f "$OUT/eval.log" ] && want eval && grep -E '^\$|Op Time|Correctness' "$OUT/eval.log" | head -40
# Peak resident memory of eval at N = 10000 on every backend (issue 8: under 256 MB each).
[ -f "$M" ] && [ -x /usr/bin/time ] && want rss && for b in cpu-ref cpu cuda cudnn; do
    /usr/bin/time -v $NANOCONV eval --model $M -n 10000 --backend $b >"$SL/rss-$b.log" 2>&1
    rc=$?
    printf 'peak RSS eval --backend %-8s %s kB (exit %d)\n' $b \
        "$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$SL/rss-$b.log")" $rc | tee -a "$LOG"
done
echo "gpu_suite: $pass passed, $fail failed"
[ $fail -eq 0 ]
