/* SPDX-License-Identifier: Apache-2.0 */
/* .npy arrays of any rank for the tools on the compiler (npyio.c): the format's v1/v2/v3
   header, C order, dtypes '<f4' (read as float) and '<i8', '<i4', '|u1' (read as int64).
   The files are untrusted: every field is checked against the data length before anything
   is allocated. */
#ifndef TPUC_NPYIO_H
#define TPUC_NPYIO_H

#include <stddef.h>
#include <stdint.h>

#include "tpuc/tpuc.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct {
    int ndim;
    int64_t dims[TPUC_MAX_DIMS];
    uint64_t elems;
    float *f;   /* float32 files */
    int64_t *i; /* integer files */
} tpuc_npy_t;

/* want_int 0: a float32 file; 1: an integer file; -1: either (a->f or a->i is set). 0, or -1
   with "PATH: reason" in err. */
int tpuc_npy_load(const char *path, int want_int, tpuc_npy_t *a, char *err, size_t errlen);
/* The same from len bytes in memory; path names them in messages. */
int tpuc_npy_parse(const void *data, size_t len, const char *path, int want_int, tpuc_npy_t *a,
                   char *err, size_t errlen);
void tpuc_npy_free(tpuc_npy_t *a);

#ifdef __cplusplus
}
#endif
#endif
