/* Reading .npy files (format versions 1-3): header parsed, data left to stream from `f`. */
#ifndef HIL_NPY_H
#define HIL_NPY_H

#include <stdint.h>
#include <stdio.h>

#define NPY_MAX_DIMS 16

enum npy_status {
    NPY_OK = 0,
    NPY_MISSING = 1, /* cannot open or read the file */
    NPY_INVALID = 2  /* not a C-ordered .npy, or its size disagrees with its header */
};

typedef struct {
    FILE *f; /* positioned at the first data byte */
    char descr[16];
    int n_dims;
    uint64_t shape[NPY_MAX_DIMS];
    uint64_t data_bytes; /* what the file holds after the header */
} npy_file;

/* On failure `error` holds a one-line reason and nothing is left open. */
enum npy_status npy_open(const char *path, npy_file *npy, char *error, size_t error_size);
void npy_close(npy_file *npy);

#endif
