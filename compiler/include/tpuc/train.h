/* SPDX-License-Identifier: Apache-2.0 */
/* Training mode of the compiler (docs/training.md): one program per core that runs a whole
   step -- forward, loss, backward, the gradient all-reduce over the board and the optimizer
   update -- with no host round trip between layers. The host places the next batch and its
   labels, starts every core, and reads the loss and the probabilities back.

     tpuc_train_compile  folded graph -> step program + host layout   (train.c)
     tpuc_train_host_*   the host image: initial weights, batches, results (train_host.c)
     tpuc_onnx_write_weights  the trained weights into a copy of the ONNX file (onnx_write.c)
     tpuc_train_ckpt_*   checkpoints: the trained state and the run's position (train_ckpt.c)

   The step program stands on the ISA alone: the transposes the backward pass needs are
   `lw ... transpose` (docs/isa.md "Transposes for training"). */
#ifndef TPUC_TRAIN_H
#define TPUC_TRAIN_H

#include <stddef.h>
#include <stdio.h>
#include <stdint.h>

#include "tpuc/tpuc.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPUC_TRAIN_MAX_LAYERS 200 /* ResNet-152: 155 Conv stages and a Gemm */

typedef enum { TPUC_OPT_SGD = 1, TPUC_OPT_ADAM = 2 } tpuc_optim_t;

typedef struct {
    tpuc_optim_t optimizer;
    double lr;          /* learning rate */
    double momentum;    /* SGD: PyTorch's momentum (0: plain SGD) */
    double beta1, beta2, eps; /* Adam (PyTorch's defaults 0.9, 0.999, 1e-8) */
    int logits;         /* the model ends in logits (no Softmax): softmax + CE are added */
    int save_grads;     /* also write each step's all-reduced gradients to host memory */
    int eval_only;      /* the forward pass alone (validation): probabilities, no update;
                           the same host layout as the training program */
    unsigned micro;     /* micro-steps per step (gradient accumulation; 0 or 1: none): the
                           program's first part (from pc 0) runs forward and backward on one
                           micro-batch and adds its gradients and loss to host memory, the
                           host runs it `micro` times with the next rows, then the second
                           part (from u_pc) all-reduces and updates once */
} tpuc_train_opts_t;

/* One trainable layer: y = x W + b (Gemm or MatMul [+ Add]), optionally followed by ReLU; a
   Conv stage (then k = kh*kw*cin, the master's rows in (kh, kw, ci) order, the rest in
   tpuc_tconv_t); or the model's first layer, an embedding lookup (a Gather of rows of a
   [V, D] table by the input's token ids: k = V, o = D, one row per token: the input is the
   one-hot matrix of the ids, placed by the host, so the forward pass is a matmul and the
   table's gradient X^T dY is the scatter-add of the rows' gradients). */
typedef struct {
    int conv;               /* a Conv: stage conv - 1 of tpuc_train_t.conv; 0 otherwise */
    int embed;              /* the embedding lookup */
    int64_t perm_c, perm_p; /* after a Conv: master row p*C + c is the ONNX row c*P + p (the
                               NCHW flatten); 0 otherwise */
    int node;               /* the folded graph's node */
    char name[128];         /* its ONNX name */
    int64_t k, o;           /* inputs, outputs */
    int64_t rows;           /* rows of its input per core: the batch (b x L for the embedding) */
    int has_bias, relu;
    uint64_t kp;            /* k + has_bias: the rows of the master (the bias is row k) */
    /* host byte addresses (every core has the same layout) */
    uint64_t w_master;      /* fp32 kp x o: the weights, then the bias row */
    uint64_t w_bf16;        /* bf16 k x o: the MXU's copy */
    uint64_t s1, s2;        /* fp32 kp x o: momentum, or Adam's m and v */
    uint64_t grad;          /* fp32 kp x o: the all-reduced gradient (save_grads) */
    uint64_t gacc;          /* fp32 kp x o: the micro-steps' running gradient sum (micro) */
    uint64_t xsave;         /* bf16 rows x kp: the layer's input (then a 1.0 column); a
                               Conv's: the padded images, (pixel, channel) order */
    uint64_t dysave;        /* bf16 rows x o: the gradient at its output */
    unsigned chunk_rows;    /* rows of the weight gradient per all-reduce and update */
} tpuc_tlayer_t;

/* A Conv stage: a Conv (strides sh x sw, any padding; 1-D as 2-D with h = 1), ReLU before or
   after an optional pkh x pkw MaxPool of strides psh x psw (sh*psh = sw*psw, or one pooled
   row), or a residual Add before the ReLU. The conv is computed per pool window (u, v)
   directly in the "q-space" of the pooled output, row q = ph*wp + pw (pw < PW valid, the rest
   garbage rows never read back): its input rows are the padded image's pixels
   sw*psw*q + (sh*(u - ppt) + kh)*wp + sw*(v - ppl) + kw, a single strided DMA (docs/training.md
   "Conv"). Its output goes to the padded inputs of the stages that read it, to the dense
   layer after the Flatten, or (compact) to a residual Add and the GlobalAveragePool. The
   stages form a DAG (ResNet's blocks): t->conv[] is in a topological order, forward in that
   order and backward in the reverse, each stage's output gradient (dps) summed over its
   readers. When a layer before it needs its input gradient (dx), that is the full
   correlation of the conv-output gradient with the kernel: per kernel offset a matmul of the
   "r-space" gradient (row r = oh*wp + ow, zero rows around it) by the transposed kernel
   tile, accumulated in ACC (docs/training.md "Conv"). */
typedef struct {
    int layer;              /* its index in tpuc_train_t.layer */
    int src;                /* the stage whose output is its input; -1: the model's input (or
                               the embedding's output) */
    int res;                /* a residual Add after the conv: its output plus stage res - 1's
                               output, before the ReLU (relu_after); 0: none */
    int outs[4], nouts;     /* the stages that read its output as their input */
    int writers;            /* how many gradients reach its output (consumers and residuals):
                               more than one are summed in dps */
    int gap;                /* its output is averaged over the pixels (GlobalAveragePool) for the
                               dense layers */
    int dense;              /* its output (or its average) is the first dense layer's input */
    int psh, psw;           /* the pool's strides (its size when not overlapping) */
    int ppt, ppl, ppb, ppr; /* the pool's padding: a padded pool follows a ReLU, its padded
                               positions are +0, which never changes a maximum of ReLU outputs */
    int64_t pre, img;       /* pixels of zero margin before each image of xsave (a padded pool's
                               windows start before the image), pixels per image with margins */
    uint64_t compact;       /* bf16 b x (ph*pw) x cout: its output, (p, c) order, for a residual
                               reader or the average (0: not kept) */
    uint64_t gapg;          /* fp32 b x cout: the average's gradient, already divided by the
                               pixels */
    int64_t cin, cout, kh, kw, h, w;
    int pt, pl, pb, pr;
    int64_t hp, wp, ho, wo;
    int sh, sw;             /* the conv's strides */
    int pkh, pkw;           /* the pool (1 x 1: none) */
    int64_t ph, pw, q;
    int relu_before, relu_after;
    int dx;                 /* its input gradient is needed (a layer before it) */
    uint64_t dps;           /* fp32 b x (ph*pw*cout): the gradient at the pooled output */
    uint64_t dcw;           /* bf16 qc x cout: one window's gradient of one q chunk */
    uint64_t gsave;         /* bf16 b x windows x q x cout: every routed gradient, when dW is
                               computed in chunks of rows (0: it fits ACC whole) */
    uint64_t dwrows;        /* rows of the master per dW chunk (kp: one chunk) */
    uint64_t dwtiles;       /* output N-tiles per dW chunk (all of them, or a group when not
                               even N + 1 rows of every tile fit ACC) */
    uint64_t rsp;           /* bf16 (z + hp*wp) x cout: one image's r-space gradient (dx):
                               output pixel (oh, ow) at row z + sh*oh*wp + sw*ow */
    int64_t z;              /* zero rows before r-space: (kh - 1)*wp + kw - 1 */
    uint64_t qc;            /* q rows per chunk (ACC/UB capacity) */
    uint64_t pc;            /* padded input rows per chunk of dx */
} tpuc_tconv_t;

#define TPUC_TRAIN_MAX_CONV 192

typedef struct {
    tpuc_prog_t prog;       /* the step program (text, instructions) */
    tpuc_tconv_t conv[TPUC_TRAIN_MAX_CONV]; /* the Conv stages, in order */
    int nconv;
    tpuc_train_opts_t opts;
    tpuc_tlayer_t layer[TPUC_TRAIN_MAX_LAYERS];
    int nlayers;
    unsigned n;             /* the MXU size it was compiled for */
    long batch;             /* rows per core (per micro-step) */
    unsigned cores;
    int64_t in_elems;       /* features of one example (the input flattened; token ids) */
    int64_t vocab;          /* the embedding's V (its input's ids are 0 .. V-1); 0: none */
    int64_t classes;
    int feed;               /* the Conv stage whose output the dense layers read (-1: none) */
    int64_t gap_p;          /* the pixels the GlobalAveragePool averages (1: none) */
    uint64_t const_addr, ident_addr, negzero_addr, ones_addr, zero_addr;
    uint64_t onehot_addr;   /* bf16 b x classes, placed by the host every step */
    uint64_t probs_addr;    /* fp32 b x classes, written by the step */
    uint64_t loss_addr;     /* fp32: the global batch's mean loss, written by the step */
    uint64_t adam_addr;     /* fp32 2 rows x N: beta1^t, beta2^t */
    uint64_t pack_addr;     /* fp32: a weight-gradient chunk on its way to packed rows */
    uint64_t lacc_addr;     /* fp32: the micro-steps' running loss sum (micro) */
    uint64_t zrow_addr;     /* fp32 x N zeros: clears the running sums (micro) */
    unsigned micro;         /* micro-steps per step (1: none) */
    size_t u_pc;            /* micro > 1: the update part's first instruction (else 0) */
    int fit_failed;         /* tpuc_train_compile failed because the rows of one micro-step
                               do not fit UB, ACC or IMEM (more micro-steps may fit) */
    uint64_t host_bytes;
    /* the phase (TPUC_PH_*) and layer (TPUC_TRAIN_NO_LAYER outside the layers: the
       constants, the loss, the halt) of every instruction, for the reports */
    uint8_t *phase;
    uint8_t *layer_of;
    size_t nphase;
} tpuc_train_t;

#define TPUC_TRAIN_NO_LAYER 255

enum { TPUC_PH_FORWARD, TPUC_PH_LOSS, TPUC_PH_BACKWARD, TPUC_PH_UPDATE, TPUC_PH_COUNT };
/* "forward", "loss", "backward", "all-reduce + update" */
const char *tpuc_train_phase_name(int ph);

/* g: read and folded with the batch bound to the rows per core (hw->batch); hw->cores the
   data-parallel width. Refuses (one line naming the node) anything training mode does not
   handle. 0, or -1 with the message in err. */
int tpuc_train_compile(const tpuc_graph_t *g, const tpuc_hw_t *hw, const tpuc_train_opts_t *o,
                       tpuc_train_t *t, char *err, size_t errlen);
void tpuc_train_free(tpuc_train_t *t);
/* Read MODEL, fold it and compile its step of `batch` rows, `rows` per core (hw->batch and
   o->micro are set here). choose = 0: o->micro micro-steps as given. choose = 1: the fewest
   micro-steps (a divisor of rows) whose rows fit UB, ACC and IMEM; when that is more than one
   a line for the user goes to note ("" otherwise). On failure g and t are freed and err has
   the last attempt's message (one row per core: it names the layer and the memory). */
int tpuc_train_compile_micro(const char *model, tpuc_hw_t *hw, tpuc_train_opts_t *o,
                             uint64_t batch, uint64_t rows, int choose, tpuc_graph_t *g,
                             tpuc_train_t *t,
                             char *note, size_t notelen, char *err, size_t errlen);

/* A core's host image (t->host_bytes, zeroed by the caller): constants, the graph's initial
   weights (fp32 master, bf16 copy), zero optimizer state. */
void tpuc_train_host_init(const tpuc_train_t *t, const tpuc_graph_t *g, uint8_t *host);
/* The core's rows of the batch: x (rows x in_elems float32; token ids 0 .. vocab-1 for a
   model with an embedding, checked by the caller), labels 0 .. classes-1. */
void tpuc_train_host_batch(const tpuc_train_t *t, uint8_t *host, const float *x,
                           const int32_t *labels);
float tpuc_train_host_loss(const tpuc_train_t *t, const uint8_t *host);
void tpuc_train_host_probs(const tpuc_train_t *t, const uint8_t *host, float *p);
/* Layer l's master weights and bias (o; when has_bias), or its saved gradient, in the ONNX
   initializer's order: k x o for a Gemm/MatMul (rows in the ONNX order also after a Conv),
   [cout, cin, kh, kw] (or [cout, cin, kw]) for a Conv, [V, D] for the embedding. */
void tpuc_train_host_weights(const tpuc_train_t *t, const uint8_t *host, int l, float *w,
                             float *bias);
void tpuc_train_host_grads(const tpuc_train_t *t, const uint8_t *host, int l, float *dw,
                           float *db);

/* Checkpoint and resume (train_ckpt.c): core 0's weights, optimizer state and gradient sums
   with the run's position, written atomically; read back only into the same compiled run
   (the fingerprint: the program, the host layout, the options and EXTRA, the caller's own
   settings such as the seed and the data size). */
typedef struct {
    uint64_t fingerprint;
    uint64_t epoch;         /* the epoch in progress, from 1 */
    uint64_t step;          /* its steps done */
    double lsum, wall;      /* that epoch so far: the loss sum, host seconds */
    uint64_t correct, seen, cycles, busy;
    char *csv;              /* the CSV rows of the finished epochs (the reader allocates) */
    size_t csv_len;
} tpuc_ckpt_pos_t;
uint64_t tpuc_train_fingerprint(const tpuc_train_t *t, const void *extra, size_t n);
int tpuc_train_ckpt_write(const tpuc_train_t *t, const uint8_t *host, const tpuc_ckpt_pos_t *p,
                          const char *path, char *err, size_t errlen);
/* p->fingerprint: the expected one. Nothing is applied unless the whole file is valid. */
int tpuc_train_ckpt_read(const tpuc_train_t *t, uint8_t *const *hosts, unsigned ncores,
                         tpuc_ckpt_pos_t *p, const char *path, char *err, size_t errlen);
/* The same on n bytes in memory (path names them in messages); the checksum a file ends with
   (FNV-1a 64 of the bytes before it). */
int tpuc_train_ckpt_parse(const tpuc_train_t *t, const uint8_t *q, size_t n, uint8_t *const *hosts,
                          unsigned ncores, tpuc_ckpt_pos_t *p, const char *path, char *err,
                          size_t errlen);
uint64_t tpuc_train_ckpt_checksum(const uint8_t *q, size_t n);

/* The prediction of one step (tpu-compile --train --report-only; train_report.c): the step run
   once on the board model from the model's initial weights and an all-zero batch (label 0),
   its cycles attributed to each layer and phase by the instruction that completed them. */
typedef struct {
    uint64_t cycles;                 /* the step: the slowest core */
    uint64_t mxu_busy;               /* all cores */
    uint64_t ph_cycles[TPUC_PH_COUNT], ph_busy[TPUC_PH_COUNT];
    uint64_t ly_cycles[TPUC_TRAIN_MAX_LAYERS][TPUC_PH_COUNT];
    uint64_t ly_busy[TPUC_TRAIN_MAX_LAYERS];
    uint64_t ly_macs[TPUC_TRAIN_MAX_LAYERS]; /* useful MACs per core: forward, dX, dW */
    uint64_t other_cycles;           /* constants, loss, halt */
    uint64_t unit_busy[4];           /* all cores: MXU, DMA, VPU busy, a collective in progress */
    size_t segments;                 /* board runs per part: 1, or more when the program is
                                        longer than IMEM (predict_only: cut before an lw,
                                        each ending in halt; an estimate) */
    double wall_s;                   /* host time of the model's run */
} tpuc_train_report_t;
/* Layer l's useful multiply-accumulates per core in one step (forward, dX where needed, dW). */
uint64_t tpuc_train_layer_macs(const tpuc_train_t *t, int l);
int tpuc_train_report(const tpuc_train_t *t, const tpuc_graph_t *g, const tpuc_hw_t *hw,
                      tpuc_train_report_t *r, char *err, size_t errlen);
void tpuc_train_report_text(const tpuc_train_t *t, const tpuc_hw_t *hw,
                            const tpuc_train_report_t *r, FILE *f);
void tpuc_train_report_json(const tpuc_train_t *t, const tpuc_hw_t *hw,
                            const tpuc_train_report_t *r, FILE *f);

/* The ONNX file at in_path with each layer's weights and bias replaced (in the layout and
   orientation of the original initializers), written to out_path (never half-written). */
typedef struct {
    const char *node;   /* the Gemm/MatMul/Conv/Gather node's name */
    const float *w;     /* k x o */
    const float *bias;  /* o, or NULL */
    int64_t k, o;
} tpuc_weights_t;
int tpuc_onnx_write_weights(const char *in_path, const tpuc_weights_t *w, int nw,
                            const char *out_path, char *err, size_t errlen);

#ifdef __cplusplus
}
#endif
#endif
