/* The runner's result sidecar (OUTPUT_DIR/result.json) and the names it uses. */
#define _XOPEN_SOURCE 700

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "json.h"
#include "rknn_api.h"
#include "runner.h"

int64_t now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int join(char *out, const char *dir, const char *name)
{
    int n = snprintf(out, PATH_SIZE, "%s/%s", dir, name);

    return n < 0 || n >= PATH_SIZE ? -1 : 0;
}

const char *ret_name(int ret)
{
    static const char *const names[] = {"RKNN_SUCC",
                                        "RKNN_ERR_FAIL",
                                        "RKNN_ERR_TIMEOUT",
                                        "RKNN_ERR_DEVICE_UNAVAILABLE",
                                        "RKNN_ERR_MALLOC_FAIL",
                                        "RKNN_ERR_PARAM_INVALID",
                                        "RKNN_ERR_MODEL_INVALID",
                                        "RKNN_ERR_CTX_INVALID",
                                        "RKNN_ERR_INPUT_INVALID",
                                        "RKNN_ERR_OUTPUT_INVALID",
                                        "RKNN_ERR_DEVICE_UNMATCH",
                                        "RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL",
                                        "RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION",
                                        "RKNN_ERR_TARGET_PLATFORM_UNMATCH"};

    return ret <= 0 && -ret < (int)(sizeof names / sizeof names[0]) ? names[-ret] : "unknown";
}

static const char *type_name(rknn_tensor_type type)
{
    static const char *const names[] = {"FP32",  "FP16",   "INT8",  "UINT8", "INT16", "UINT16",
                                        "INT32", "UINT32", "INT64", "BOOL",  "INT4",  "BF16"};

    return (unsigned)type < sizeof names / sizeof names[0] ? names[type] : "UNKNOWN";
}

/* Bytes per element; 0 for types a buffer cannot be sized for here (INT4, unknown). */
unsigned type_size(rknn_tensor_type type)
{
    static const unsigned sizes[] = {4, 2, 1, 1, 2, 2, 4, 4, 8, 1, 0, 2};

    return (unsigned)type < sizeof sizes / sizeof sizes[0] ? sizes[type] : 0;
}

static const char *fmt_name(rknn_tensor_format fmt)
{
    static const char *const names[] = {"NCHW", "NHWC", "NC1HWC2", "UNDEFINED"};

    return (unsigned)fmt < sizeof names / sizeof names[0] ? names[fmt] : "UNKNOWN";
}

static const char *qnt_name(rknn_tensor_qnt_type qnt)
{
    static const char *const names[] = {"NONE", "DFP", "AFFINE"};

    return (unsigned)qnt < sizeof names / sizeof names[0] ? names[qnt] : "UNKNOWN";
}

static void write_attr(json_writer *w, const char *key, const rknn_tensor_attr *a)
{
    char name[RKNN_MAX_NAME_LEN + 1];
    uint32_t i;

    memcpy(name, a->name, RKNN_MAX_NAME_LEN);
    name[RKNN_MAX_NAME_LEN] = '\0';
    json_object(w, key);
    json_int(w, "index", a->index);
    json_string(w, "name", name);
    json_int(w, "n_dims", a->n_dims);
    json_array(w, "dims");
    for (i = 0; i < a->n_dims && i < RKNN_MAX_DIMS; i++)
        json_int(w, NULL, a->dims[i]);
    json_end(w);
    json_int(w, "n_elems", a->n_elems);
    json_int(w, "size", a->size);
    json_string(w, "fmt", fmt_name(a->fmt));
    json_string(w, "type", type_name(a->type));
    json_string(w, "qnt_type", qnt_name(a->qnt_type));
    json_int(w, "fl", a->fl);
    json_int(w, "zp", a->zp);
    json_number(w, "scale", a->scale);
    json_int(w, "w_stride", a->w_stride);
    json_int(w, "size_with_stride", a->size_with_stride);
    json_int(w, "h_stride", a->h_stride);
    json_int(w, "pass_through", a->pass_through);
    json_end(w);
}

static void write_tensors(json_writer *w, const char *key, const tensor *t, uint32_t n)
{
    uint32_t i;

    json_array(w, key);
    for (i = 0; t && i < n; i++) {
        json_object(w, NULL);
        json_string(w, "file", t[i].file);
        json_int(w, "buffer_size", t[i].buffer_size);
        if (t[i].queried) {
            write_attr(w, "attr", &t[i].attr);
            write_attr(w, "native", &t[i].native);
        }
        if (t[i].bound_ok)
            write_attr(w, "bound", &t[i].bound);
        json_end(w);
    }
    json_end(w);
}

static void write_timing(json_writer *w, const char *key, int64_t us)
{
    if (us < 0)
        json_null(w, key);
    else
        json_int(w, key, us);
}

/* --perf: the clock, the timed runs in microseconds, the per-layer table if asked for. */
static void write_perf(json_writer *w, const run_state *r)
{
    long i;

    json_object(w, "perf");
    json_string(w, "clock", r->clock);
    json_int(w, "warmup", r->perf_warmup);
    json_int(w, "runs", r->perf_runs);
    json_array(w, "samples_us");
    for (i = 0; i < r->n_samples; i++)
        json_int(w, NULL, r->samples[i]);
    json_end(w);
    if (r->perf_detail)
        json_string(w, "detail", r->perf_detail);
    else if (r->layers_perf && r->no_detail)
        json_string(w, "no_detail", r->no_detail);
    json_end(w);
}

/* OUTPUT_DIR/result.json, replaced atomically so a reader never sees half of it. */
int write_result(const run_state *r, const char *status)
{
    char path[PATH_SIZE], tmp[PATH_SIZE];
    json_writer w;
    FILE *f;
    int ok;

    if (join(path, r->output_dir, "result.json") || join(tmp, r->output_dir, "result.json.tmp"))
        return -1;
    f = fopen(tmp, "w");
    if (!f)
        return -1;
    json_open(&w, f);
    json_object(&w, NULL);
    json_string(&w, "runner", RUNNER_VERSION);
    json_string(&w, "status", status);
    json_int(&w, "exit_code", r->code);
    json_string(&w, "stage", r->stage);
    if (r->code != EXIT_OK) {
        json_string(&w, "error", r->message);
        json_int(&w, "rknn_ret", r->rknn_ret);
    }
    json_string(&w, "model", r->model_path);
    json_int(&w, "model_bytes", r->model_size);
    if (r->core_mask < 0)
        json_null(&w, "core_mask");
    else
        json_int(&w, "core_mask", r->core_mask);
    json_int(&w, "timeout_ms", r->timeout_ms);
    if (r->have_sdk) {
        json_object(&w, "sdk");
        json_string(&w, "api_version", r->sdk.api_version);
        json_string(&w, "drv_version", r->sdk.drv_version);
        json_end(&w);
    }
    write_tensors(&w, "inputs", r->in, r->io.n_input);
    write_tensors(&w, "outputs", r->out, r->io.n_output);
    json_object(&w, "timings_us");
    write_timing(&w, "init", r->t_init);
    write_timing(&w, "query", r->t_query);
    write_timing(&w, "set_io", r->t_set_io);
    write_timing(&w, "run", r->t_run);
    write_timing(&w, "total", now_us() - r->t_start);
    json_end(&w);
    if (r->perf_runs > 0)
        write_perf(&w, r);
    json_end(&w);
    fputc('\n', f);
    ok = json_ok(&w);
    if (fclose(f) != 0 || !ok || rename(tmp, path) != 0) {
        remove(tmp);
        return -1;
    }
    return 0;
}
