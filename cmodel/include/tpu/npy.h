/* SPDX-License-Identifier: Apache-2.0 */
/* numpy .npy files (format versions 1.0 and 2.0), the few dtypes the core's jobs use:
   '<u2' (bf16 raw bits), '<f4' (fp32 raw bits), '<u4'. 1-D or 2-D, C order only. */
#ifndef TPU_NPY_H
#define TPU_NPY_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TPU_NPY_U2 = 0, TPU_NPY_F4 = 1, TPU_NPY_U4 = 2 } tpu_npy_dtype_t;

/* An array. data holds rows*cols elements of elem_size bytes in host byte order (uint16_t
   for U2, uint32_t for F4 and U4), row-major. A 1-D array has ndim 1, rows 1, cols = length. */
typedef struct {
    tpu_npy_dtype_t dtype;
    unsigned ndim;  /* 1 or 2 */
    size_t rows, cols;
    void *data;
} tpu_npy_t;

size_t tpu_npy_elem_size(tpu_npy_dtype_t t);   /* 2 or 4 */
const char *tpu_npy_descr(tpu_npy_dtype_t t);  /* "<u2", "<f4", "<u4" */
/* Parses "<u2"/"u2"/"bf16", "<f4"/"f4"/"f32", "<u4"/"u4"; 0 or -1. */
int tpu_npy_parse_dtype(const char *s, tpu_npy_dtype_t *t);

/* Read a file: 0, or -1 with a one-line message naming the file and the problem in err. The
   caller frees with tpu_npy_free. */
int tpu_npy_read(const char *path, tpu_npy_t *a, char *err, size_t errlen);
/* The same from the len bytes of a whole file in memory (name is used in messages). The
   header is checked as numpy reads it (npy.c "The header"): whatever numpy rejects is
   rejected; a header numpy accepts in a form this reader does not know (string escapes,
   0x or 1_0 numbers, native-order 'u2') is rejected too, with its offset. */
int tpu_npy_read_mem(const void *data, size_t len, const char *name, tpu_npy_t *a, char *err,
                     size_t errlen);
/* The preamble and header dict of a .npy file's first len bytes (the whole file, or at least
   the header), checked as numpy reads it (the same rules as tpu_npy_read_mem) for any 'descr'
   string and up to TPU_NPY_MAX_DIMS dimensions (each clamped to 2^41 above 2^40); the data
   starts at data_off. For readers of other dtypes and ranks (the compiler's tpuc/npyio.h).
   0, or -1 with a one-line message. */
#define TPU_NPY_MAX_DIMS 8u
typedef struct {
    char descr[16];
    int fortran;
    unsigned ndim;
    uint64_t dims[TPU_NPY_MAX_DIMS];
    size_t data_off;
} tpu_npy_header_t;
int tpu_npy_parse_header(const void *data, size_t len, const char *name, tpu_npy_header_t *h,
                         char *err, size_t errlen);
/* Write (version 1.0 header, the output rules of tpu/cli.h: temp file then rename, a device
   or FIFO written in place): 0 or -1 with a message. */
int tpu_npy_write(const char *path, const tpu_npy_t *a, char *err, size_t errlen);
/* Allocate a zeroed array (ndim 2, or 1 when rows == 0 is passed as ndim1 by the caller). */
int tpu_npy_alloc(tpu_npy_t *a, tpu_npy_dtype_t t, unsigned ndim, size_t rows, size_t cols);
void tpu_npy_free(tpu_npy_t *a);

#ifdef __cplusplus
}
#endif

#endif
