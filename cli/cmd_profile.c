/*
 * nanoconv profile: `nanoconv eval` recorded by CUPTI and reported as the nvprof
 * profile every report of the course began with: a table of GPU activities
 * (kernels, memory copies and sets) and one of CUDA API calls, each sorted by
 * total time, then the activities that take 90% of the GPU time.
 *
 * Our convolution kernels are named conv_*_kernel (src/cuda/conv_*.cu). Each is
 * tagged with the version that ran it, "[v15 winograd]": of the versions the
 * run's layers ran on (the tuner may pick one a layer), those that launch a
 * kernel of that name (nc_cuda_conv_kernel_versions); "[v6/v14]" where several
 * of them share it.
 */
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"

#ifndef NC_HAVE_CUDA

int cmd_profile(int argc, char **argv) {
    if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
        printf("usage: nanoconv profile --model FILE [eval options] [--top N] [--wide] [--csv | --json]\n\n"
               "Runs eval under CUPTI and prints nvprof's tables. This nanoconv was built without CUDA: it cannot.\n");
        return 0;
    }
    return cli_usage_error("profile: this nanoconv was built without CUDA, and a profile records the GPU's work; "
                           "rebuild it where nvcc is installed");
}

#else

#include "cuda/cuda_layers.h"
#include "cuda/profile.h"

/* Columns of the name in the text table unless --wide: the whole line stays under 160 columns. */
#define NAME_COLUMNS 70
/* The share of the GPU time whose activities the summary names, as the course asked. */
#define SUMMARY_PERCENT 90.0
/* Longest name in the summary line: longer ones lose their template arguments, then their tail. */
#define SUMMARY_NAME_MAX 60

typedef struct {
    long top; /* rows per table before the rest are summed into one; 0 = all */
    int wide, csv;
    unsigned ran; /* the versions the run's convolutions ran on, bits 1 << v (cuda backend; else 0) */
    nc_prof *prof;
} profile_ctx;

/* A row as shown: a table's row, or the sum of those past --top. */
typedef struct {
    const char *type; /* "kernel", "memcpy", "memset", "runtime", "driver" or "others" */
    const char *name;
    unsigned conv_versions; /* the convolution versions that ran the kernel, bits 1 << v; 0 for none */
    uint64_t calls, total_ns, min_ns, max_ns;
} shown_row;

static const char *kind_name(nc_prof_kind k) {
    switch (k) {
    case NC_PROF_KERNEL: return "kernel";
    case NC_PROF_MEMCPY: return "memcpy";
    case NC_PROF_MEMSET: return "memset";
    case NC_PROF_RUNTIME: return "runtime";
    default: return "driver";
    }
}

/* The convolution versions a row of the profile belongs to: those of the run that launch a kernel of its name. */
static unsigned conv_versions(const profile_ctx *c, const nc_prof_row *r) {
    return r->kind == NC_PROF_KERNEL ? nc_cuda_conv_kernel_versions(r->name) & c->ran : 0;
}

/* The one version in a set, or 0 where it holds none or several. */
static int single_version(unsigned versions) {
    for (int v = 1; v < 32; v++)
        if (versions == 1u << v) return v;
    return 0;
}

/* A row's tag, "[v15 winograd]" or "[v6/v14]" where several versions share the kernel; "" for none. */
static void version_tag(char *buf, size_t n, unsigned versions) {
    const int one = single_version(versions);
    size_t used = 0;
    buf[0] = '\0';
    if (one) {
        snprintf(buf, n, "[v%d %s]", one, nc_cuda_conv_version_name(one));
        return;
    }
    for (int v = 1; v < 32 && used < n; v++)
        if (versions & 1u << v) used += (size_t)snprintf(buf + used, n - used, "%sv%d", used ? "/" : "[", v);
    if (used && used + 1 < n) snprintf(buf + used, n - used, "]");
}

/* The table's rows as shown, at most top + 1 (the last one "[N others]"); returns their count. */
static size_t shown_rows(shown_row *out, char *others_name, size_t others_len, const profile_ctx *c, nc_prof_table t) {
    size_t n;
    const nc_prof_row *rows = nc_prof_rows(c->prof, t, &n);
    const size_t keep = c->top > 0 && (size_t)c->top < n ? (size_t)c->top : n;
    for (size_t i = 0; i < keep; i++)
        out[i] = (shown_row){.type = kind_name(rows[i].kind),
                             .name = rows[i].name,
                             .conv_versions = conv_versions(c, &rows[i]),
                             .calls = rows[i].calls,
                             .total_ns = rows[i].total_ns,
                             .min_ns = rows[i].min_ns,
                             .max_ns = rows[i].max_ns};
    if (keep == n) return n;
    shown_row *o = &out[keep];
    snprintf(others_name, others_len, "[%zu others]", n - keep);
    *o = (shown_row){.type = "others", .name = others_name, .min_ns = UINT64_MAX};
    for (size_t i = keep; i < n; i++) {
        o->calls += rows[i].calls;
        o->total_ns += rows[i].total_ns;
        if (rows[i].min_ns < o->min_ns) o->min_ns = rows[i].min_ns;
        if (rows[i].max_ns > o->max_ns) o->max_ns = rows[i].max_ns;
    }
    return keep + 1;
}

/* nvprof's times: five significant digits in the largest unit that keeps one before the point ("50.515ms"). */
static void format_time(char *buf, size_t n, double ns) {
    static const struct {
        double scale;
        const char *unit;
    } units[] = {{1e9, "s"}, {1e6, "ms"}, {1e3, "us"}};
    /* The bounds sit half a unit of the last digit low, so that 999.996us prints as 1.0000ms, not 1000.00us. */
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (ns < units[i].scale * (1 - 5e-6)) continue;
        const double v = ns / units[i].scale;
        const int decimals = i == 0 ? 5 : v < 9.99995 ? 4 : v < 99.9995 ? 3 : 2;
        snprintf(buf, n, "%.*f%s", decimals, v, units[i].unit);
        return;
    }
    snprintf(buf, n, "%.0fns", ns);
}

static double percent(uint64_t part, uint64_t total) {
    return total ? 100.0 * (double)part / (double)total : 0.0;
}

static double avg_ns(const shown_row *r) {
    return r->calls ? (double)r->total_ns / (double)r->calls : 0.0;
}

/* A name without its parameter list or a template's return type ("void "): JSON's short_name, the summary's. */
static void short_name(char *buf, size_t n, const char *name) {
    if (!strncmp(name, "void ", 5)) name += 5;
    size_t len = strlen(name);
    int depth = 0;
    for (size_t i = 0; i < len; i++) {
        if (name[i] == '<')
            depth++;
        else if (name[i] == '>' && depth > 0)
            depth--;
        else if (name[i] == '(' && depth == 0 && i > 0) {
            len = i;
            break;
        }
    }
    snprintf(buf, n, "%.*s", (int)len, name);
}

/* The short name, made to fit SUMMARY_NAME_MAX: "implicit_convolve_sgemm<...>", "sm80_xmma_gemm_f32f32_f32...". */
static void summary_name(char *buf, size_t n, const char *name) {
    char sn[1024];
    short_name(sn, sizeof sn, name);
    size_t len = strlen(sn);
    if (len > SUMMARY_NAME_MAX) {
        char *lt = strchr(sn, '<'), *gt = strrchr(sn, '>');
        if (lt && gt > lt + 3) {
            memmove(lt + 4, gt, strlen(gt) + 1);
            memcpy(lt + 1, "...", 3);
            len = strlen(sn);
        }
    }
    if (len > SUMMARY_NAME_MAX) memcpy(sn + SUMMARY_NAME_MAX - 3, "...", 4);
    snprintf(buf, n, "%s", sn);
}

/* The name with its version tag first, "[v5 direct] void conv_direct_kernel<5>(...)", so that a cut keeps it.
 * Returns a new string (NULL for want of memory). */
static char *tagged_name(const shown_row *r) {
    char tag[128];
    version_tag(tag, sizeof tag, r->conv_versions);
    const size_t n = strlen(tag) + 1 + strlen(r->name) + 1;
    char *s = malloc(n);
    if (s) snprintf(s, n, "%s%s%s", tag, *tag ? " " : "", r->name);
    return s;
}

static void print_table(const profile_ctx *c, nc_prof_table t, const char *title) {
    size_t n;
    nc_prof_rows(c->prof, t, &n);
    const uint64_t total = nc_prof_total_ns(c->prof, t);
    shown_row *rows = malloc((n + 1) * sizeof *rows);
    char others[32];
    if (!rows) {
        printf("%16s  (out of memory)\n", title);
        return;
    }
    const size_t shown = shown_rows(rows, others, sizeof others, c, t);
    if (!shown) printf("%16s  (none recorded)\n", title);
    for (size_t i = 0; i < shown; i++) {
        const shown_row *r = &rows[i];
        char pct[16], tot[16], avg[16], mn[16], mx[16];
        snprintf(pct, sizeof pct, "%.2f%%", percent(r->total_ns, total));
        format_time(tot, sizeof tot, (double)r->total_ns);
        format_time(avg, sizeof avg, avg_ns(r));
        format_time(mn, sizeof mn, (double)r->min_ns);
        format_time(mx, sizeof mx, (double)r->max_ns);
        char *name = tagged_name(r);
        const char *shown_name = name ? name : r->name;
        const int cut = !c->wide && strlen(shown_name) > NAME_COLUMNS;
        printf("%16s%9s%10s%10llu%10s%10s%10s  %.*s%s\n", i == 0 ? title : "", pct, tot, (unsigned long long)r->calls,
               avg, mn, mx, cut ? NAME_COLUMNS - 3 : (int)strlen(shown_name), shown_name, cut ? "..." : "");
        free(name);
    }
    free(rows);
}

/* CSV's quoting: the field in double quotes, each quote doubled. */
static void print_csv_string(const char *s) {
    putchar('"');
    for (; *s; s++) {
        if (*s == '"') putchar('"');
        putchar(*s);
    }
    putchar('"');
}

static void print_csv_table(const profile_ctx *c, nc_prof_table t, const char *title) {
    size_t n;
    nc_prof_rows(c->prof, t, &n);
    const uint64_t total = nc_prof_total_ns(c->prof, t);
    shown_row *rows = malloc((n + 1) * sizeof *rows);
    char others[32];
    if (!rows) return;
    const size_t shown = shown_rows(rows, others, sizeof others, c, t);
    for (size_t i = 0; i < shown; i++) {
        const shown_row *r = &rows[i];
        printf("\"%s\",%.4f,%.9g,%llu,%.9g,%.9g,%.9g,", title, percent(r->total_ns, total), (double)r->total_ns * 1e-9,
               (unsigned long long)r->calls, avg_ns(r) * 1e-9, (double)r->min_ns * 1e-9, (double)r->max_ns * 1e-9);
        char *name = tagged_name(r);
        print_csv_string(name ? name : r->name);
        free(name);
        putchar('\n');
    }
    free(rows);
}

static cJSON *json_table(const profile_ctx *c, nc_prof_table t) {
    size_t n;
    nc_prof_rows(c->prof, t, &n);
    const uint64_t total = nc_prof_total_ns(c->prof, t);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "total_s", (double)total * 1e-9);
    cJSON *arr = cJSON_AddArrayToObject(o, "rows");
    shown_row *rows = malloc((n + 1) * sizeof *rows);
    char others[32];
    if (!rows) return o;
    const size_t shown = shown_rows(rows, others, sizeof others, c, t);
    for (size_t i = 0; i < shown; i++) {
        const shown_row *r = &rows[i];
        char sn[1024];
        short_name(sn, sizeof sn, r->name);
        cJSON *row = cJSON_CreateObject();
        cJSON_AddStringToObject(row, "type", r->type);
        cJSON_AddStringToObject(row, "name", r->name);
        cJSON_AddStringToObject(row, "short_name", sn);
        if (r->conv_versions) { /* every version that ran it; the one, where there is one */
            cJSON *vs = cJSON_AddArrayToObject(row, "conv_versions");
            for (int v = 1; v < 32; v++)
                if (r->conv_versions & 1u << v) cJSON_AddItemToArray(vs, cJSON_CreateNumber(v));
            const int one = single_version(r->conv_versions);
            if (one) {
                cJSON_AddNumberToObject(row, "conv_version", one);
                cJSON_AddStringToObject(row, "conv_version_name", nc_cuda_conv_version_name(one));
            }
        }
        cJSON_AddNumberToObject(row, "time_percent", percent(r->total_ns, total));
        cJSON_AddNumberToObject(row, "time_s", (double)r->total_ns * 1e-9);
        cJSON_AddNumberToObject(row, "calls", (double)r->calls);
        cJSON_AddNumberToObject(row, "avg_s", avg_ns(r) * 1e-9);
        cJSON_AddNumberToObject(row, "min_s", (double)r->min_ns * 1e-9);
        cJSON_AddNumberToObject(row, "max_s", (double)r->max_ns * 1e-9);
        cJSON_AddItemToArray(arr, row);
    }
    free(rows);
    return o;
}

/* The fewest GPU activities, longest first, that take SUMMARY_PERCENT of the GPU time; returns their count. */
static size_t summary_count(const nc_prof *p, double *share) {
    size_t n;
    const nc_prof_row *rows = nc_prof_rows(p, NC_PROF_GPU, &n);
    const uint64_t total = nc_prof_total_ns(p, NC_PROF_GPU);
    uint64_t sum = 0;
    size_t k = 0;
    while (k < n && percent(sum, total) < SUMMARY_PERCENT) sum += rows[k++].total_ns;
    *share = percent(sum, total);
    return k;
}

static void print_summary(const profile_ctx *c) {
    const nc_prof *p = c->prof;
    size_t n;
    const nc_prof_row *rows = nc_prof_rows(p, NC_PROF_GPU, &n);
    const uint64_t total = nc_prof_total_ns(p, NC_PROF_GPU);
    double share;
    const size_t k = summary_count(p, &share);
    if (!k) {
        printf("==PROF== No GPU activity was recorded: is --backend a GPU backend (cuda, cudnn)?\n");
        return;
    }
    printf("==PROF== %.0f%% of the GPU time is in %zu of %zu activities (%.2f%%):", SUMMARY_PERCENT, k, n, share);
    for (size_t i = 0; i < k; i++) {
        char sn[SUMMARY_NAME_MAX + 1];
        summary_name(sn, sizeof sn, rows[i].name);
        char tag[128];
        version_tag(tag, sizeof tag, conv_versions(c, &rows[i]));
        printf("%s %s%s%s %.2f%%", i ? "," : "", sn, *tag ? " " : "", tag, percent(rows[i].total_ns, total));
    }
    printf("\n");
}

static cJSON *json_summary(const nc_prof *p) {
    size_t n;
    const nc_prof_row *rows = nc_prof_rows(p, NC_PROF_GPU, &n);
    double share;
    const size_t k = summary_count(p, &share);
    cJSON *o = cJSON_CreateObject();
    cJSON_AddNumberToObject(o, "threshold_percent", SUMMARY_PERCENT);
    cJSON_AddNumberToObject(o, "percent", share);
    cJSON *names = cJSON_AddArrayToObject(o, "names");
    for (size_t i = 0; i < k; i++) cJSON_AddItemToArray(names, cJSON_CreateString(rows[i].name));
    return o;
}

static void warn_incomplete(const nc_prof *p) {
    if (nc_prof_dropped(p))
        fprintf(stderr,
                "nanoconv: warning: CUPTI dropped %llu records for want of buffers; the tables are incomplete\n",
                (unsigned long long)nc_prof_dropped(p));
    if (nc_prof_untimed(p))
        fprintf(stderr, "nanoconv: warning: %llu records had no timestamps; they count as calls of no time\n",
                (unsigned long long)nc_prof_untimed(p));
}

/* eval's hook: the run is over and its session freed, so every record is made; stop and report. */
static int profile_done(void *ctx, const nc_timing *t, cJSON *json) {
    profile_ctx *c = ctx;
    nc_error err = {0};
    for (int i = 0; i < t->n_conv; i++)
        if (t->conv_version[i] > 0 && t->conv_version[i] < 32) c->ran |= 1u << t->conv_version[i];
    if (nc_prof_stop(c->prof, &err)) return cli_fail(&err);
    warn_incomplete(c->prof);
    if (json) {
        cJSON *o = cJSON_AddObjectToObject(json, "profile");
        cJSON_AddStringToObject(o, "cupti", nc_prof_library(c->prof));
        cJSON_AddNumberToObject(o, "cupti_version", nc_prof_cupti_version(c->prof));
        cJSON_AddNumberToObject(o, "top", (double)c->top);
        cJSON_AddItemToObject(o, "gpu_activities", json_table(c, NC_PROF_GPU));
        cJSON_AddItemToObject(o, "api_calls", json_table(c, NC_PROF_API));
        cJSON_AddItemToObject(o, "summary", json_summary(c->prof));
        cJSON_AddNumberToObject(o, "dropped_records", (double)nc_prof_dropped(c->prof));
        cJSON_AddNumberToObject(o, "untimed_records", (double)nc_prof_untimed(c->prof));
        return 0;
    }
    printf("==PROF== Profiling result:\n");
    if (c->csv) {
        printf("\"Type\",\"Time(%%)\",\"Time(s)\",\"Calls\",\"Avg(s)\",\"Min(s)\",\"Max(s)\",\"Name\"\n");
        print_csv_table(c, NC_PROF_GPU, "GPU activities");
        print_csv_table(c, NC_PROF_API, "API calls");
    } else {
        printf("%16s%9s%10s%10s%10s%10s%10s  %s\n", "Type", "Time(%)", "Time", "Calls", "Avg", "Min", "Max", "Name");
        print_table(c, NC_PROF_GPU, "GPU activities:");
        print_table(c, NC_PROF_API, "API calls:");
    }
    print_summary(c);
    return 0;
}

static void usage(void) {
    printf("usage: nanoconv profile --model FILE [eval options] [--top N] [--wide] [--csv | --json]\n\n"
           "Runs `nanoconv eval` under CUPTI and prints nvprof's profile after eval's lines: every GPU activity\n"
           "(kernels, memory copies and sets) and every CUDA API call, by total time, with the activities that take\n"
           "90%% of the GPU time. Needs a CUDA GPU. The backend defaults to cuda. The recording starts as the session\n"
           "that runs the images opens: the default's choice of kernels, where it times them, is made before.\n"
           "Our convolution kernels are tagged with the version that ran them (\"[v15 winograd]\"; \"[v6/v14]\"\n"
           "where layers on both versions ran kernels of that name).\n\n"
           "      --top N           show the N longest rows of each table and sum the rest into one\n"
           "      --wide            show kernel names whole (default: cut to %d columns)\n"
           "      --csv             the tables as CSV\n"
           "      --json            eval's JSON object with the tables under \"profile\"\n\n"
           "and every option of nanoconv eval (nanoconv eval --help).\n",
           NAME_COLUMNS);
}

/* eval's start(): what was recorded until then (CUDA's start, the session that chose the default's kernels) is
 * dropped, and the recording starts again for the evaluation. */
static int profile_start(void *ctx, nc_error *err) {
    profile_ctx *c = ctx;
    nc_prof_free(c->prof);
    c->prof = NULL;
    return nc_prof_start(&c->prof, err);
}

int cmd_profile(int argc, char **argv) {
    profile_ctx c = {0};
    int json = 0;
    const char *backend = NULL, *conv_kernel = "0", *precision = "fp32"; /* eval's options: the last one counts */
    /* eval's arguments: argv less our own options, after a default "--backend cuda" (+2), NULL-terminated (+1). */
    char **eargv = calloc((size_t)argc + 3, sizeof *eargv);
    nc_error err = {0};
    if (!eargv) return cli_fail(&(nc_error){NC_ERR_NOMEM, "profile: out of memory"});
    int eargc = 0;
    eargv[eargc++] = argv[0];
    eargv[eargc++] = "--backend";
    eargv[eargc++] = "cuda";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        long v;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            free(eargv);
            usage();
            return 0;
        } else if (!strcmp(a, "--wide")) {
            c.wide = 1;
        } else if (!strcmp(a, "--csv")) {
            c.csv = 1;
        } else if (!strcmp(a, "--top") || !strncmp(a, "--top=", 6)) {
            const char *val = a[5] == '=' ? a + 6 : i + 1 < argc ? argv[++i] : NULL;
            if (!val || !cli_parse_int("--top", val, 1, 1L << 30, &v)) {
                free(eargv);
                return val ? EXIT_USAGE : cli_usage_error("profile: --top takes a number of rows");
            }
            c.top = v;
        } else {
            json |= !strcmp(a, "--json");
            const char *next = i + 1 < argc ? argv[i + 1] : NULL;
            if (!strcmp(a, "--backend")) backend = next;
            if (!strncmp(a, "--backend=", 10)) backend = a + 10;
            if (!strcmp(a, "--conv-kernel")) conv_kernel = next;
            if (!strncmp(a, "--conv-kernel=", 14)) conv_kernel = a + 14;
            if (!strcmp(a, "--precision")) precision = next;
            if (!strncmp(a, "--precision=", 12)) precision = a + 12;
            eargv[eargc++] = argv[i];
        }
    }
    if (json && c.csv) {
        free(eargv);
        return cli_usage_error("profile: --csv and --json exclude each other");
    }
    if (backend) { /* the user's, then: drop the default */
        memmove(eargv + 1, eargv + 3, (size_t)(eargc - 3) * sizeof *eargv);
        eargc -= 2;
        eargv[eargc] = NULL;
    }
    const char *cache = getenv("NANOCONV_CACHE_DIR");
    if ((!backend || !strcmp(backend, "cuda")) && conv_kernel && atoi(conv_kernel) == 0 && precision &&
        !strcmp(precision, "fp32") && cache && !strcmp(cache, "off"))
        fprintf(stderr, "nanoconv: warning: NANOCONV_CACHE_DIR=off: the session profiled chooses the default's "
                        "kernels again, so the profile also holds their timing runs of every version\n");

    if (nc_prof_start(&c.prof, &err)) {
        free(eargv);
        return cli_fail(&err);
    }
    const eval_hook hook = {profile_start, profile_done, &c};
    const int status = eval_main(eargc, eargv, &hook);
    nc_prof_free(c.prof);
    free(eargv);
    return status;
}

#endif
