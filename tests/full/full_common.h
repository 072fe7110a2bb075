/* SPDX-License-Identifier: Apache-2.0 */
/* Shared scaffolding of the exhaustive programs (header-only): work split into chunks
 * handed to N pthreads, per-thread oracle set-up, mismatch recording, timing. */
#ifndef TESTS_FULL_COMMON_H
#define TESTS_FULL_COMMON_H

#include <inttypes.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "oracle.h"

#define FULL_MAX_PRINT 10

typedef struct {
    uint64_t n_mpfr; /* cases compared with MPFR */
    uint64_t n_host; /* cases compared with the host */
    uint64_t bad;    /* cases with any disagreement */
} full_counts_t;

typedef void (*full_chunk_fn)(uint64_t chunk, full_counts_t *c, void *ctx);

static pthread_mutex_t full_lock = PTHREAD_MUTEX_INITIALIZER;
static int full_printed;
static double full_t0;

static inline double full_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Prints one mismatch line (the first FULL_MAX_PRINT of the run). */
static inline void full_mismatch(const char *fmt, ...)
{
    pthread_mutex_lock(&full_lock);
    if (full_printed < FULL_MAX_PRINT) {
        full_printed++;
        va_list ap;
        va_start(ap, fmt);
        fputs("  MISMATCH ", stdout);
        vprintf(fmt, ap);
        fputc('\n', stdout);
        va_end(ap);
        fflush(stdout);
    }
    pthread_mutex_unlock(&full_lock);
}

typedef struct {
    full_chunk_fn fn;
    void *ctx;
    uint64_t n_chunks;
    atomic_uint_fast64_t next, done;
    full_counts_t total;
    int fail;
} full_job_t;

static void *full_worker(void *arg)
{
    full_job_t *job = arg;
    full_counts_t c = { 0, 0, 0 };
    if (mo_init() != 0 || ho_init() != 0) {
        fprintf(stderr, "cannot initialise the oracles in a worker thread\n");
        pthread_mutex_lock(&full_lock);
        job->fail = 1;
        pthread_mutex_unlock(&full_lock);
        return NULL;
    }
    for (;;) {
        uint64_t k = atomic_fetch_add(&job->next, 1);
        if (k >= job->n_chunks)
            break;
        job->fn(k, &c, job->ctx);
        uint64_t d = atomic_fetch_add(&job->done, 1) + 1;
        uint64_t step = job->n_chunks / 16 ? job->n_chunks / 16 : 1;
        if (d % step == 0) {
            double el = full_now() - full_t0;
            printf("  progress %3" PRIu64 "%%  %.0f s elapsed, ~%.0f s left\n",
                   100 * d / job->n_chunks, el, el * (double)(job->n_chunks - d) / (double)d);
            fflush(stdout);
        }
    }
    mo_fini();
    pthread_mutex_lock(&full_lock);
    job->total.n_mpfr += c.n_mpfr;
    job->total.n_host += c.n_host;
    job->total.bad += c.bad;
    pthread_mutex_unlock(&full_lock);
    return NULL;
}

/* TPU_FULL_INJECT=i: the model's result for case index i is deliberately corrupted (its
   lowest bit flipped), to show that the program detects and reports a wrong value. */
static inline uint64_t full_inject_index(void)
{
    const char *s = getenv("TPU_FULL_INJECT");
    return s && *s ? strtoull(s, NULL, 0) : UINT64_MAX;
}

/* Threads from TPU_FULL_THREADS (default 2). */
static inline int full_threads(void)
{
    const char *s = getenv("TPU_FULL_THREADS");
    long n = s && *s ? strtol(s, NULL, 10) : 2;
    return n < 1 ? 1 : n > 64 ? 64 : (int)n;
}

/* Runs fn over chunks 0 .. n_chunks-1 on `threads` threads; returns the summed counts,
   or sets *fail. */
static inline full_counts_t full_run(int threads, uint64_t n_chunks, full_chunk_fn fn, void *ctx,
                                     int *fail)
{
    static full_job_t job;
    job.fn = fn;
    job.ctx = ctx;
    job.n_chunks = n_chunks;
    atomic_store(&job.next, 0);
    atomic_store(&job.done, 0);
    memset(&job.total, 0, sizeof job.total);
    job.fail = 0;
    pthread_t tid[64];
    int started = 0;
    for (int i = 0; i < threads; i++) {
        if (pthread_create(&tid[i], NULL, full_worker, &job) != 0) {
            fprintf(stderr, "pthread_create failed\n");
            job.fail = 1;
            break;
        }
        started++;
    }
    for (int i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    *fail = job.fail;
    return job.total;
}

/* The closing lines; returns the exit status. */
static inline int full_report(const char *name, full_counts_t c, int fail)
{
    double el = full_now() - full_t0;
    printf("%s: %" PRIu64 " cases checked against MPFR, %" PRIu64 " against the host; "
           "%" PRIu64 " mismatches\n", name, c.n_mpfr, c.n_host, c.bad);
    printf("%s: run time %.1f s\n", name, el);
    if (fail) {
        printf("%s: FAIL (set-up error)\n", name);
        return 2;
    }
    printf("%s: %s\n", name, c.bad ? "FAIL" : "PASS");
    return c.bad ? 1 : 0;
}

#endif
