#include "npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#define NPY_MAX_HEADER 65536

static enum npy_status failed(npy_file *npy, enum npy_status status, char *error,
                              size_t error_size, const char *fmt, ...)
{
    va_list args;

    va_start(args, fmt);
    vsnprintf(error, error_size, fmt, args);
    va_end(args);
    npy_close(npy);
    return status;
}

/* The text after `'key':` and any spaces, or NULL. */
static const char *value_of(const char *header, const char *key)
{
    const char *p = strstr(header, key);

    if (!p)
        return NULL;
    p += strlen(key);
    while (*p == ' ')
        p++;
    return p;
}

static int parse_shape(const char *p, npy_file *npy)
{
    char *end;

    if (*p++ != '(')
        return -1;
    npy->n_dims = 0;
    for (;;) {
        while (*p == ' ' || *p == ',')
            p++;
        if (*p == ')')
            return 0;
        if (!isdigit((unsigned char)*p) || npy->n_dims == NPY_MAX_DIMS)
            return -1;
        errno = 0;
        npy->shape[npy->n_dims++] = strtoull(p, &end, 10);
        if (errno || end == p)
            return -1;
        p = end;
        if (*p == 'L') /* Python 2 long suffix */
            p++;
    }
}

enum npy_status npy_open(const char *path, npy_file *npy, char *error, size_t error_size)
{
    unsigned char preamble[12];
    size_t len_bytes, header_len;
    char *header = NULL;
    const char *p;
    long data_start, file_end;

    memset(npy, 0, sizeof *npy);
    npy->f = fopen(path, "rb");
    if (!npy->f)
        return failed(npy, NPY_MISSING, error, error_size, "%s: %s", path, strerror(errno));
    if (fread(preamble, 1, 10, npy->f) != 10 || memcmp(preamble, "\x93NUMPY", 6) != 0 ||
        preamble[6] < 1 || preamble[6] > 3)
        return failed(npy, NPY_INVALID, error, error_size, "%s: not a .npy file (v1-v3)", path);
    len_bytes = preamble[6] == 1 ? 2 : 4;
    if (len_bytes == 4 && fread(preamble + 10, 1, 2, npy->f) != 2)
        return failed(npy, NPY_INVALID, error, error_size, "%s: truncated header", path);
    header_len = (size_t)preamble[8] | (size_t)preamble[9] << 8;
    if (len_bytes == 4)
        header_len |= (size_t)preamble[10] << 16 | (size_t)preamble[11] << 24;
    if (header_len == 0 || header_len > NPY_MAX_HEADER)
        return failed(npy, NPY_INVALID, error, error_size, "%s: bad header length", path);
    header = calloc(header_len + 1, 1);
    if (!header)
        return failed(npy, NPY_MISSING, error, error_size, "%s: out of memory", path);
    if (fread(header, 1, header_len, npy->f) != header_len) {
        free(header);
        return failed(npy, NPY_INVALID, error, error_size, "%s: truncated header", path);
    }

    p = value_of(header, "'descr':");
    if (!p || *p != '\'' || !strchr(p + 1, '\'') ||
        (size_t)(strchr(p + 1, '\'') - (p + 1)) >= sizeof npy->descr) {
        free(header);
        return failed(npy, NPY_INVALID, error, error_size, "%s: no simple 'descr'", path);
    }
    memcpy(npy->descr, p + 1, (size_t)(strchr(p + 1, '\'') - (p + 1)));
    p = value_of(header, "'fortran_order':");
    if (!p || strncmp(p, "False", 5) != 0) {
        free(header);
        return failed(npy, NPY_INVALID, error, error_size, "%s: must be C-ordered", path);
    }
    p = value_of(header, "'shape':");
    if (!p || parse_shape(p, npy) != 0) {
        free(header);
        return failed(npy, NPY_INVALID, error, error_size, "%s: bad 'shape'", path);
    }
    free(header);

    data_start = ftell(npy->f);
    if (data_start < 0 || fseek(npy->f, 0, SEEK_END) != 0 || (file_end = ftell(npy->f)) < 0 ||
        fseek(npy->f, data_start, SEEK_SET) != 0)
        return failed(npy, NPY_MISSING, error, error_size, "%s: %s", path, strerror(errno));
    npy->data_bytes = (uint64_t)(file_end - data_start);
    return NPY_OK;
}

void npy_close(npy_file *npy)
{
    if (npy->f)
        fclose(npy->f);
    npy->f = NULL;
}
