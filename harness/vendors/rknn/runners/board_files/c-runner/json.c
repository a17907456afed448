#include "json.h"

#include <math.h>

void json_open(json_writer *w, FILE *f)
{
    w->f = f;
    w->depth = 0;
    w->count[0] = 0;
    w->broken = 0;
}

static void quoted(json_writer *w, const char *s)
{
    const unsigned char *p = (const unsigned char *)s;

    fputc('"', w->f);
    for (; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(w->f, "\\%c", *p);
        else if (*p < 0x20)
            fprintf(w->f, "\\u%04x", *p);
        else
            fputc(*p, w->f);
    }
    fputc('"', w->f);
}

/* Separator, indentation and key before a value at the current level. */
static void member(json_writer *w, const char *key)
{
    int i;

    if (w->count[w->depth]++ > 0)
        fputc(',', w->f);
    if (w->depth > 0) {
        fputc('\n', w->f);
        for (i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    if (key) {
        quoted(w, key);
        fputs(": ", w->f);
    }
}

static void open_level(json_writer *w, const char *key, char opener, char closer)
{
    if (w->depth + 1 >= JSON_MAX_DEPTH) {
        w->broken = 1;
        return;
    }
    member(w, key);
    fputc(opener, w->f);
    w->count[++w->depth] = 0;
    w->closer[w->depth] = closer;
}

void json_object(json_writer *w, const char *key) { open_level(w, key, '{', '}'); }

void json_array(json_writer *w, const char *key) { open_level(w, key, '[', ']'); }

void json_end(json_writer *w)
{
    char closer;
    int i;

    if (w->depth == 0) {
        w->broken = 1;
        return;
    }
    closer = w->closer[w->depth];
    if (w->count[w->depth--] > 0) {
        fputc('\n', w->f);
        for (i = 0; i < w->depth; i++)
            fputs("  ", w->f);
    }
    fputc(closer, w->f);
}

void json_string(json_writer *w, const char *key, const char *value)
{
    member(w, key);
    quoted(w, value);
}

void json_int(json_writer *w, const char *key, long long value)
{
    member(w, key);
    fprintf(w->f, "%lld", value);
}

void json_number(json_writer *w, const char *key, double value)
{
    member(w, key);
    if (isfinite(value))
        fprintf(w->f, "%.9g", value);
    else
        fputs("null", w->f);
}

void json_null(json_writer *w, const char *key)
{
    member(w, key);
    fputs("null", w->f);
}

int json_ok(const json_writer *w) { return !w->broken && w->depth == 0 && !ferror(w->f); }
