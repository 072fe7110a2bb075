/* SPDX-License-Identifier: Apache-2.0 */
/* Checkpoints of a training run (train.h, tpu-train --checkpoint / --resume; docs/training.md
   "Checkpoint and resume"). A checkpoint is core 0's trainable state -- per layer the bytes
   of its host regions from the fp32 master to the saved input (master, bf16 copy, optimizer
   state, gradient sums), and Adam's beta^t row -- with the run's position. Every core holds
   the same bytes after a step (tpu-train checks it), so one copy restores all of them.

   Format (little-endian): "TPUTRCK1", u64 fingerprint, u64 epoch, u64 step, f64 loss sum,
   f64 wall seconds, u64 correct, seen, cycles, busy, u64 CSV length and its bytes, u64
   region count, per region u64 address, u64 length and its bytes, u64 FNV-1a 64 of all the
   bytes before it. A reader accepts exactly the regions the compiled run has, in order, and
   applies nothing unless the whole file is valid. */
#include <stdlib.h>
#include <string.h>

#include "tpu/cli.h"
#include "tpuc/train.h"
#include "tpuc_internal.h"

#define CKPT_MAGIC "TPUTRCK1"
#define CKPT_CSV_MAX ((uint64_t)1 << 20)

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
    return h;
}

uint64_t tpuc_train_fingerprint(const tpuc_train_t *t, const void *extra, size_t n)
{
    uint64_t h = 0xcbf29ce484222325ull;
    h = fnv(h, t->prog.insns, t->prog.ninsns * sizeof *t->prog.insns);
    const uint64_t v[] = {t->host_bytes, t->n, t->cores, t->micro, (uint64_t)t->batch,
                          (uint64_t)t->nlayers, t->adam_addr};
    h = fnv(h, v, sizeof v);
    for (int l = 0; l < t->nlayers; l++) {
        const tpuc_tlayer_t *ly = &t->layer[l];
        const uint64_t w[] = {ly->w_master, ly->xsave, ly->kp, (uint64_t)ly->o};
        h = fnv(h, w, sizeof w);
    }
    const tpuc_train_opts_t *o = &t->opts;
    const double d[] = {o->lr, o->momentum, o->beta1, o->beta2, o->eps};
    const int i[] = {(int)o->optimizer, o->logits};
    h = fnv(h, d, sizeof d);
    h = fnv(h, i, sizeof i);
    return fnv(h, extra, n);
}

/* The regions a checkpoint holds: per layer [w_master, xsave), then Adam's two rows. */
static int regions(const tpuc_train_t *t, uint64_t *addr, uint64_t *len)
{
    int k = 0;
    for (int l = 0; l < t->nlayers; l++) {
        addr[k] = t->layer[l].w_master;
        len[k++] = t->layer[l].xsave - t->layer[l].w_master;
    }
    addr[k] = t->adam_addr;
    len[k++] = 2ull * t->n * 4;
    return k;
}

typedef struct { uint8_t *p; size_t n, cap; int oom; } buf_t;

static void put(buf_t *b, const void *p, size_t n)
{
    if (b->oom) return;
    if (b->n + n > b->cap) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap < b->n + n) cap *= 2;
        uint8_t *q = realloc(b->p, cap);
        if (!q) { b->oom = 1; return; }
        b->p = q;
        b->cap = cap;
    }
    memcpy(b->p + b->n, p, n);
    b->n += n;
}
static void put64(buf_t *b, uint64_t v)
{
    uint8_t x[8];
    for (int i = 0; i < 8; i++) x[i] = (uint8_t)(v >> (8 * i));
    put(b, x, 8);
}
static uint64_t dbits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }

int tpuc_train_ckpt_write(const tpuc_train_t *t, const uint8_t *host, const tpuc_ckpt_pos_t *p,
                          const char *path, char *err, size_t errlen)
{
    uint64_t addr[TPUC_TRAIN_MAX_LAYERS + 1], len[TPUC_TRAIN_MAX_LAYERS + 1];
    const int nr = regions(t, addr, len);
    buf_t b = {0};
    put(&b, CKPT_MAGIC, 8);
    put64(&b, p->fingerprint);
    put64(&b, p->epoch);
    put64(&b, p->step);
    put64(&b, dbits(p->lsum));
    put64(&b, dbits(p->wall));
    put64(&b, p->correct);
    put64(&b, p->seen);
    put64(&b, p->cycles);
    put64(&b, p->busy);
    put64(&b, p->csv_len);
    put(&b, p->csv, p->csv_len);
    put64(&b, (uint64_t)nr);
    for (int k = 0; k < nr; k++) {
        put64(&b, addr[k]);
        put64(&b, len[k]);
        put(&b, host + addr[k], len[k]);
    }
    if (!b.oom) put64(&b, fnv(0xcbf29ce484222325ull, b.p, b.n));
    if (b.oom) {
        free(b.p);
        tpuc_err(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int rc = tpu_file_write(path, b.p, b.n, err, errlen);
    free(b.p);
    return rc;
}

static uint64_t get64(const uint8_t *q)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = v << 8 | q[i];
    return v;
}

static uint64_t ckpt_size(const tpuc_train_t *t)
{
    uint64_t addr[TPUC_TRAIN_MAX_LAYERS + 1], len[TPUC_TRAIN_MAX_LAYERS + 1];
    const int nr = regions(t, addr, len);
    uint64_t want = 8 + 10 * 8 + 8 + 8; /* header, the region count, the checksum */
    for (int k = 0; k < nr; k++) want += 16 + len[k];
    return want;
}

int tpuc_train_ckpt_read(const tpuc_train_t *t, uint8_t *const *hosts, unsigned ncores,
                         tpuc_ckpt_pos_t *p, const char *path, char *err, size_t errlen)
{
    char *raw = NULL;
    size_t n = 0;
    if (tpu_file_read(path, (size_t)(ckpt_size(t) + CKPT_CSV_MAX), "checkpoint", &raw, &n, err, errlen))
        return -1;
    int rc = tpuc_train_ckpt_parse(t, (const uint8_t *)raw, n, hosts, ncores, p, path, err, errlen);
    free(raw);
    return rc;
}

uint64_t tpuc_train_ckpt_checksum(const uint8_t *q, size_t n)
{
    return fnv(0xcbf29ce484222325ull, q, n);
}

int tpuc_train_ckpt_parse(const tpuc_train_t *t, const uint8_t *q, size_t n, uint8_t *const *hosts,
                          unsigned ncores, tpuc_ckpt_pos_t *p, const char *path, char *err,
                          size_t errlen)
{
    uint64_t addr[TPUC_TRAIN_MAX_LAYERS + 1], len[TPUC_TRAIN_MAX_LAYERS + 1];
    const int nr = regions(t, addr, len);
    const uint64_t want = ckpt_size(t);
    const uint64_t expect = p->fingerprint;
    int rc = -1;
    if (n < 8 + 10 * 8 || memcmp(q, CKPT_MAGIC, 8)) {
        tpuc_err(err, errlen, "%s: not a tpu-train checkpoint (expected the %s header)", path, CKPT_MAGIC);
        goto out;
    }
    const uint64_t csv_len = get64(q + 8 + 9 * 8);
    if (csv_len > CKPT_CSV_MAX || n != want + csv_len) {
        tpuc_err(err, errlen, "%s: %zu bytes, expected %llu for this model and configuration "
                 "(truncated, or written by another run)", path, n,
                 (unsigned long long)(want + (csv_len > CKPT_CSV_MAX ? 0 : csv_len)));
        goto out;
    }
    if (get64(q + n - 8) != tpuc_train_ckpt_checksum(q, n - 8)) {
        tpuc_err(err, errlen, "%s: checksum mismatch (the file is corrupted)", path);
        goto out;
    }
    if (get64(q + 8) != expect) {
        tpuc_err(err, errlen, "%s: written for another model, configuration or options (the "
                 "run's fingerprint differs: same model, data size, --batch, --micro-batch, "
                 "--seed, --steps-per-epoch, optimizer and hardware options are needed)", path);
        goto out;
    }
    tpuc_ckpt_pos_t r = {0};
    r.fingerprint = expect;
    r.epoch = get64(q + 16);
    r.step = get64(q + 24);
    uint64_t u = get64(q + 32);
    memcpy(&r.lsum, &u, 8);
    u = get64(q + 40);
    memcpy(&r.wall, &u, 8);
    r.correct = get64(q + 48);
    r.seen = get64(q + 56);
    r.cycles = get64(q + 64);
    r.busy = get64(q + 72);
    r.csv_len = (size_t)csv_len;
    size_t o = 88;
    const uint8_t *csv = q + o;
    o += csv_len;
    if (get64(q + o) != (uint64_t)nr) {
        tpuc_err(err, errlen, "%s: %llu regions, expected %d", path, (unsigned long long)get64(q + o), nr);
        goto out;
    }
    o += 8;
    const size_t first = o;
    for (int k = 0; k < nr; k++) {
        if (get64(q + o) != addr[k] || get64(q + o + 8) != len[k]) {
            tpuc_err(err, errlen, "%s: region %d is not this model's layout", path, k);
            goto out;
        }
        o += 16 + len[k];
    }
    r.csv = malloc(csv_len + 1);
    if (!r.csv) { tpuc_err(err, errlen, "out of memory"); goto out; }
    memcpy(r.csv, csv, csv_len);
    r.csv[csv_len] = 0;
    /* valid: apply to every core */
    for (unsigned c = 0; c < ncores; c++) {
        o = first;
        for (int k = 0; k < nr; k++) {
            memcpy(hosts[c] + addr[k], q + o + 16, len[k]);
            o += 16 + len[k];
        }
    }
    *p = r;
    rc = 0;
out:
    return rc;
}
