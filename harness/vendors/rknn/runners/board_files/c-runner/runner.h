/* What hil_c_runner.c and result.c share: exit codes, the run's state, helpers. */
#ifndef HIL_RUNNER_H
#define HIL_RUNNER_H

#include <stdint.h>

#include "rknn_api.h"

#define RUNNER_VERSION "hil_c_runner 1"
#define PATH_SIZE 4096

enum exit_code {
    EXIT_OK = 0,
    EXIT_USAGE = 10,
    EXIT_LOAD = 20,      /* rknn_init rejected the model file or found no usable device */
    EXIT_INIT = 21,      /* rknn_init or a query failed otherwise (e.g. an unsupported op) */
    EXIT_CORE_MASK = 22, /* rknn_set_core_mask refused the requested mask */
    EXIT_SET_IO = 30,    /* rknn_set_io_mem refused a buffer */
    EXIT_ALLOC = 31,     /* rknn_create_mem returned nothing */
    EXIT_RUN = 40,
    EXIT_TIMEOUT = 50,
    EXIT_IO = 60,   /* a file could not be read or written */
    EXIT_INPUT = 61 /* an input file does not fit the model */
};

typedef struct {
    rknn_tensor_attr attr;   /* RKNN_QUERY_INPUT_ATTR / RKNN_QUERY_OUTPUT_ATTR */
    rknn_tensor_attr native; /* RKNN_QUERY_NATIVE_INPUT_ATTR / RKNN_QUERY_NATIVE_OUTPUT_ATTR */
    rknn_tensor_attr bound;  /* what rknn_set_io_mem was given */
    rknn_tensor_mem *mem;
    uint32_t buffer_size;
    int queried, bound_ok; /* which of the attributes above are filled in */
    char file[64];
} tensor;

typedef struct {
    const char *model_path, *input_dir, *output_dir;
    long core_mask; /* -1: not requested */
    long timeout_ms;
    void *model;
    long model_size;
    rknn_context ctx;
    int have_ctx;
    rknn_sdk_version sdk;
    int have_sdk;
    rknn_input_output_num io;
    tensor *in, *out;
    const char *stage;
    int code, rknn_ret;
    char message[768];
    int64_t t_init, t_query, t_set_io, t_run, t_start;
    /* --perf WARMUP,RUNS,CAP_MS: timed runs after the first; perf_runs 0: not asked */
    long perf_warmup, perf_runs, perf_cap_ms;
    int layers_perf;       /* --layers-perf: the runtime's per-layer table after the runs */
    int64_t *samples;      /* microseconds, n_samples of them */
    long n_samples;
    const char *clock;     /* "rknn_perf_run" (the runtime's own) or "wall" */
    char *perf_detail;     /* RKNN_QUERY_PERF_DETAIL's text, copied; NULL: none */
    const char *no_detail; /* why there is no per-layer table, when asked for */
} run_state;

int64_t now_us(void);
/* DIR/NAME into out[PATH_SIZE]; -1 when too long. */
int join(char *out, const char *dir, const char *name);
const char *ret_name(int ret);
unsigned type_size(rknn_tensor_type type);
/* OUTPUT_DIR/result.json, replaced atomically; -1 when it cannot be written. */
int write_result(const run_state *r, const char *status);

#endif
