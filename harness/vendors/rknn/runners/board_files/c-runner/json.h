/* A tiny streaming JSON writer: just enough for the runner's result sidecar. */
#ifndef HIL_JSON_H
#define HIL_JSON_H

#include <stdio.h>

#define JSON_MAX_DEPTH 8

typedef struct {
    FILE *f;
    int depth;
    int count[JSON_MAX_DEPTH];   /* members written so far at each level, for the commas */
    char closer[JSON_MAX_DEPTH]; /* '}' or ']' for each open level */
    int broken;                /* nesting misuse; the file is then reported as failed */
} json_writer;

/* `key` names the member inside an object and must be NULL inside an array or at the top. */
void json_open(json_writer *w, FILE *f);
void json_object(json_writer *w, const char *key);
void json_array(json_writer *w, const char *key);
void json_end(json_writer *w); /* closes the innermost object or array */
void json_string(json_writer *w, const char *key, const char *value);
void json_int(json_writer *w, const char *key, long long value);
void json_number(json_writer *w, const char *key, double value); /* NaN/inf become null */
void json_null(json_writer *w, const char *key);
/* 0 when everything was written and nested correctly. */
int json_ok(const json_writer *w);

#endif
