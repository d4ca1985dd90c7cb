#!/usr/bin/env bash
# The GPU suite where the CMake build folder is not at hand (a copy of the tree on a GPU machine): the test
# binaries and nanoconv from DIR (plain or gzipped), shared libraries the machine lacks in DIR/lib, the
# Fashion-MNIST .gz files in DIR/data. Runs every GPU test, compute-sanitizer on the layer test, and the eval
# lines of the default model on both GPU backends; logs go under OUT; the summary line closes the output.
#   tools/gpu_suite.sh DIR [OUT]
set -u
D=$1
OUT=${2:-${OUT:-/tmp/nanoconv-gpu}}
mkdir -p "$OUT"
BIN=/tmp/nc-bin
mkdir -p $BIN
for f in "$D"/*; do
    case $f in
    *.gz) gunzip -c "$f" >"$BIN/$(basename "$f" .gz)" && chmod +x "$BIN/$(basename "$f" .gz)" ;;
    *) [ -f "$f" ] && cp "$f" $BIN/ ;;
    esac
done
export LD_LIBRARY_PATH=$PWD/$D/lib:${LD_LIBRARY_PATH:-} NANOCONV_DATA=$PWD/$D/data NANOCONV=$BIN/nanoconv
export PYTHONDONTWRITEBYTECODE=1
pass=0 fail=0
LOG=$OUT/gpu_suite.log
{
    date -u '+%Y-%m-%d %H:%M UTC'
    nvidia-smi --query-gpu=name,driver_version --format=csv,noheader
    $NANOCONV --version
} | tee "$LOG"
run() { # name command...
    local t0=$SECONDS
    "${@:2}" >"$OUT/$1.log" 2>&1
    local rc=$?
    if [ $rc -eq 0 ]; then pass=$((pass + 1)); else fail=$((fail + 1)); fi
    printf '%-28s exit %d  %4d s  %s\n' "$1" $rc $((SECONDS - t0)) "$(grep -E 'passed|SUMMARY|SKIP' "$OUT/$1.log" | tail -1)" |
        tee -a "$LOG"
}
for t in test_gpu_layers test_conv_ladder test_conv_tc; do
    [ -x $BIN/$t ] && run $t $BIN/$t
done
for t in tests/gpu/test_*.py tests/e2e/test_mxnet_import.py; do
    run "$(basename "$t" .py)" python3 "$t"
done
if command -v compute-sanitizer >/dev/null; then
    run memcheck compute-sanitizer --tool memcheck --report-api-errors no --error-exitcode 1 $BIN/test_gpu_layers
    run racecheck compute-sanitizer --tool racecheck --report-api-errors no --error-exitcode 1 $BIN/test_gpu_layers
fi
M=models/fashion-2017-high.safetensors
[ -f "$M" ] || M=$D/models/fashion-2017-high.safetensors
[ -f "$M" ] && {
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
[ -f "$OUT/eval.log" ] && grep -E '^\$|Op Time|Correctness' "$OUT/eval.log" | head -40
echo "gpu_suite: $pass passed, $fail failed"
[ $fail -eq 0 ]
