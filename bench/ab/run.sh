#!/usr/bin/env bash
# Side by side runs of the direct kernels' variants, GPU half: every layer under the library as built ("none") and
# under each variant of bench/ab/build.sh (its library preloaded), at B = 10000, the median of REPS runs after one,
# two rounds in opposite orders so that a drift in the clocks shows; then a table of the means and each variant's
# speed-up over the first, and DIFF where the output bits differ among variants (different sums, or a bug).
#   bash bench/ab/run.sh .c2              (on the GPU machine, from the tree's root; the table also in $OUT/ab.log)
# VARIANTS ("none" and every .c2/v/*.so.xz by default; NAME=VALUE runs the library as built with it in conv_one's
# environment, as NC_AB_ROWS=1, and LIB:NAME=VALUE the variant LIB so; several as NAME=VALUE,NAME=VALUE), LAYERS
# ("C H W M K POOL ACT U8|...": conv_one's arguments; the zoo's second layers fused and alone, and its first layers
# alone, by default), REPS (20). MEMSET=1 adds a row
# a layer timing a cudaMemsetAsync of its output. NCU=1 then profiles one launch of every variant on each layer of
# NCU_LAYERS (a few counters: bench/ab/ncu_mix.py's table of where the time goes, in $OUT/ncu.log), of the kernels
# NCU_KERNEL names (ncu's -k, regex:^conv_ by default); NCU=source
# profiles the library's kernel in full (ncu --set full: bench/ncu_summary.py's stall lines by instruction).
set -u
D=${1:-.c2}
OUT=${OUT:-/tmp/nc-ab}
mkdir -p "$OUT"
. tools/bundle.sh
nc_unpack_bundle "$D" >/dev/null
V=/tmp/nc-ab-v
mkdir -p $V
for f in "$D"/v/*.so.xz; do [ -f "$f" ] && nc_unxz "$f" "$V/$(basename "$f" .xz)"; done
VARIANTS=${VARIANTS:-none $(for f in "$D"/v/*.so.xz; do [ -f "$f" ] && basename "$f" .so.xz; done | tr '\n' ' ')}
LAYERS=${LAYERS:-"12 33 33 24 7 2 0 0|12 33 33 24 7 0 -1 0|12 33 33 24 5 2 0 0|12 33 33 24 5 0 -1 0|6 30 30 16 5 0 -1 0|6 22 22 16 5 2 0 0|6 22 22 16 5 0 -1 0|4 40 40 16 7 4 1 0|4 40 40 16 7 0 -1 0|1 28 28 50 5 0 -1 0|1 72 72 12 7 0 -1 0|1 70 70 12 5 0 -1 0|1 86 86 4 7 0 -1 0|1 64 64 6 5 0 -1 0|1 48 48 6 5 0 -1 0"}
REPS=${REPS:-20}
IFS='|' read -r -a LS <<<"$LAYERS"
# variant V: P, the library to preload (none: the one as built), and E, what to set in conv_one's environment.
variant() {
    P='' E=''
    case $1 in
    none) ;;
    *:*=*) P=$V/${1%%:*}.so E=${1#*:} ;; # LIB:NAME=VALUE[,NAME=VALUE]: a variant with those set
    *=*) E=$1 ;;                         # NAME=VALUE[,NAME=VALUE]: the library as built, with those set
    *) P=$V/$1.so ;;
    esac
    E=${E//,/ }
}
LOG=$OUT/ab.log
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,temperature.gpu,power.draw --format=csv,noheader
} >"$LOG"
for round in 1 2; do
    list=$VARIANTS
    [ $round = 2 ] && list=$(echo $VARIANTS | tr ' ' '\n' | tac | tr '\n' ' ')
    for v in $list; do
        variant "$v"
        for l in "${LS[@]}"; do
            echo "$v $(env $E LD_PRELOAD=$P $BIN/conv_one $l 10000 $REPS 2>&1)" >>"$LOG"
        done
    done
done
if [ "${MEMSET:-0}" = 1 ]; then
    for l in "${LS[@]}"; do echo "memset $(NC_AB_MEMSET=1 $BIN/conv_one $l 10000 $REPS 2>&1)" >>"$LOG"; done
fi
python3 - "$LOG" <<'PY' | tee -a "$LOG"
import collections, sys
t, h, order, layers = collections.defaultdict(list), collections.defaultdict(set), [], []
for line in open(sys.argv[1]):
    p = line.split()
    if "ms" not in p or "hash" not in p:
        continue
    v, layer = p[0], " ".join(p[1:8])
    t[(v, layer)].append(float(p[p.index("ms") - 1]))
    if v != "memset":
        h[layer].add(p[-1])
    if v not in order:
        order.append(v)
    if layer not in layers:
        layers.append(layer)
print("%-30s" % "layer (ms, x: speed-up)" + "".join("%17s" % v for v in order))
for l in layers:
    means = [sum(t[(v, l)]) / len(t[(v, l)]) if t[(v, l)] else None for v in order]
    base = means[0]
    print("%-30s" % l + "".join("%9.4f x%6.3f" % (m, base / m) if m else "%17s" % "-" for m in means)
          + ("  DIFF" if len(h[l]) > 1 else ""))
PY
[ "${NCU:-0}" != 0 ] || exit 0
IFS='|' read -r -a NL <<<"${NCU_LAYERS:-1 70 70 12 5 0 -1 0|12 33 33 24 5 0 -1 0}"
# The kernels profiled: NCU_KERNEL, ncu's -k (every kernel of the ladder is named conv_...; until 2026-11-28 this was
# regex:conv_direct alone, so that version 15's kernels, conv_wino_..., gave "no metrics").
NCU_KERNEL=${NCU_KERNEL:-regex:^conv_}
if [ "$NCU" = source ]; then
    for l in "${NL[@]}"; do
        n=$(echo $l | tr ' ' _)
        timeout 150 ncu --set full -k "$NCU_KERNEL" --launch-skip 1 --launch-count 1 -o /tmp/nc-ab-$n \
            $BIN/conv_one $l 10000 2 >/dev/null 2>&1
        ncu -i /tmp/nc-ab-$n.ncu-rep --page source --csv --print-source sass >/tmp/nc-ab-$n.csv 2>/dev/null
        echo "## $l" >>"$OUT/ncu.log"
        python3 bench/ncu_summary.py /tmp/nc-ab-$n.csv 12 >>"$OUT/ncu.log" 2>&1
        ncu -i /tmp/nc-ab-$n.ncu-rep --page details 2>/dev/null | grep -E "^ +(Duration|Issue Slots Busy|Registers Per|Achieved Occ|DRAM Throughput|No Eligible|Active Warps Per|Eligible Warps)" >>"$OUT/ncu.log"
    done
    exit 0
fi
MET='gpu__time_duration.sum,sm__cycles_elapsed.avg,device__attribute_multiprocessor_count,smsp__inst_executed.sum'
MET+=',sm__sass_thread_inst_executed_op_ffma_pred_on.sum'
MET+=',regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio$'
MET+=',l1tex__t_requests_pipe_lsu_mem_global_op_st.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum'
MET+=',lts__t_sectors_op_write.sum,dram__bytes_read.sum,dram__bytes_write.sum'
MET+=',l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum'
MET+=',smsp__inst_executed_op_shared_ld.sum,smsp__inst_executed_op_shared_st.sum'
args=()
for v in $VARIANTS; do
    variant "$v"
    for l in "${NL[@]}"; do
        csv=/tmp/nc-ab-mix-${#args[@]}.csv
        # ncu launches env, which preloads the variant into conv_one alone (not into ncu)
        timeout 120 ncu --csv --print-units base --metrics "$MET" -k "$NCU_KERNEL" --launch-skip 1 --launch-count 1 \
            env $E ${P:+LD_PRELOAD=$P} $BIN/conv_one $l 10000 2 2>&1 | tee "$csv.err" | grep '^"' >"$csv"
        args+=("$v" "$l" "$csv")
    done
done
python3 bench/ab/ncu_mix.py "${args[@]}" | tee -a "$OUT/ncu.log"
