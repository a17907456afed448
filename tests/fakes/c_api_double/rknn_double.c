/*
 * A test double of the RKNN zero-copy C API, built as librknnmrt.so or librknnrt.so (with
 * -DDOUBLE_CORE_MASK, as only librknnrt exports rknn_set_core_mask, and -DDOUBLE_PERF, as only
 * librknnrt answers RKNN_QUERY_PERF_RUN and RKNN_QUERY_PERF_DETAIL).
 *
 * The "model" is a text descriptor (tests/test_c_runner.py writes them):
 *
 *   hil-double 1
 *   sdk API_VERSION DRIVER_VERSION
 *   input name=x type=UINT8 shape=1,3,5,223 align=16 [fmt=NHWC|NCHW] [zp=Z scale=S]
 *   output name=y type=INT8 shape=1,3,5,223 fmt=NC1HWC2 c2=16 hw=4 from=0,1 [zp=Z scale=S]
 *   fail init|set_io|run RET [message...]    (RET < 0; the message goes to stderr)
 *   hang init|run
 *   sleep run MS                             (rknn_run takes MS milliseconds, then works)
 *
 * With DOUBLE_PERF, RKNN_QUERY_PERF_RUN gives the last rknn_run's duration and
 * RKNN_QUERY_PERF_DETAIL (rknn_init with RKNN_FLAG_COLLECT_PERF_MASK) a layer table in the
 * runtime's format: InputOperator per input, one NPU "Add" per output taking the run's time,
 * OutputOperator per output.
 *
 * Shapes are logical (N, C, H, W for 4-D). Each output computes, per element,
 * 1 + sum_k (k + 2) * in[from[k]], INT8 tensors being affine-quantized ((q - zp) * scale) and
 * other types plain values; integer outputs round half to even and saturate. Inputs are read
 * at w_stride (width aligned to `align`), so a runner that ignores the stride gets wrong
 * results; fresh buffers and every output's padding hold garbage, as on a board. Mems or
 * contexts still alive at exit end the process with status 99, so leaks fail the tests.
 */
#define _XOPEN_SOURCE 700

#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "rknn_api.h"

#define MAX_TENSORS 8
#define MAX_FROM 4
#define MAX_CONTEXTS 4
#define LEAK_EXIT 99

typedef struct {
    char name[RKNN_MAX_NAME_LEN];
    rknn_tensor_type type;
    rknn_tensor_format fmt; /* inputs: the order reported; outputs: the native layout */
    uint32_t n_dims, dims[RKNN_MAX_DIMS];
    uint32_t align, c2, hw; /* input width alignment; NC1HWC2 channel block and plane align */
    int32_t zp;
    float scale;
    uint32_t from[MAX_FROM], n_from;
    rknn_tensor_mem *mem; /* bound by rknn_set_io_mem */
    rknn_tensor_type bound_type;
} tensor;

typedef struct {
    int used;
    char api[256], drv[256];
    tensor in[MAX_TENSORS], out[MAX_TENSORS];
    uint32_t n_in, n_out;
    int fail_set_io, fail_run, hang_run; /* 0: behave */
    long sleep_run_ms;
    char fail_message[256];
    int collect_perf;      /* rknn_init had RKNN_FLAG_COLLECT_PERF_MASK */
    int64_t last_run_us;   /* the last rknn_run's duration; 0: none yet */
    char perf_detail[4096];
} context;

static context g_contexts[MAX_CONTEXTS];
static int g_live_mems;

static void log_error(const char *fmt, ...)
{
    va_list args;

    fputs("E RKNN: ", stderr);
    va_start(args, fmt);
    vfprintf(stderr, fmt, args);
    va_end(args);
    fputc('\n', stderr);
}

static __attribute__((destructor)) void check_leaks(void)
{
    int live = 0, i;

    for (i = 0; i < MAX_CONTEXTS; i++)
        live += g_contexts[i].used;
    if (live || g_live_mems) {
        fprintf(stderr, "rknn double: leaked %d mems and %d contexts\n", g_live_mems, live);
        _exit(LEAK_EXIT);
    }
}

static context *lookup(rknn_context ctx)
{
    return ctx >= 1 && ctx <= MAX_CONTEXTS && g_contexts[ctx - 1].used ? &g_contexts[ctx - 1]
                                                                        : NULL;
}

static unsigned type_size(rknn_tensor_type type)
{
    switch (type) {
    case RKNN_TENSOR_FLOAT32:
        return 4;
    case RKNN_TENSOR_FLOAT16:
        return 2;
    case RKNN_TENSOR_INT8:
    case RKNN_TENSOR_UINT8:
        return 1;
    default:
        return 0;
    }
}

static int parse_type(const char *text, rknn_tensor_type *type)
{
    static const char *const names[] = {"FP32", "FP16", "INT8", "UINT8"};
    int i;

    for (i = 0; i < 4; i++) {
        if (strcmp(text, names[i]) == 0) {
            *type = (rknn_tensor_type)i;
            return 0;
        }
    }
    return -1;
}

static int parse_list(const char *text, uint32_t *out, uint32_t max, uint32_t *n)
{
    char *end;

    for (*n = 0; *text && *n < max; text = *end == ',' ? end + 1 : end) {
        out[(*n)++] = (uint32_t)strtoul(text, &end, 10);
        if (end == text || (*end && *end != ','))
            return -1;
    }
    return *text ? -1 : 0;
}

/* One `input`/`output` line's key=value words. */
static int parse_tensor(char *words, tensor *t, int output)
{
    char *word, *save = NULL;

    t->fmt = RKNN_TENSOR_NHWC;
    t->align = t->c2 = t->hw = 1;
    t->scale = 1.0f;
    t->type = RKNN_TENSOR_TYPE_MAX;
    for (word = strtok_r(words, " \t", &save); word; word = strtok_r(NULL, " \t", &save)) {
        char *value = strchr(word, '=');

        if (!value)
            return -1;
        *value++ = '\0';
        if (strcmp(word, "name") == 0)
            snprintf(t->name, sizeof t->name, "%s", value);
        else if (strcmp(word, "type") == 0 && parse_type(value, &t->type) == 0)
            continue;
        else if (strcmp(word, "shape") == 0 &&
                 parse_list(value, t->dims, RKNN_MAX_DIMS, &t->n_dims) == 0)
            continue;
        else if (strcmp(word, "fmt") == 0)
            t->fmt = strcmp(value, "NCHW") == 0      ? RKNN_TENSOR_NCHW
                     : strcmp(value, "NC1HWC2") == 0 ? RKNN_TENSOR_NC1HWC2
                                                     : RKNN_TENSOR_NHWC;
        else if (strcmp(word, "align") == 0)
            t->align = (uint32_t)atoi(value);
        else if (strcmp(word, "c2") == 0)
            t->c2 = (uint32_t)atoi(value);
        else if (strcmp(word, "hw") == 0)
            t->hw = (uint32_t)atoi(value);
        else if (strcmp(word, "zp") == 0)
            t->zp = atoi(value);
        else if (strcmp(word, "scale") == 0)
            t->scale = strtof(value, NULL);
        else if (output && strcmp(word, "from") == 0 &&
                 parse_list(value, t->from, MAX_FROM, &t->n_from) == 0)
            continue;
        else
            return -1;
    }
    if (!t->name[0] || t->type == RKNN_TENSOR_TYPE_MAX || t->n_dims == 0 || !t->align ||
        !t->c2 || !t->hw || (output && t->n_from == 0))
        return -1;
    if (t->n_dims != 4)
        t->fmt = RKNN_TENSOR_UNDEFINED;
    return 0;
}

static int parse_fail(char *rest, context *c, int *fail_init)
{
    char stage[16];
    int ret = 0, used = 0;

    if (sscanf(rest, "%15s %d %n", stage, &ret, &used) < 2 || ret >= 0)
        return -1;
    snprintf(c->fail_message, sizeof c->fail_message, "%s", rest + used);
    if (strcmp(stage, "init") == 0)
        *fail_init = ret;
    else if (strcmp(stage, "set_io") == 0)
        c->fail_set_io = ret;
    else if (strcmp(stage, "run") == 0)
        c->fail_run = ret;
    else
        return -1;
    return 0;
}

/* Every output's sources exist and have its shape; no output shares an input's name. */
static int check_model(const context *c)
{
    uint32_t i, j, k;

    for (i = 0; i < c->n_out; i++) {
        const tensor *o = &c->out[i];

        for (k = 0; k < o->n_from; k++) {
            const tensor *src = o->from[k] < c->n_in ? &c->in[o->from[k]] : NULL;

            if (!src || src->n_dims != o->n_dims ||
                memcmp(src->dims, o->dims, o->n_dims * sizeof o->dims[0]) != 0)
                return -1;
        }
        for (j = 0; j < c->n_in; j++)
            if (strcmp(c->in[j].name, o->name) == 0)
                return -1;
    }
    return c->n_in && c->n_out ? 0 : -1;
}

static int parse_model(char *text, context *c, int *fail_init, int *hang_init)
{
    char *line, *save = NULL;
    int first = 1;

    for (line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *rest = strchr(line, ' ');
        int bad = 0;

        if (first) {
            if (strcmp(line, "hil-double 1") != 0)
                return -1;
            first = 0;
            continue;
        }
        rest = rest ? rest + 1 : line + strlen(line);
        if (strncmp(line, "input ", 6) == 0)
            bad = c->n_in == MAX_TENSORS || parse_tensor(rest, &c->in[c->n_in++], 0);
        else if (strncmp(line, "output ", 7) == 0)
            bad = c->n_out == MAX_TENSORS || parse_tensor(rest, &c->out[c->n_out++], 1);
        else if (strncmp(line, "sdk ", 4) == 0)
            bad = sscanf(rest, "%255s %255s", c->api, c->drv) != 2;
        else if (strncmp(line, "fail ", 5) == 0)
            bad = parse_fail(rest, c, fail_init);
        else if (strcmp(line, "hang init") == 0)
            *hang_init = 1;
        else if (strcmp(line, "hang run") == 0)
            c->hang_run = 1;
        else if (strncmp(line, "sleep run ", 10) == 0)
            bad = (c->sleep_run_ms = atol(line + 10)) <= 0;
        else
            bad = line[0] != '#';
        if (bad)
            return -1;
    }
    return first ? -1 : check_model(c);
}

int rknn_init(rknn_context *context_out, void *model, uint32_t size, uint32_t flag,
              rknn_init_extend *extend)
{
    int slot, fail_init = 0, hang_init = 0;
    context *c;
    char *text;

    (void)extend;
    if (!context_out || !model || size == 0)
        return RKNN_ERR_PARAM_INVALID;
    for (slot = 0; slot < MAX_CONTEXTS && g_contexts[slot].used; slot++)
        ;
    if (slot == MAX_CONTEXTS)
        return RKNN_ERR_MALLOC_FAIL;
    c = &g_contexts[slot];
    memset(c, 0, sizeof *c);
    snprintf(c->api, sizeof c->api, "2.3.2 (hil double)");
    snprintf(c->drv, sizeof c->drv, "0.9.8 (hil double)");
    text = malloc(size + 1u);
    if (!text)
        return RKNN_ERR_MALLOC_FAIL;
    memcpy(text, model, size);
    text[size] = '\0';
    if (parse_model(text, c, &fail_init, &hang_init) != 0) {
        free(text);
        log_error("invalid RKNN model (not a hil-double 1 descriptor)");
        return RKNN_ERR_MODEL_INVALID;
    }
    free(text);
    while (hang_init)
        sleep(1);
    if (fail_init) {
        log_error("%s", c->fail_message);
        return fail_init;
    }
    c->used = 1;
    c->collect_perf = (flag & RKNN_FLAG_COLLECT_PERF_MASK) != 0;
    *context_out = (rknn_context)(slot + 1);
    return RKNN_SUCC;
}

int rknn_destroy(rknn_context ctx)
{
    context *c = lookup(ctx);
    uint32_t i;

    if (!c)
        return RKNN_ERR_CTX_INVALID;
    for (i = 0; i < c->n_in; i++)
        if (c->in[i].mem)
            return RKNN_ERR_FAIL; /* destroy the mems first, as the vendor samples do */
    for (i = 0; i < c->n_out; i++)
        if (c->out[i].mem)
            return RKNN_ERR_FAIL;
    c->used = 0;
    return RKNN_SUCC;
}

static uint32_t align_up(uint32_t value, uint32_t align)
{
    return (value + align - 1) / align * align;
}

static uint32_t w_stride(const tensor *t)
{
    return t->n_dims == 4 ? align_up(t->dims[3], t->align) : 0;
}

/* NC1HWC2 plane: H*W pixels aligned up to `hw`. */
static uint32_t plane(const tensor *t) { return align_up(t->dims[2] * t->dims[3], t->hw); }

static uint32_t product(const uint32_t *dims, uint32_t n)
{
    uint32_t p = 1, i;

    for (i = 0; i < n; i++)
        p *= dims[i];
    return p;
}

static void common_attr(const tensor *t, rknn_tensor_attr *a)
{
    snprintf(a->name, sizeof a->name, "%s", t->name);
    a->type = t->type;
    a->qnt_type = t->type == RKNN_TENSOR_INT8 ? RKNN_TENSOR_QNT_AFFINE_ASYMMETRIC
                                              : RKNN_TENSOR_QNT_NONE;
    a->zp = t->zp;
    a->scale = t->scale;
    a->n_dims = t->n_dims;
    memcpy(a->dims, t->dims, sizeof a->dims);
    a->n_elems = product(t->dims, t->n_dims);
    a->size = a->n_elems * type_size(t->type);
    a->size_with_stride = a->size;
    a->fmt = t->fmt;
}

/* Inputs: 4-D ones in the reported order with the width padded to `align`. */
static void input_attr(const tensor *t, rknn_tensor_attr *a)
{
    const uint32_t *d = t->dims;

    common_attr(t, a);
    if (t->n_dims != 4)
        return;
    if (t->fmt == RKNN_TENSOR_NHWC) {
        a->dims[1] = d[2];
        a->dims[2] = d[3];
        a->dims[3] = d[1];
    }
    a->w_stride = w_stride(t);
    a->size_with_stride = d[0] * d[2] * a->w_stride * d[1] * type_size(t->type);
}

static void output_attr(const tensor *t, rknn_tensor_attr *a, int native)
{
    const uint32_t *d = t->dims;
    uint32_t c1;

    common_attr(t, a);
    if (t->n_dims != 4)
        return;
    a->fmt = RKNN_TENSOR_NCHW;
    if (!native || t->fmt == RKNN_TENSOR_NCHW)
        return;
    a->fmt = t->fmt;
    if (t->fmt == RKNN_TENSOR_NHWC) {
        a->dims[1] = d[2];
        a->dims[2] = d[3];
        a->dims[3] = d[1];
        return;
    }
    c1 = (d[1] + t->c2 - 1) / t->c2;
    a->n_dims = 5;
    a->dims[1] = c1;
    a->dims[2] = d[2];
    a->dims[3] = d[3];
    a->dims[4] = t->c2;
    a->n_elems = product(a->dims, 5);
    a->size = a->n_elems * type_size(t->type);
    a->size_with_stride = d[0] * c1 * plane(t) * t->c2 * type_size(t->type);
}

#ifdef DOUBLE_PERF
/* The layer table as librknnrt prints it (the columns the harness reads). */
static void write_detail(context *c)
{
    static const char rule[] = "------------------------------------------------------------\n";
    size_t used = 0, size = sizeof c->perf_detail;
    uint32_t i;

#define ADD(...) used += (size_t)snprintf(c->perf_detail + used, used < size ? size - used : 0, \
                                          __VA_ARGS__)
    ADD("%s%50s\n%s", rule, "Network Layer Information Table", rule);
    ADD("ID   OpType           DataType Target Time(us)   FullName\n%s", rule);
    for (i = 0; i < c->n_in; i++)
        ADD("%-4u InputOperator    FLOAT16  CPU    %-10d InputOperator:%s\n", i + 1, 3,
            c->in[i].name);
    for (i = 0; i < c->n_out; i++)
        ADD("%-4u Add              FLOAT16  NPU    %-10lld Add:%s\n", c->n_in + i + 1,
            (long long)(c->last_run_us / (c->n_out ? c->n_out : 1)), c->out[i].name);
    for (i = 0; i < c->n_out; i++)
        ADD("%-4u OutputOperator   FLOAT16  CPU    %-10d OutputOperator:%s\n",
            c->n_in + c->n_out + i + 1, 2, c->out[i].name);
    ADD("%sTotal Operator Elapsed Per Frame Time(us): %lld\n", rule, (long long)c->last_run_us);
#undef ADD
}

static int perf_query(context *c, rknn_query_cmd cmd, void *info, uint32_t size)
{
    if (cmd == RKNN_QUERY_PERF_RUN) {
        rknn_perf_run *run = info;

        if (size != sizeof *run || !c->last_run_us)
            return RKNN_ERR_PARAM_INVALID;
        run->run_duration = c->last_run_us;
        return RKNN_SUCC;
    }
    {
        rknn_perf_detail *detail = info;

        if (size != sizeof *detail || !c->collect_perf || !c->last_run_us) {
            log_error("RKNN_QUERY_PERF_DETAIL needs RKNN_FLAG_COLLECT_PERF_MASK and a run");
            return RKNN_ERR_PARAM_INVALID;
        }
        write_detail(c);
        detail->perf_data = c->perf_detail;
        detail->data_len = strlen(c->perf_detail);
        return RKNN_SUCC;
    }
}
#endif

static int64_t monotonic_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int rknn_query(rknn_context ctx, rknn_query_cmd cmd, void *info, uint32_t size)
{
    context *c = lookup(ctx);
    rknn_tensor_attr *attr = info;
    int input = cmd == RKNN_QUERY_INPUT_ATTR || cmd == RKNN_QUERY_NATIVE_INPUT_ATTR;
    uint32_t index;

    if (!c)
        return RKNN_ERR_CTX_INVALID;
    if (!info)
        return RKNN_ERR_PARAM_INVALID;
    if (cmd == RKNN_QUERY_SDK_VERSION) {
        rknn_sdk_version *v = info;

        if (size != sizeof *v)
            return RKNN_ERR_PARAM_INVALID;
        snprintf(v->api_version, sizeof v->api_version, "%s", c->api);
        snprintf(v->drv_version, sizeof v->drv_version, "%s", c->drv);
        return RKNN_SUCC;
    }
#ifdef DOUBLE_PERF
    if (cmd == RKNN_QUERY_PERF_RUN || cmd == RKNN_QUERY_PERF_DETAIL)
        return perf_query(c, cmd, info, size);
#endif
    if (cmd == RKNN_QUERY_IN_OUT_NUM) {
        rknn_input_output_num *io = info;

        if (size != sizeof *io)
            return RKNN_ERR_PARAM_INVALID;
        io->n_input = c->n_in;
        io->n_output = c->n_out;
        return RKNN_SUCC;
    }
    if (size != sizeof *attr || (!input && cmd != RKNN_QUERY_OUTPUT_ATTR &&
                                 cmd != RKNN_QUERY_NATIVE_OUTPUT_ATTR))
        return RKNN_ERR_PARAM_INVALID;
    index = attr->index;
    if (index >= (input ? c->n_in : c->n_out))
        return RKNN_ERR_PARAM_INVALID;
    memset(attr, 0, sizeof *attr);
    attr->index = index;
    if (input)
        input_attr(&c->in[index], attr);
    else
        output_attr(&c->out[index], attr, cmd == RKNN_QUERY_NATIVE_OUTPUT_ATTR);
    return RKNN_SUCC;
}

#ifdef DOUBLE_CORE_MASK
int rknn_set_core_mask(rknn_context ctx, rknn_core_mask core_mask)
{
    context *c = lookup(ctx);

    if (!c)
        return RKNN_ERR_CTX_INVALID;
    switch (core_mask) {
    case RKNN_NPU_CORE_AUTO:
    case RKNN_NPU_CORE_0:
    case RKNN_NPU_CORE_1:
    case RKNN_NPU_CORE_2:
    case RKNN_NPU_CORE_0_1:
    case RKNN_NPU_CORE_0_1_2:
    case RKNN_NPU_CORE_ALL:
        return RKNN_SUCC;
    default:
        log_error("invalid core mask 0x%x", (unsigned)core_mask);
        return RKNN_ERR_PARAM_INVALID;
    }
}
#endif

rknn_tensor_mem *rknn_create_mem(rknn_context ctx, uint32_t size)
{
    rknn_tensor_mem *mem;

    if (!lookup(ctx) || size == 0 || !(mem = calloc(1, sizeof *mem)))
        return NULL;
    mem->virt_addr = malloc(size);
    if (!mem->virt_addr) {
        free(mem);
        return NULL;
    }
    memset(mem->virt_addr, 0xA5, size); /* DMA buffers are not cleared on a board either */
    mem->size = size;
    mem->fd = -1;
    g_live_mems++;
    return mem;
}

int rknn_destroy_mem(rknn_context ctx, rknn_tensor_mem *mem)
{
    context *c = lookup(ctx);
    uint32_t i;

    if (!c)
        return RKNN_ERR_CTX_INVALID;
    if (!mem)
        return RKNN_ERR_PARAM_INVALID;
    for (i = 0; i < c->n_in; i++)
        if (c->in[i].mem == mem)
            c->in[i].mem = NULL;
    for (i = 0; i < c->n_out; i++)
        if (c->out[i].mem == mem)
            c->out[i].mem = NULL;
    free(mem->virt_addr);
    free(mem);
    g_live_mems--;
    return RKNN_SUCC;
}

/* The runtime tells inputs from outputs by the tensor name, as indices overlap. */
int rknn_set_io_mem(rknn_context ctx, rknn_tensor_mem *mem, rknn_tensor_attr *attr)
{
    context *c = lookup(ctx);
    rknn_tensor_attr want;
    uint32_t i;

    if (!c)
        return RKNN_ERR_CTX_INVALID;
    if (!mem || !attr)
        return RKNN_ERR_PARAM_INVALID;
    if (c->fail_set_io) {
        log_error("%s", c->fail_message);
        return c->fail_set_io;
    }
    for (i = 0; i < c->n_in; i++) {
        tensor *t = &c->in[i];
        uint32_t need;

        if (strcmp(attr->name, t->name) != 0)
            continue;
        if (attr->index != i || type_size(attr->type) == 0 ||
            (t->n_dims == 4 && attr->fmt != RKNN_TENSOR_NHWC)) {
            log_error("input %u: zero-copy wants index %u, NHWC and FP32/FP16/INT8/UINT8", i, i);
            return RKNN_ERR_PARAM_INVALID;
        }
        input_attr(t, &want);
        need = want.size_with_stride / type_size(t->type) * type_size(attr->type);
        if (mem->size < need) {
            log_error("input %u: buffer of %u bytes, needs %u", i, mem->size, need);
            return RKNN_ERR_PARAM_INVALID;
        }
        t->mem = mem;
        t->bound_type = attr->type;
        return RKNN_SUCC;
    }
    for (i = 0; i < c->n_out; i++) {
        tensor *t = &c->out[i];

        if (strcmp(attr->name, t->name) != 0)
            continue;
        output_attr(t, &want, 1);
        if (attr->index != i || attr->fmt != want.fmt || attr->type != want.type ||
            mem->size < want.size_with_stride) {
            log_error("output %u: wants its native attributes and %u bytes", i,
                      want.size_with_stride);
            return RKNN_ERR_PARAM_INVALID;
        }
        t->mem = mem;
        return RKNN_SUCC;
    }
    log_error("no tensor named '%.64s'", attr->name);
    return RKNN_ERR_PARAM_INVALID;
}

static double load_value(const tensor *t, size_t i)
{
    const void *base = t->mem->virt_addr;

    switch (t->bound_type) {
    case RKNN_TENSOR_FLOAT32:
        return ((const float *)base)[i];
    case RKNN_TENSOR_FLOAT16:
        return (double)((const _Float16 *)base)[i];
    case RKNN_TENSOR_INT8:
        return (((const int8_t *)base)[i] - t->zp) * (double)t->scale;
    default:
        return ((const uint8_t *)base)[i];
    }
}

static double saturate(double v, double low, double high)
{
    return v < low ? low : v > high ? high : v;
}

static void store_value(const tensor *t, size_t i, double v)
{
    void *base = t->mem->virt_addr;

    switch (t->type) {
    case RKNN_TENSOR_FLOAT32:
        ((float *)base)[i] = (float)v;
        break;
    case RKNN_TENSOR_FLOAT16:
        ((_Float16 *)base)[i] = (_Float16)v;
        break;
    case RKNN_TENSOR_INT8:
        ((int8_t *)base)[i] = (int8_t)saturate(nearbyint(v / t->scale) + t->zp, -128, 127);
        break;
    default:
        ((uint8_t *)base)[i] = (uint8_t)saturate(nearbyint(v), 0, 255);
        break;
    }
}

/* Element (n, c, h, w) of a 4-D tensor in its buffer; other ranks are flat (only w counts). */
static size_t offset(const tensor *t, int input, uint32_t n, uint32_t c, uint32_t h, uint32_t w)
{
    uint32_t C = t->dims[1], H = t->dims[2], W = t->dims[3];

    if (t->n_dims != 4)
        return w;
    if (input)
        return (((size_t)n * H + h) * w_stride(t) + w) * C + c;
    if (t->fmt == RKNN_TENSOR_NCHW)
        return (((size_t)n * C + c) * H + h) * W + w;
    if (t->fmt == RKNN_TENSOR_NHWC)
        return (((size_t)n * H + h) * W + w) * C + c;
    return (((size_t)n * ((C + t->c2 - 1) / t->c2) + c / t->c2) * plane(t) + h * W + w) * t->c2 +
           c % t->c2;
}

static void compute(const context *c, const tensor *o)
{
    uint32_t four[4] = {1, 1, 1, product(o->dims, o->n_dims)};
    const uint32_t *d = o->n_dims == 4 ? o->dims : four;
    uint32_t n, ch, h, w, k;

    memset(o->mem->virt_addr, 0x7B, o->mem->size); /* padding keeps this garbage */
    for (n = 0; n < d[0]; n++)
        for (ch = 0; ch < d[1]; ch++)
            for (h = 0; h < d[2]; h++)
                for (w = 0; w < d[3]; w++) {
                    double v = 1;

                    for (k = 0; k < o->n_from; k++) {
                        const tensor *in = &c->in[o->from[k]];

                        v += (k + 2) * load_value(in, offset(in, 1, n, ch, h, w));
                    }
                    store_value(o, offset(o, 0, n, ch, h, w), v);
                }
}

int rknn_run(rknn_context ctx, rknn_run_extend *extend)
{
    context *c = lookup(ctx);
    int64_t started = monotonic_us();
    uint32_t i;

    (void)extend;
    if (!c)
        return RKNN_ERR_CTX_INVALID;
    for (i = 0; i < c->n_in; i++)
        if (!c->in[i].mem)
            return RKNN_ERR_INPUT_INVALID;
    for (i = 0; i < c->n_out; i++)
        if (!c->out[i].mem)
            return RKNN_ERR_OUTPUT_INVALID;
    if (c->sleep_run_ms) {
        struct timespec pause = {c->sleep_run_ms / 1000, c->sleep_run_ms % 1000 * 1000000L};

        nanosleep(&pause, NULL);
    }
    while (c->hang_run)
        sleep(1);
    if (c->fail_run) {
        log_error("%s", c->fail_message);
        return c->fail_run;
    }
    for (i = 0; i < c->n_out; i++)
        compute(c, &c->out[i]);
    c->last_run_us = monotonic_us() - started;
    if (c->last_run_us < 1)
        c->last_run_us = 1;
    return RKNN_SUCC;
}
