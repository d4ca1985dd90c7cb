/* nanoconv import-mxnet: converts a model trained in MXNet (symbol + params) into a nanoconv model file. */
#define _GNU_SOURCE
#include <getopt.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "cli.h"
#include "io/mxnet.h"

enum { OPT_INPUT = 1000, OPT_NAME };

int cmd_import_mxnet(int argc, char **argv) {
    static const struct option longopts[] = {{"input", required_argument, 0, OPT_INPUT},
                                             {"name", required_argument, 0, OPT_NAME},
                                             {"output", required_argument, 0, 'o'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    const char *input = NULL, *name = NULL, *out = NULL;
    int c;
    optind = 1;
    while ((c = cli_getopt(argc, argv, "o:h", longopts)) != -1) {
        switch (c) {
        case OPT_INPUT: input = optarg; break;
        case OPT_NAME: name = optarg; break;
        case 'o':
            if (!cli_output_path("-o", optarg)) return EXIT_USAGE;
            out = optarg;
            break;
        case 'h':
            printf("usage: nanoconv import-mxnet NAME-symbol.json NAME-EPOCH.params -o OUT.safetensors "
                   "[--input CxHxW] [--name NAME]\n\n"
                   "Converts a model trained in MXNet (docs/MXNET_IMPORT.md) into a nanoconv model file.\n"
                   "  -o, --output FILE     the model file to write (nothing is left there on failure)\n"
                   "      --input CxHxW     the network's input, which MXNet symbols do not record; pixels are fed\n"
                   "                        raw (0..255) as the course did, or add a scaling: '1x48x48 unit'\n"
                   "                        (default: 1x28x28)\n"
                   "      --name NAME       the model's name (default: OUT's file name without .safetensors)\n");
            return 0;
        default: return EXIT_USAGE;
        }
    }
    if (argc - optind != 2 || !out)
        return cli_usage_error("import-mxnet: needs SYMBOL.json PARAMS -o OUT (nanoconv import-mxnet --help)");

    /* -o naming one of the two inputs (the same file, by any path) would replace it with the model. */
    struct stat so, si;
    if (stat(out, &so) == 0)
        for (int i = 0; i < 2; i++)
            if (stat(argv[optind + i], &si) == 0 && si.st_dev == so.st_dev && si.st_ino == so.st_ino)
                return cli_usage_error("import-mxnet: -o %s is the %s file %s; write the model elsewhere", out,
                                       i ? "params" : "symbol", argv[optind + i]);

    /* The default name is the output's file name: "dir/fashion-2019.safetensors" -> "fashion-2019". */
    char base[64];
    if (!name) {
        const char *slash = strrchr(out, '/');
        const char *b = slash ? slash + 1 : out;
        size_t n = strlen(b);
        if (n > strlen(".safetensors") && !strcmp(b + n - strlen(".safetensors"), ".safetensors"))
            n -= strlen(".safetensors");
        snprintf(base, sizeof base, "%.*s", (int)n, b);
        name = base;
    }

    nc_error err = {0};
    nc_model *m = NULL;
    if (nc_mxnet_import(&m, argv[optind], argv[optind + 1], input, name, &err)) return cli_fail(&err);
    int rc = nc_model_save(m, out, &err);
    if (!rc) {
        nc_model_print_summary(m, stdout);
        printf("wrote %s\n", out);
    }
    nc_model_free(m);
    return rc ? cli_fail(&err) : 0;
}
