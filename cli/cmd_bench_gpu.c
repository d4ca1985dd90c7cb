/*
 * nanoconv bench-gpu: the name `nanoconv bench --backend cuda` had before the two commands became one
 * (cli/cmd_bench.c), kept for the scripts that use it. It runs bench with "--backend cuda" in front of the
 * arguments, so that a --backend of the caller's still wins, and says nothing of its own: its help is bench's.
 *
 *   nanoconv bench-gpu -m models/a.safetensors -m models/b.safetensors -n 100,1000,10000 --check 10000 \
 *       --json bench/results/gpu.json
 */
#include <stdlib.h>

#include "cli.h"

int cmd_bench_gpu(int argc, char **argv) {
    /* bench's arguments: argv[0], "--backend", "cuda", then ours; NULL-terminated as getopt expects. */
    char **bargv = calloc((size_t)argc + 3, sizeof *bargv);
    if (!bargv) return cli_fail(&(nc_error){NC_ERR_NOMEM, "bench-gpu: out of memory"});
    bargv[0] = argv[0];
    bargv[1] = "--backend";
    bargv[2] = "cuda";
    for (int i = 1; i < argc; i++) bargv[i + 2] = argv[i];
    const int status = cmd_bench(argc + 2, bargv);
    free(bargv);
    return status;
}
