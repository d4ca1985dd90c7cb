#!/usr/bin/env python3
"""Where a direct kernel's time goes, from one profiled launch (bench/ab/run.sh NCU=1 writes the CSVs).

    python3 bench/ab/ncu_mix.py VARIANT "C H W M K POOL ACT U8" ncu.csv [VARIANT LAYER CSV ...]

Each CSV is `ncu --csv --metrics ...` of one conv_one launch at B = 10000 (run.sh's MET list). The share of the FFMA
peak that the launch reached, at the clock ncu ran it at, is the product of three factors, each printed:
  waste   multiply-adds that count (C K K M Ho Wo B, the layer's) over those executed: tiles past the output, channel
          groups past M (above 1 where a fused layer skips the outputs that no pooling window reads)
  ffma    FFMA executed by threads over 32 times the warps' instructions: the instructions that are not FFMA (loads,
          copies, the epilogue, the walk) and the lanes that idle in an FFMA (ncu counts no warp-level FFMA on sm_90)
  issue   instructions issued over the schedulers' cycles (4 an SM a cycle): the stalls
and then the stall reasons (ncu's warps stalled for each one, per issued instruction) that cost most; where the CSV
has them, a second line: the global stores' sectors a request (4 where a warp stores 128 contiguous bytes), the
sectors written to L2, and the bytes DRAM read and wrote; and a third: shared memory's wavefronts for loads and stores,
each over its instructions (a warp's 16-byte loads without bank conflicts take 4), and both over the SMs' cycles (1
at most: the pipe full); and a last: the launch's cycles, the clock they ran at, and the cycles its instructions take
at a full issue rate. ncu locks the clocks (about 1.5 GHz on the H200, where the bench runs at 1980 MHz), so
that ms(ncu) is no bench time: compare cycles, or the bench's time with a count at its clock (session 76 found a
figure of session 75's that set ncu's time against the bench's)."""
import csv
import sys

B = 10000  # run.sh's images a launch
NEED = ("sm__sass_thread_inst_executed_op_ffma_pred_on.sum", "smsp__inst_executed.sum", "sm__cycles_elapsed.avg",
        "device__attribute_multiprocessor_count", "gpu__time_duration.sum")
SKIP = {"selected", "not_selected"}  # issuing, or another warp issued


def stall_name(metric):
    """smsp__average_warps_issue_stalled_<reason>_per_issue_active.ratio: the reason, else None."""
    if not metric.startswith("smsp__average_warps_issue_stalled_"):
        return None
    return metric[len("smsp__average_warps_issue_stalled_"):].split("_per_issue_active")[0]


def read(path):
    m = {}
    try:
        with open(path, newline="") as f:
            rows = [r for r in csv.reader(f) if len(r) > 3]
    except OSError:
        return m
    if not rows:
        return m
    head = rows[0]
    try:
        name, value = head.index("Metric Name"), head.index("Metric Value")
    except ValueError:
        return m
    for r in rows[1:]:
        try:
            m[r[name]] = float(r[value].replace(",", ""))
        except ValueError:
            pass
    return m


def main(argv):
    if len(argv) < 4 or (len(argv) - 1) % 3:
        sys.exit(__doc__)
    print("%-16s %-22s %8s %6s | %6s %6s %6s | %s" % ("variant", "layer", "ms(ncu)", "share", "waste", "ffma",
                                                       "issue", "stalls a issue (largest)"))
    for i in range(1, len(argv), 3):
        v, layer, m = argv[i], argv[i + 1], read(argv[i + 2])
        C, H, W, M, K = (int(t) for t in layer.split()[:5])
        if any(k not in m for k in NEED):
            err = ""
            try:  # run.sh keeps ncu's messages beside the CSV
                with open(argv[i + 2] + ".err") as f:
                    lines = [t.strip() for t in f if t.strip() and "Disconnected" not in t]
                err = lines[-1] if lines else ""
            except OSError:
                pass
            print("%-16s %-22s  no metrics: %s" % (v, layer, err or "ncu wrote none"))
            continue
        useful = float(C * K * K * M * (H - K + 1) * (W - K + 1)) * B
        thr, inst, cyc, sms, ns = (m[k] for k in NEED)
        waste, ffma, issue = useful / thr, thr / (32 * inst), inst / (4 * sms * cyc)
        stalls = sorted(((val, stall_name(k)) for k, val in m.items() if stall_name(k) not in (None, *SKIP)),
                        reverse=True)[:5]
        ms = ns / 1e6  # run.sh asks for base units
        print("%-16s %-22s %8.3f %5.1f%% | %6.3f %6.3f %6.3f | %s" % (
            v, layer, ms, 100 * waste * ffma * issue, waste, ffma, issue,
            " ".join("%s %.2f" % (n, val) for val, n in stalls)))
        st_req, st_sec = m.get("l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"), \
            m.get("l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum")
        if st_req and st_sec is not None and "dram__bytes_write.sum" in m:
            print("%-16s %-22s global stores: %.1f sectors a request, L2 write sectors %.1f M; DRAM read %.3f GB, "
                  "write %.3f GB" % ("", "", st_sec / st_req, m.get("lts__t_sectors_op_write.sum", 0) / 1e6,
                                     m.get("dram__bytes_read.sum", 0) / 1e9, m["dram__bytes_write.sum"] / 1e9))
        ldw, stw = m.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum"), \
            m.get("l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum")
        ldi, sti = m.get("smsp__inst_executed_op_shared_ld.sum"), m.get("smsp__inst_executed_op_shared_st.sum")
        if ldw is not None and stw is not None and ldi and sti:
            print("%-16s %-22s shared memory: loads %.1f M wavefronts (%.2f an instruction), stores %.1f M (%.2f); "
                  "%.2f wavefronts an SM and cycle" % ("", "", ldw / 1e6, ldw / ldi, stw / 1e6, stw / sti,
                                                            (ldw + stw) / (sms * cyc)))
        print("%-16s %-22s cycles: %.1f thousand at %.0f MHz (ncu's clock), %.1f thousand at a full issue rate" % (
            "", "", cyc / 1e3, cyc / ns * 1e3, inst / (4 * sms) / 1e3))


if __name__ == "__main__":
    main(sys.argv)
