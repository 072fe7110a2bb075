/* SPDX-License-Identifier: Apache-2.0 */
/* The job files a compiled model runs from (docs/compiler.md "Output"): per core, the
   argument file tpu-run / tpu-board-run / core_tb / board_tb take (docs/isa.md "Host memory
   and job options"), and the host-side conversions tpu-infer makes: the input tensor into its
   bf16 layout in host memory, the output out of it. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tpu/numerics.h"
#include "tpuc/tpuc.h"
#include "tpuc_internal.h"

void tpuc_write_args(const tpuc_meta_t *m, const char *dir, unsigned core, const char *io_dir,
                     FILE *f)
{
    const char *d = dir && dir[0] ? dir : ".";
    const char *io = io_dir && io_dir[0] ? io_dir : ".";
    fprintf(f, "# core %u of %u: the compiled model's program, constants, input and output\n",
            core, m->cores);
    fprintf(f, "--prog %s/model.bin\n", d);
    fprintf(f, "--hostmem-mib %" PRIu64 "\n", (m->host_bytes + (1u << 20) - 1) >> 20);
    fprintf(f, "--load %" PRIu64 "=%s/image.npy\n", m->image_base, d);
    for (int i = 0; i < m->nfills; i++)
        fprintf(f, "--load %" PRIu64 "=%s/fill%d.npy\n", m->fill_addr[i], d, i);
    fprintf(f, "--load %" PRIu64 "=%s/input%u.npy\n", m->in.lay.addr, io, core);
    fprintf(f, "--dump %" PRIu64 "=%s/output%u.npy:%s:%" PRIu64 "x%" PRIu64 "\n",
            m->out.lay.addr, io, core, m->out.lay.esize == 4 ? "f32" : "bf16", m->out.lay.rows,
            m->out.lay.cols);
}

/* The element of io at logical index idx (dims of the compiled tensor, batch first): its
   element offset in the host buffer (row * cols + col). */
static uint64_t elem_offset(const tpuc_io_t *io, const int64_t *idx)
{
    const tpuc_layout_t *l = &io->lay;
    if (l->kind == TPUC_LAYOUT_SPATIAL) {
        uint64_t b = (uint64_t)idx[0], c = (uint64_t)idx[1];
        uint64_t h = io->ndim == 4 ? (uint64_t)idx[2] : 0, w = (uint64_t)idx[io->ndim - 1];
        uint64_t row = b * l->img + l->off + h * l->rpitch + w * (l->wstep ? l->wstep : 1);
        return row * l->cols + c;
    }
    uint64_t lin = 0;
    for (int i = 0; i < io->ndim; i++) lin = lin * (uint64_t)io->dims[i] + (uint64_t)idx[i];
    return lin; /* PLAIN is row-major and dense */
}

static void next_index(const tpuc_io_t *io, int64_t *idx)
{
    for (int i = io->ndim - 1; i >= 0; i--) {
        if (++idx[i] < io->dims[i]) return;
        idx[i] = 0;
    }
}

uint64_t tpuc_io_elems(const tpuc_io_t *io)
{
    uint64_t e = 1;
    for (int i = 0; i < io->ndim; i++) e *= (uint64_t)io->dims[i];
    return e;
}

/* IM2COL (tpuc.h): the output pixel (b, oh, ow) whose window is row r: dense, or in the
   blocks of a fused pool's groups */
static void window_pixel(const tpuc_layout_t *l, uint64_t r, uint64_t *b, uint64_t *oh, uint64_t *ow)
{
    if (!l->ipool) {
        const uint64_t P = l->ioh * l->iow;
        *b = r / P; *oh = r % P / l->iow; *ow = r % l->iow;
        return;
    }
    const uint64_t k = l->ipool, kk = k * k, PH = l->ioh / k, PW = l->iow / k;
    const uint64_t P = l->rows / kk, gi = r / (l->ipg * kk), p0 = gi * l->ipg;
    const uint64_t gs = P - p0 < l->ipg ? P - p0 : l->ipg, rr = r - p0 * kk;
    const uint64_t uv = rr / gs, p = p0 + rr % gs;
    *b = p / (PH * PW);
    *oh = p % (PH * PW) / PW * k + uv / k;
    *ow = p % PW * k + uv % k;
}

/* IM2COL (tpuc.h): row r is the window of an output pixel (window_pixel); a window element
   outside the image is the Conv's zero padding. The images are converted to bf16 once
   (fp32_to_bf16_run), then their values copied into the windows (each pixel is in up to
   kh * kw of them). */
static void put_windows(const tpuc_io_t *io, const float *x, uint16_t *buf)
{
    const tpuc_layout_t *l = &io->lay;
    const uint64_t C = l->ichan, H = l->h ? l->h : 1, W = l->w;
    uint64_t n = tpuc_io_elems(io);
    uint16_t *xb = malloc(n * sizeof *xb + 2);
    if (xb)
        fp32_to_bf16_run((const uint32_t *)(const void *)x, xb, n, 1);
    for (uint64_t r = 0; r < l->rows; r++) {
        uint64_t b, oh, ow;
        window_pixel(l, r, &b, &oh, &ow);
        for (uint64_t i = 0; i < l->ikh; i++)
            for (uint64_t j = 0; j < l->ikw; j++) {
                uint16_t *d = buf + r * l->cols + (i * l->ikw + j) * C;
                /* unsigned wrap-around puts a pixel above or left of the image past H or W */
                uint64_t h = oh * l->ish + i - l->ipt, w = ow * l->isw + j - l->ipl;
                int valid = h < H && w < W;
                for (uint64_t c = 0; c < C; c++) {
                    uint64_t e = ((b * C + c) * H + h) * W + w;
                    d[c] = !valid ? 0 : xb ? xb[e] : tpuc_f32_to_bf16(x[e]);
                }
            }
    }
    free(xb);
}

void tpuc_put_input(const tpuc_io_t *io, const float *x, uint8_t *host)
{
    const tpuc_layout_t *l = &io->lay;
    uint16_t *buf = (uint16_t *)(host + l->addr);
    if (l->kind == TPUC_LAYOUT_IM2COL) {
        put_windows(io, x, buf);
        return;
    }
    if (io->onehot) {
        /* token ids (0 .. V-1, checked by the caller): row e is one-hot at column x[e] */
        uint64_t n = tpuc_io_elems(io);
        memset(buf, 0, l->rows * l->cols * 2);
        for (uint64_t e = 0; e < n && e < l->rows; e++) {
            uint64_t id = (uint64_t)x[e];
            if (id < l->cols) buf[e * l->cols + id] = 0x3F80; /* bf16 1.0 */
        }
        return;
    }
    if (l->kind == TPUC_LAYOUT_SPATIAL && l->pad_value)
        for (uint64_t i = 0; i < l->rows * l->cols; i++) buf[i] = l->pad_value;
    int64_t idx[TPUC_MAX_DIMS] = {0};
    uint64_t n = tpuc_io_elems(io);
    /* a run of the last dimension at a time: elem_offset is affine in the last index (PLAIN:
       step 1; SPATIAL: w's rows, plus 1 when the last index is also the channel) */
    int last = io->ndim - 1;
    uint64_t len = last >= 0 ? (uint64_t)io->dims[last] : 1, step = 0;
    if (last >= 0 && len > 1) {
        idx[last] = 1;
        step = elem_offset(io, idx) - elem_offset(io, (int64_t[TPUC_MAX_DIMS]){0});
        idx[last] = 0;
    }
    for (uint64_t e = 0; e < n; e += len) {
        uint64_t off = elem_offset(io, idx);
        if (l->esize == 4)
            for (uint64_t i = 0; i < len; i++) memcpy(host + l->addr + (off + i * step) * 4, &x[e + i], 4);
        else
            fp32_to_bf16_run((const uint32_t *)(const void *)(x + e), buf + off, len, step);
        if (last >= 0) {
            idx[last] = (int64_t)len - 1;
            next_index(io, idx);
        }
    }
}

void tpuc_get_output(const tpuc_io_t *io, const uint8_t *host, float *y)
{
    const tpuc_layout_t *l = &io->lay;
    int64_t idx[TPUC_MAX_DIMS] = {0};
    uint64_t n = tpuc_io_elems(io);
    for (uint64_t e = 0; e < n; e++) {
        uint64_t off = elem_offset(io, idx);
        if (l->esize == 4) {
            memcpy(&y[e], host + l->addr + off * 4, 4);
        } else {
            uint16_t b;
            memcpy(&b, host + l->addr + off * 2, 2);
            y[e] = tpuc_bf16_to_f32(b);
        }
        next_index(io, idx);
    }
}
