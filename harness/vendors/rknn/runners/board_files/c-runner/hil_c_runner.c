/*
 * hil_c_runner: run one .rknn model once through the RKNN zero-copy C API and record everything.
 *
 *   hil_c_runner MODEL.rknn INPUT_DIR OUTPUT_DIR [--core-mask N] [--timeout-ms N]
 *
 * Boards of the RV1103/RV1106/RK2118 class have only librknnmrt.so, which offers no other path
 * than zero-copy; the same source links against librknnrt.so elsewhere. Inputs are
 * INPUT_DIR/input_<i>.npy: dense (no padding), in the order the runtime reports (4-D inputs
 * NHWC), in the element type to feed; the runner pads each row to the queried w_stride.
 * Outputs are the native buffers as the NPU wrote them (OUTPUT_DIR/output_<i>.bin, padding
 * included), with OUTPUT_DIR/result.json describing every queried attribute. Exit codes and the
 * sidecar are documented in README.md; each failure also prints one line on stderr.
 */
#define _XOPEN_SOURCE 700

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <unistd.h>

#include "npy.h"
#include "rknn_api.h"
#include "runner.h"

#define USAGE                                                                                  \
    "hil_c_runner MODEL.rknn INPUT_DIR OUTPUT_DIR [--core-mask N] [--timeout-ms N] "             \
    "[--perf WARMUP,RUNS,CAP_MS [--layers-perf]]"
#define DEFAULT_TIMEOUT_MS 60000L

/* Read by the SIGALRM handler, so kept outside run_state. */
static const char *volatile g_stage = "start";
static char g_timeout_line[128];

static void enter(run_state *r, const char *stage)
{
    r->stage = stage;
    g_stage = stage;
}

/* Record the first failure only: later cleanup errors must not hide the cause. */
static int fail(run_state *r, int code, int rknn_ret, const char *fmt, ...)
{
    va_list args;

    if (r->code != EXIT_OK)
        return r->code;
    r->code = code;
    r->rknn_ret = rknn_ret;
    va_start(args, fmt);
    vsnprintf(r->message, sizeof r->message, fmt, args);
    va_end(args);
    return code;
}

/* A hung runtime cannot be cleaned up from here; exiting closes its device handles. */
static void on_alarm(int sig)
{
    const char *stage = g_stage;
    ssize_t ignored;

    (void)sig;
    ignored = write(STDERR_FILENO, g_timeout_line, strlen(g_timeout_line));
    ignored = write(STDERR_FILENO, stage, strlen(stage));
    ignored = write(STDERR_FILENO, "\n", 1);
    (void)ignored;
    _exit(EXIT_TIMEOUT);
}

static int arm_timeout(long ms)
{
    struct sigaction action;
    struct itimerval timer;

    if (ms == 0)
        return 0;
    snprintf(g_timeout_line, sizeof g_timeout_line,
             "hil_c_runner: timeout: no answer within %ld ms during ", ms);
    memset(&action, 0, sizeof action);
    action.sa_handler = on_alarm;
    sigemptyset(&action.sa_mask);
    memset(&timer, 0, sizeof timer);
    timer.it_value.tv_sec = ms / 1000;
    timer.it_value.tv_usec = (ms % 1000) * 1000;
    return sigaction(SIGALRM, &action, NULL) || setitimer(ITIMER_REAL, &timer, NULL);
}

static void disarm_timeout(void)
{
    struct itimerval off;

    memset(&off, 0, sizeof off);
    setitimer(ITIMER_REAL, &off, NULL);
}

/* The element type of an .npy file; all supported boards are little-endian. */
static int npy_type(const char *descr, rknn_tensor_type *type)
{
    static const struct {
        const char *descr;
        rknn_tensor_type type;
    } table[] = {{"|u1", RKNN_TENSOR_UINT8}, {"|i1", RKNN_TENSOR_INT8},
                 {"<f2", RKNN_TENSOR_FLOAT16}, {"<f4", RKNN_TENSOR_FLOAT32},
                 {"<i2", RKNN_TENSOR_INT16}, {"<u2", RKNN_TENSOR_UINT16},
                 {"<i4", RKNN_TENSOR_INT32}, {"<u4", RKNN_TENSOR_UINT32},
                 {"<i8", RKNN_TENSOR_INT64}, {"|b1", RKNN_TENSOR_BOOL}};
    size_t i;

    for (i = 0; i < sizeof table / sizeof table[0]; i++) {
        if (strcmp(descr, table[i].descr) == 0) {
            *type = table[i].type;
            return 0;
        }
    }
    return -1;
}

static void shape_text(char *out, size_t size, const uint64_t *dims, int n)
{
    size_t used = (size_t)snprintf(out, size, "(");
    int i;

    for (i = 0; i < n && used < size; i++)
        used += (size_t)snprintf(out + used, size - used, i ? ", %llu" : "%llu",
                                 (unsigned long long)dims[i]);
    if (used < size)
        snprintf(out + used, size - used, ")");
}

/* ---- arguments ---- */

static int parse_number(const char *text, long max, long *value)
{
    int base = strncmp(text, "0x", 2) == 0 || strncmp(text, "0X", 2) == 0 ? 16 : 10;
    char *end;
    long v;

    errno = 0;
    v = strtol(text, &end, base);
    if (errno || end == text || *end || v < 0 || v > max)
        return -1;
    *value = v;
    return 0;
}

/* "WARMUP,RUNS,CAP_MS": untimed runs, timed runs (at least 1), milliseconds they may take. */
static int perf_option(run_state *r, const char *text)
{
    char copy[64], *cap, *runs;

    snprintf(copy, sizeof copy, "%s", text);
    runs = strchr(copy, ',');
    cap = runs ? strchr(runs + 1, ',') : NULL;
    if (runs)
        *runs++ = '\0';
    if (cap)
        *cap++ = '\0';
    if (!cap || parse_number(copy, 100000L, &r->perf_warmup) ||
        parse_number(runs, 100000L, &r->perf_runs) || r->perf_runs < 1 ||
        parse_number(cap, 86400000L, &r->perf_cap_ms) || r->perf_cap_ms < 1)
        return fail(r, EXIT_USAGE, 0, "--perf wants WARMUP,RUNS,CAP_MS (RUNS, CAP_MS >= 1), got '%s'",
                    text);
    return 0;
}

static int option(run_state *r, const char *name, const char *text)
{
    if (!text)
        return fail(r, EXIT_USAGE, 0, "%s needs a value", name);
    if (strcmp(name, "--perf") == 0)
        return perf_option(r, text);
    if (strcmp(name, "--timeout-ms") == 0) {
        if (parse_number(text, 86400000L, &r->timeout_ms))
            return fail(r, EXIT_USAGE, 0, "--timeout-ms wants 0..86400000 (0: none), got '%s'",
                        text);
        return 0;
    }
#ifdef HIL_HAVE_CORE_MASK
    if (parse_number(text, 0xffff, &r->core_mask))
        return fail(r, EXIT_USAGE, 0, "--core-mask wants 0..0xffff, got '%s'", text);
    return 0;
#else
    return fail(r, EXIT_USAGE, 0,
                "--core-mask: built without rknn_set_core_mask (librknnmrt lacks it; "
                "rebuild with CORE_MASK=1 against librknnrt)");
#endif
}

static int parse_args(run_state *r, int argc, char **argv)
{
    const char *positional[3];
    int n = 0, i;

    for (i = 1; i < argc; i++) {
        const char *arg = argv[i];
        const char *eq = strchr(arg, '=');
        char name[32];

        if (strncmp(arg, "--", 2) != 0) {
            if (n == 3)
                return fail(r, EXIT_USAGE, 0, "unexpected argument '%s'", arg);
            positional[n++] = arg;
            continue;
        }
        snprintf(name, sizeof name, "%.*s", eq ? (int)(eq - arg) : (int)strlen(arg), arg);
        if (strcmp(arg, "--layers-perf") == 0) {
            r->layers_perf = 1;
            continue;
        }
        if (strcmp(name, "--timeout-ms") != 0 && strcmp(name, "--core-mask") != 0 &&
            strcmp(name, "--perf") != 0)
            return fail(r, EXIT_USAGE, 0, "unknown option '%s'", arg);
        if (option(r, name, eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL)))
            return r->code;
    }
    if (n != 3)
        return fail(r, EXIT_USAGE, 0, "expected MODEL.rknn INPUT_DIR OUTPUT_DIR, got %d of them",
                    n);
    if (r->layers_perf && r->perf_runs == 0)
        return fail(r, EXIT_USAGE, 0, "--layers-perf needs --perf");
    r->model_path = positional[0];
    r->input_dir = positional[1];
    r->output_dir = positional[2];
    return 0;
}

/* ---- the stages ---- */

static int prepare_output_dir(run_state *r)
{
    char path[PATH_SIZE];

    enter(r, "output-dir");
    if (mkdir(r->output_dir, 0755) != 0 && errno != EEXIST)
        return fail(r, EXIT_IO, 0, "cannot create %s: %s", r->output_dir, strerror(errno));
    /* A stale sidecar from an earlier run must never be taken for this run's. */
    if (join(path, r->output_dir, "result.json"))
        return fail(r, EXIT_USAGE, 0, "OUTPUT_DIR path too long");
    if (remove(path) != 0 && errno != ENOENT)
        return fail(r, EXIT_IO, 0, "cannot remove %s: %s", path, strerror(errno));
    return 0;
}

static int read_model(run_state *r)
{
    FILE *f;

    enter(r, "model-read");
    f = fopen(r->model_path, "rb");
    if (!f)
        return fail(r, EXIT_IO, 0, "cannot open model %s: %s", r->model_path, strerror(errno));
    if (fseek(f, 0, SEEK_END) == 0)
        r->model_size = ftell(f);
    /* rknn_init takes size 0 to mean "model is a path", so an empty file must stop here. */
    if (r->model_size <= 0 || fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return fail(r, EXIT_IO, 0, "model %s is empty or unreadable", r->model_path);
    }
    r->model = malloc((size_t)r->model_size);
    if (!r->model || fread(r->model, 1, (size_t)r->model_size, f) != (size_t)r->model_size) {
        fclose(f);
        return fail(r, EXIT_IO, 0, "cannot read model %s", r->model_path);
    }
    fclose(f);
    return 0;
}

/* The runtime collects per-layer times only when asked at rknn_init; librknnmrt cannot. */
static uint32_t init_flags(const run_state *r)
{
#ifdef HIL_HAVE_PERF_QUERY
    return r->perf_runs > 0 ? RKNN_FLAG_COLLECT_PERF_MASK : 0;
#else
    (void)r;
    return 0;
#endif
}

static int load(run_state *r)
{
    int64_t t0;
    int ret;

    if (read_model(r))
        return r->code;
    enter(r, "init");
    t0 = now_us();
    ret = rknn_init(&r->ctx, r->model, (uint32_t)r->model_size, init_flags(r), NULL);
    r->t_init = now_us() - t0;
    if (ret < 0) {
        /* These say the file or the device is unusable, not that the model was refused. */
        int code = ret == RKNN_ERR_DEVICE_UNAVAILABLE || ret == RKNN_ERR_MALLOC_FAIL ||
                           ret == RKNN_ERR_MODEL_INVALID || ret == RKNN_ERR_DEVICE_UNMATCH ||
                           ret == RKNN_ERR_INCOMPATILE_PRE_COMPILE_MODEL ||
                           ret == RKNN_ERR_INCOMPATILE_OPTIMIZATION_LEVEL_VERSION ||
                           ret == RKNN_ERR_TARGET_PLATFORM_UNMATCH
                       ? EXIT_LOAD
                       : EXIT_INIT;
        return fail(r, code, ret, "rknn_init returned %d (%s)", ret, ret_name(ret));
    }
    r->have_ctx = 1;
#ifdef HIL_HAVE_CORE_MASK
    if (r->core_mask >= 0) {
        enter(r, "core-mask");
        ret = rknn_set_core_mask(r->ctx, (rknn_core_mask)r->core_mask);
        if (ret < 0)
            return fail(r, EXIT_CORE_MASK, ret, "rknn_set_core_mask(0x%lx) returned %d (%s)",
                        r->core_mask, ret, ret_name(ret));
    }
#endif
    return 0;
}

static int query_attr(run_state *r, rknn_query_cmd cmd, const char *what, uint32_t i,
                      rknn_tensor_attr *attr)
{
    int ret;

    memset(attr, 0, sizeof *attr);
    attr->index = i;
    ret = rknn_query(r->ctx, cmd, attr, sizeof *attr);
    if (ret != RKNN_SUCC)
        return fail(r, EXIT_INIT, ret, "rknn_query(%s, %u) returned %d (%s)", what, i, ret,
                    ret_name(ret));
    return 0;
}

static int query(run_state *r)
{
    int64_t t0 = now_us();
    uint32_t i;
    int ret;

    enter(r, "query");
    ret = rknn_query(r->ctx, RKNN_QUERY_SDK_VERSION, &r->sdk, sizeof r->sdk);
    if (ret != RKNN_SUCC)
        return fail(r, EXIT_INIT, ret, "rknn_query(SDK_VERSION) returned %d (%s)", ret,
                    ret_name(ret));
    r->sdk.api_version[sizeof r->sdk.api_version - 1] = '\0';
    r->sdk.drv_version[sizeof r->sdk.drv_version - 1] = '\0';
    r->have_sdk = 1;
    ret = rknn_query(r->ctx, RKNN_QUERY_IN_OUT_NUM, &r->io, sizeof r->io);
    if (ret != RKNN_SUCC)
        return fail(r, EXIT_INIT, ret, "rknn_query(IN_OUT_NUM) returned %d (%s)", ret,
                    ret_name(ret));
    if (r->io.n_input > 1024 || r->io.n_output > 1024) {
        r->io.n_input = r->io.n_output = 0;
        return fail(r, EXIT_INIT, 0, "rknn_query(IN_OUT_NUM) gave implausible counts");
    }
    r->in = calloc(r->io.n_input ? r->io.n_input : 1, sizeof *r->in);
    r->out = calloc(r->io.n_output ? r->io.n_output : 1, sizeof *r->out);
    if (!r->in || !r->out) {
        r->io.n_input = r->io.n_output = 0;
        return fail(r, EXIT_INIT, 0, "out of memory for %u inputs, %u outputs", r->io.n_input,
                    r->io.n_output);
    }
    for (i = 0; i < r->io.n_input; i++) {
        snprintf(r->in[i].file, sizeof r->in[i].file, "input_%u.npy", i);
        if (query_attr(r, RKNN_QUERY_INPUT_ATTR, "INPUT_ATTR", i, &r->in[i].attr) ||
            query_attr(r, RKNN_QUERY_NATIVE_INPUT_ATTR, "NATIVE_INPUT_ATTR", i,
                       &r->in[i].native))
            return r->code;
        r->in[i].queried = 1;
    }
    for (i = 0; i < r->io.n_output; i++) {
        snprintf(r->out[i].file, sizeof r->out[i].file, "output_%u.bin", i);
        if (query_attr(r, RKNN_QUERY_OUTPUT_ATTR, "OUTPUT_ATTR", i, &r->out[i].attr) ||
            query_attr(r, RKNN_QUERY_NATIVE_OUTPUT_ATTR, "NATIVE_OUTPUT_ATTR", i,
                       &r->out[i].native))
            return r->code;
        r->out[i].queried = 1;
    }
    r->t_query = now_us() - t0;
    return 0;
}

/* Dense rows of the .npy go to rows of w_stride elements; the padding is zeroed. */
static int fill_input(run_state *r, uint32_t i, npy_file *npy)
{
    tensor *t = &r->in[i];
    const rknn_tensor_attr *a = &t->attr;
    /* 4-D inputs are fed NHWC (the zero-copy input order); others as the runtime lists them. */
    int strided = a->n_dims == 4 && (a->fmt == RKNN_TENSOR_NHWC || a->fmt == RKNN_TENSOR_NCHW);
    uint64_t want[RKNN_MAX_DIMS], dense = 1, rows = 1, row, stride, need, n;
    rknn_tensor_type type;
    unsigned size;
    char have_text[160], want_text[160];
    uint32_t d, w_stride;
    int k;

    if (npy_type(npy->descr, &type) != 0 || (size = type_size(type)) == 0)
        return fail(r, EXIT_INPUT, 0, "%s: element type '%s' cannot be fed", t->file,
                    npy->descr);
    for (d = 0; d < a->n_dims && d < RKNN_MAX_DIMS; d++)
        want[d] = a->dims[d];
    if (strided && a->fmt == RKNN_TENSOR_NCHW) {
        want[1] = a->dims[2];
        want[2] = a->dims[3];
        want[3] = a->dims[1];
    }
    shape_text(have_text, sizeof have_text, npy->shape, npy->n_dims);
    shape_text(want_text, sizeof want_text, want, (int)d);
    if (npy->n_dims != (int)d || memcmp(npy->shape, want, d * sizeof want[0]) != 0)
        return fail(r, EXIT_INPUT, 0, "%s has shape %s; input %u '%.64s' needs %s%s", t->file,
                    have_text, i, a->name, want_text, strided ? " (NHWC)" : "");
    for (k = 0; k < (int)d; k++)
        dense *= want[k];
    dense *= size;
    if (npy->data_bytes != dense)
        return fail(r, EXIT_INPUT, 0, "%s holds %llu data bytes; %s %s needs %llu", t->file,
                    (unsigned long long)npy->data_bytes, have_text, npy->descr,
                    (unsigned long long)dense);
    row = stride = dense;
    if (strided) {
        w_stride = a->w_stride ? a->w_stride : (uint32_t)want[2];
        if (w_stride < want[2])
            return fail(r, EXIT_INIT, 0, "runtime gave input %u w_stride %u < width %llu", i,
                        w_stride, (unsigned long long)want[2]);
        rows = want[0] * want[1];
        row = want[2] * want[3] * size;
        stride = (uint64_t)w_stride * want[3] * size;
    }
    need = rows * stride;
    /* size_with_stride counts the runtime's own type; a wider fed type needs more. */
    if (need < a->size_with_stride)
        need = a->size_with_stride;
    if (need > UINT32_MAX)
        return fail(r, EXIT_INPUT, 0, "%s needs %llu bytes, more than the API can address",
                    t->file, (unsigned long long)need);
    t->mem = rknn_create_mem(r->ctx, (uint32_t)need);
    if (!t->mem || !t->mem->virt_addr)
        return fail(r, EXIT_ALLOC, 0, "rknn_create_mem(%llu) failed for input %u",
                    (unsigned long long)need, i);
    t->buffer_size = (uint32_t)need;
    memset(t->mem->virt_addr, 0, need);
    for (n = 0; n < rows; n++) {
        if (fread((unsigned char *)t->mem->virt_addr + n * stride, 1, (size_t)row, npy->f) != row)
            return fail(r, EXIT_IO, 0, "%s: read failed", t->file);
    }
    t->bound = *a;
    t->bound.type = type;
    t->bound.pass_through = 0;
    if (strided)
        t->bound.fmt = RKNN_TENSOR_NHWC;
    return 0;
}

static int bind_inputs(run_state *r)
{
    char path[PATH_SIZE], error[PATH_SIZE + 128];
    npy_file npy;
    uint32_t i;
    int ret;

    enter(r, "inputs");
    for (i = 0; i < r->io.n_input; i++) {
        enum npy_status status;

        if (join(path, r->input_dir, r->in[i].file))
            return fail(r, EXIT_USAGE, 0, "INPUT_DIR path too long");
        status = npy_open(path, &npy, error, sizeof error);
        if (status != NPY_OK)
            return fail(r, status == NPY_MISSING ? EXIT_IO : EXIT_INPUT, 0, "%s", error);
        ret = fill_input(r, i, &npy);
        npy_close(&npy);
        if (ret)
            return ret;
        ret = rknn_set_io_mem(r->ctx, r->in[i].mem, &r->in[i].bound);
        if (ret < 0)
            return fail(r, EXIT_SET_IO, ret, "rknn_set_io_mem(input %u) returned %d (%s)", i, ret,
                        ret_name(ret));
        r->in[i].bound_ok = 1;
    }
    /* One file too many means the harness and the model disagree about the inputs. */
    snprintf(error, sizeof error, "input_%u.npy", r->io.n_input);
    if (join(path, r->input_dir, error) == 0 && access(path, F_OK) == 0)
        return fail(r, EXIT_INPUT, 0, "%s exists but the model has %u inputs", error,
                    r->io.n_input);
    return 0;
}

/* Outputs keep the native layout the NPU writes (NC1HWC2 and padding included). */
static int bind_outputs(run_state *r)
{
    uint32_t i;
    int ret;

    enter(r, "outputs");
    for (i = 0; i < r->io.n_output; i++) {
        tensor *t = &r->out[i];
        uint32_t size = t->native.size_with_stride ? t->native.size_with_stride : t->native.size;

        if (size == 0)
            return fail(r, EXIT_INIT, 0, "runtime gave output %u a size of 0 bytes", i);
        t->mem = rknn_create_mem(r->ctx, size);
        if (!t->mem || !t->mem->virt_addr)
            return fail(r, EXIT_ALLOC, 0, "rknn_create_mem(%u) failed for output %u", size, i);
        t->buffer_size = size;
        t->bound = t->native;
        ret = rknn_set_io_mem(r->ctx, t->mem, &t->bound);
        if (ret < 0)
            return fail(r, EXIT_SET_IO, ret, "rknn_set_io_mem(output %u) returned %d (%s)", i,
                        ret, ret_name(ret));
        t->bound_ok = 1;
    }
    return 0;
}

static int run(run_state *r)
{
    int64_t t0;
    int ret;

    enter(r, "run");
    /* Written now so that a hang or crash during rknn_run still leaves the attributes. */
    if (write_result(r, "running") != 0)
        return fail(r, EXIT_IO, 0, "cannot write %s/result.json", r->output_dir);
    t0 = now_us();
    ret = rknn_run(r->ctx, NULL);
    r->t_run = now_us() - t0;
    if (ret == RKNN_ERR_TIMEOUT)
        return fail(r, EXIT_TIMEOUT, ret, "rknn_run returned %d (%s)", ret, ret_name(ret));
    if (ret < 0)
        return fail(r, EXIT_RUN, ret, "rknn_run returned %d (%s)", ret, ret_name(ret));
    return 0;
}

static int write_outputs(run_state *r)
{
    char path[PATH_SIZE];
    uint32_t i;

    enter(r, "write");
    for (i = 0; i < r->io.n_output; i++) {
        const tensor *t = &r->out[i];
        FILE *f;
        int ok;

        if (join(path, r->output_dir, t->file))
            return fail(r, EXIT_USAGE, 0, "OUTPUT_DIR path too long");
        f = fopen(path, "wb");
        if (!f)
            return fail(r, EXIT_IO, 0, "cannot create %s: %s", path, strerror(errno));
        ok = fwrite(t->mem->virt_addr, 1, t->buffer_size, f) == t->buffer_size;
        if (fclose(f) != 0 || !ok)
            return fail(r, EXIT_IO, 0, "cannot write %s", path);
    }
    return 0;
}

/* One timed run: the runtime's own duration where it offers RKNN_QUERY_PERF_RUN (decided on
 * the first run, so that one run never mixes clocks), else the wall clock around rknn_run. */
static int timed_run(run_state *r, int64_t *us)
{
    int64_t t0 = now_us();
    int ret = rknn_run(r->ctx, NULL);

    *us = now_us() - t0;
    if (ret < 0)
        return fail(r, EXIT_RUN, ret, "timed rknn_run returned %d (%s)", ret, ret_name(ret));
#ifdef HIL_HAVE_PERF_QUERY
    if (strcmp(r->clock, "wall") != 0) {
        rknn_perf_run run;

        memset(&run, 0, sizeof run);
        if (rknn_query(r->ctx, RKNN_QUERY_PERF_RUN, &run, sizeof run) == RKNN_SUCC &&
            run.run_duration > 0) {
            r->clock = "rknn_perf_run";
            *us = run.run_duration;
        } else if (r->n_samples == 0) {
            r->clock = "wall";
        } else {
            return fail(r, EXIT_RUN, 0, "RKNN_QUERY_PERF_RUN failed after earlier runs");
        }
    }
#endif
    return 0;
}

static void layer_table(run_state *r)
{
#ifdef HIL_HAVE_PERF_QUERY
    rknn_perf_detail detail;
    int ret;

    memset(&detail, 0, sizeof detail);
    ret = rknn_query(r->ctx, RKNN_QUERY_PERF_DETAIL, &detail, sizeof detail);
    if (ret != RKNN_SUCC || !detail.perf_data) {
        r->no_detail = "RKNN_QUERY_PERF_DETAIL failed";
        return;
    }
    r->perf_detail = malloc((size_t)detail.data_len + 1);
    if (!r->perf_detail) {
        r->no_detail = "out of memory for the per-layer table";
        return;
    }
    memcpy(r->perf_detail, detail.perf_data, (size_t)detail.data_len);
    r->perf_detail[detail.data_len] = '\0';
#else
    r->no_detail = "built without RKNN_QUERY_PERF_DETAIL (librknnmrt lacks it)";
#endif
}

/* --perf: warm-up runs, then timed runs until RUNS are done or CAP_MS went into them. */
static int time_runs(run_state *r)
{
    int64_t spent = 0, us;
    long i;

    enter(r, "perf");
    r->samples = calloc((size_t)r->perf_runs, sizeof *r->samples);
    if (!r->samples)
        return fail(r, EXIT_IO, 0, "out of memory for %ld samples", r->perf_runs);
    for (i = 0; i < r->perf_warmup; i++) {
        int ret = rknn_run(r->ctx, NULL);

        if (ret < 0)
            return fail(r, EXIT_RUN, ret, "warm-up rknn_run returned %d (%s)", ret,
                        ret_name(ret));
    }
    while (r->n_samples < r->perf_runs && spent < (int64_t)r->perf_cap_ms * 1000) {
        int64_t t0 = now_us();

        if (timed_run(r, &us))
            return r->code;
        r->samples[r->n_samples++] = us;
        spent += now_us() - t0;
    }
    if (r->layers_perf)
        layer_table(r);
    return 0;
}

/* Mems before the context, as the vendor samples do; failures here only warn. */
static void release(run_state *r)
{
    tensor *lists[2];
    uint32_t counts[2], i;
    int l, ret;

    lists[0] = r->in;
    lists[1] = r->out;
    counts[0] = r->io.n_input;
    counts[1] = r->io.n_output;
    for (l = 0; l < 2; l++) {
        for (i = 0; lists[l] && i < counts[l]; i++) {
            if (lists[l][i].mem && (ret = rknn_destroy_mem(r->ctx, lists[l][i].mem)) < 0)
                fprintf(stderr, "hil_c_runner: warning: rknn_destroy_mem returned %d\n", ret);
            lists[l][i].mem = NULL;
        }
    }
    if (r->have_ctx && (ret = rknn_destroy(r->ctx)) < 0)
        fprintf(stderr, "hil_c_runner: warning: rknn_destroy returned %d\n", ret);
    r->have_ctx = 0;
    free(r->model);
    r->model = NULL;
}

int main(int argc, char **argv)
{
    run_state r;
    int have_dir;

    memset(&r, 0, sizeof r);
    r.core_mask = -1;
    r.timeout_ms = DEFAULT_TIMEOUT_MS;
    r.t_init = r.t_query = r.t_set_io = r.t_run = -1;
    r.t_start = now_us();
#ifdef HIL_HAVE_PERF_QUERY
    r.clock = "undecided"; /* the first timed run tries RKNN_QUERY_PERF_RUN */
#else
    r.clock = "wall";
#endif
    enter(&r, "args");
    if (argc == 2 && strcmp(argv[1], "--help") == 0) {
        printf("usage: %s\n", USAGE);
        return EXIT_OK;
    }
    if (parse_args(&r, argc, argv)) {
        fprintf(stderr, "hil_c_runner: usage error: %s (usage: %s)\n", r.message, USAGE);
        return r.code;
    }
    have_dir = prepare_output_dir(&r) == 0;
    if (have_dir) {
        if (arm_timeout(r.timeout_ms) != 0)
            fail(&r, EXIT_IO, 0, "cannot arm the timeout: %s", strerror(errno));
        else if (load(&r) == 0 && query(&r) == 0) {
            int64_t t0 = now_us();

            if (bind_inputs(&r) == 0 && bind_outputs(&r) == 0) {
                r.t_set_io = now_us() - t0;
                if (run(&r) == 0 && write_outputs(&r) == 0 && r.perf_runs > 0)
                    time_runs(&r);
            }
        }
    }
    if (r.code == EXIT_OK)
        enter(&r, "done");
    release(&r); /* still under the timer: a runtime stuck in cleanup must not hang the board */
    disarm_timeout();
    if (have_dir && write_result(&r, r.code == EXIT_OK ? "ok" : "error") != 0)
        fail(&r, EXIT_IO, 0, "cannot write %s/result.json", r.output_dir);
    if (r.code != EXIT_OK)
        fprintf(stderr, "hil_c_runner: %s: %s\n", r.stage, r.message);
    free(r.in);
    free(r.out);
    free(r.samples);
    free(r.perf_detail);
    return r.code;
}
