#!/bin/bash
# One call on the GPU machine (the `run` tool): the ladder test and the GPU suite, then the GPU benchmark
# (`nanoconv bench --backend cuda`) on the zoo (models/*.safetensors, or seeded models of the six course
# architectures where the zoo is not there yet) at N = 100, 1000, 10000 with the tensor-core tunings swept, every
# version's predictions against cpu-ref on all 10000 test images, and the plot.
# Everything goes under $OUT (at most 8 files come back); a short table is printed last.
#
# The build dir and the whole data set are over the 64 MiB a call carries, so what it needs is packed into one
# git-ignored folder (in .git/info/exclude) first, here, from a -DBUILD_SHARED_LIBS=ON build:
#   tools/make_bundle.sh build-shared .c2      (about 10 MB with the test split)
# then  run: BUILD=.c2 bash bench/gpu_session.sh   carry: .c2
# Binaries are run from /tmp/nc-bin (tools/bundle.sh): the CMake build dir's absolute paths differ on the device
# machine.
set -u
B=${BUILD:-.ladder}
OUT=${OUT:-/tmp/nanoconv-out}
mkdir -p "$OUT"
. "$(dirname "${BASH_SOURCE[0]}")/../tools/bundle.sh"
nc_unpack_bundle "$B"
NC=$BIN/nanoconv
# At most 8 files come back: the session's logs go into one.
LOG=$OUT/session.log
{
    date -u '+%Y-%m-%d %H:%M UTC'
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw,power.limit \
        --format=csv
    nvidia-smi | head -4
} >"$LOG" 2>&1

t0=$SECONDS
for t in test_conv_ladder test_conv_tc; do
    echo "== $t" >>"$LOG"
    "$BIN/$t" >>"$LOG" 2>&1
    echo "== $t exit $?" | tee -a "$LOG"
done
echo "tests: $((SECONDS - t0)) s" | tee -a "$LOG"

ZOO=/tmp/zoo
mkdir -p $ZOO
# The zoo's files, and seeded models of the course architectures (models/README.md's table) it does not have yet.
MODELS=()
ls models/*.safetensors >/dev/null 2>&1 && MODELS=(models/*.safetensors)
init() { "$NC" init --name "$1" --input "$2" --layers "$3" --seed 1 -o "$ZOO/$1.safetensors"; }
D="dense 10 bias; softmax"
has() { ls models/*"$1"*.safetensors >/dev/null 2>&1; }
has 2017 || init fashion-2017 "1x28x28 raw" "conv 50 5; tanh; maxpool 2 2; flatten; dense 500 bias; tanh; $D"
has 2018-spring ||
    init fashion-2018-spring "1x64x64 raw" "conv 6 5; tanh; maxpool 2 2; conv 16 5; flatten; dense 140 bias; tanh; $D"
has 2018-fall ||
    init fashion-2018-fall "1x72x72 raw" "conv 12 7; tanh; maxpool 2 2; conv 24 7; flatten; dense 160 bias; tanh; $D"
has 2019-spring ||
    init fashion-2019-spring "1x48x48 raw" "conv 6 5; tanh; maxpool 2 2; conv 16 5; flatten; dense 140 bias; tanh; $D"
has 2019-fall ||
    init fashion-2019-fall "1x70x70 raw" "conv 12 5; tanh; maxpool 2 2; conv 24 5; flatten; dense 160 bias; tanh; $D"
has 2020 || init fashion-2020 "1x86x86 raw" \
    "conv 4 7; relu; maxpool 2 2; conv 16 7; relu; maxpool 4 4; flatten; dense 32 bias; relu; $D"
ls $ZOO/*.safetensors >/dev/null 2>&1 && MODELS+=($ZOO/*.safetensors)
ARGS=()
for m in "${MODELS[@]}"; do ARGS+=(-m "$m"); done

# The CPUs' time in jiffies from /proc/stat: all of it, and what the hypervisor took (steal), so that a slow
# network line (host side) can be set beside the machine's own load at the time.
cpu_ticks() { awk '/^cpu /{t = 0; for (i = 2; i <= NF; i++) t += $i; print t, $9}' /proc/stat; }
t0=$SECONDS
read -r all0 steal0 < <(cpu_ticks)
"$NC" bench --backend cuda "${ARGS[@]}" -n 100,1000,10000 --reps 20 --sweep --json "$OUT/bench_gpu.json" \
    >"$OUT/bench_gpu.log" 2>&1
echo "bench: exit $?, $((SECONDS - t0)) s" | tee -a "$LOG"
read -r all1 steal1 < <(cpu_ticks)
echo "bench: the hypervisor took $((steal1 - steal0)) of $((all1 - all0)) CPU jiffies (steal)" >>"$LOG"
t0=$SECONDS
"$NC" bench --backend cuda "${ARGS[@]}" --check-only 10000 --json "$OUT/check_gpu.json" >"$OUT/check_gpu.log" 2>&1
echo "check: exit $?, $((SECONDS - t0)) s" | tee -a "$LOG"
python3 bench/plot_ladder.py "$OUT/bench_gpu.json" "$OUT/ladder.svg" "$OUT/ladder.png" >>"$LOG" 2>&1
# The issue's targets as this run measured them (docs/PERFORMANCE.md's first table).
python3 bench/perf_tables.py "$OUT/bench_gpu.json" "$OUT/check_gpu.json" --targets >"$OUT/targets.md" 2>>"$LOG" ||
    echo "perf_tables.py --targets: exit $?" >>"$LOG"

echo "== short table (N = 10000)"
head -3 "$LOG" | tail -2
grep -E '^(GPU|floors|conv versions)' "$OUT/bench_gpu.log"
# Layer, dense and network lines at N = 10000 (not the slow first rungs, nor the sweep: see fastest below).
grep -E '^\S.* 10000  ' "$OUT/bench_gpu.log" | grep -vE 'v1 naive|v2 tiled|v3 |sweep v' | cut -c1-150
grep -E ' 10000  sweep v.*fastest' "$OUT/bench_gpu.log" | cut -c1-150
# Exact versions print no "correctness loss"; the others do, with their precision.
grep -E 'differing' "$OUT/check_gpu.log" | grep -v 'correctness loss' | sed 's/ *FAILED$//' |
    awk '{s += $NF} END {print "predictions differing from cpu-ref, exact versions, all models:", s}'
grep -E 'differing.*correctness loss' "$OUT/check_gpu.log" | cut -c1-30,39-
grep -E 'not run|not taken|FAILED' "$OUT/bench_gpu.log" "$OUT/check_gpu.log" | head -10
grep -E 'largest' "$LOG"
grep -E 'FAILED|CHECK failed|outside' "$LOG" | head -5
