/* SPDX-License-Identifier: Apache-2.0 */
/* Helpers shared by the compiler's passes (not part of the public API). */
#ifndef TPUC_INTERNAL_H
#define TPUC_INTERNAL_H

#include <stddef.h>

#include "tpuc/tpuc.h"

#if defined(__GNUC__)
#define TPUC_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TPUC_PRINTF(a, b)
#endif

/* One-line message into err (newlines replaced). */
void tpuc_err(char *err, size_t errlen, const char *fmt, ...) TPUC_PRINTF(3, 4);
/* In a pass over the graph (fold.c, fold_attn.c): the one-line refusal naming node n, then
   return -1 (the function has err and errlen). */
#define NODE_ERR(n, ...)                                                                     \
    do {                                                                                     \
        char m_[400];                                                                        \
        snprintf(m_, sizeof m_, __VA_ARGS__);                                                \
        tpuc_err(err, errlen, "node '%s' (%s): %s", (n)->name, (n)->op_type, m_);            \
        return -1;                                                                           \
    } while (0)
/* The reader's Concat of nins > TPUC_MAX_IO inputs ins[] (tensor indices): node ni (the
   last node, its attributes and output read) becomes a tree of Concats of at most
   TPUC_MAX_IO inputs each (concat_wide.c). 0, or -1 with err. */
int tpuc_concat_tree(tpuc_graph_t *g, int ni, const int *ins, size_t nins, char *err,
                     size_t errlen);
/* ONNX's LSTM, GRU or RNN at node ni unrolled over the sequence into nodes inserted after it
   (it becomes DEAD; fold_rnn.c). 0, or -1 with a one-line message naming the node. */
int tpuc_fold_rnn(tpuc_graph_t *g, size_t ni, const tpuc_hw_t *hw, char *err, size_t errlen);
/* 1 when n is a Transpose [1, 0, 2] read only as X by layout-0 LSTM/GRU/RNN nodes (and by
   Shape nodes), which read its input instead (fold_rnn.c): fold gives it a shape and leaves
   it to them. */
int tpuc_rnn_input_transpose(const tpuc_graph_t *g, const tpuc_node_t *n);
/* A JSON string literal of s, quotes and escapes included (report.c). */
void tpuc_json_str(FILE *f, const char *s);
char *tpuc_strdup(const char *s);
/* Append a tensor / node; the index, or -1 when out of memory. */
int tpuc_add_tensor(tpuc_graph_t *g, const char *name);
int tpuc_add_node(tpuc_graph_t *g);
/* Opens a free (zeroed) node slot at index ni: nodes ni.. move up by one, producers and the
   graph's node references follow (fold_pad.c). 0, or -1 when out of memory. */
int tpuc_insert_node_at(tpuc_graph_t *g, size_t ni);
/* ReduceMean over every spatial axis of a Conv/pool output (x.mean([2, 3]): MNASNet,
   ShuffleNetV2): node ni becomes a GlobalAveragePool, followed by a Reshape to the kept
   dimensions when keepdims is 0 (reduce_gap.c). 1 rewritten, 0 not that case, -1 out of
   memory (err set). */
int tpuc_mean_to_gap(tpuc_graph_t *g, size_t ni, char *err, size_t errlen);
/* Appends printf text to the program's assembly. 0 or -1 (out of memory). */
int tpuc_asm(tpuc_prog_t *p, const char *fmt, ...) TPUC_PRINTF(2, 3);

#include <stdint.h>
/* The instruction writer (emit.c): each call appends one instruction's text and counts it. */
typedef struct {
    tpuc_prog_t *p;
    size_t count;      /* instructions so far */
    uint64_t mxu_rows; /* vectors presented */
    uint64_t wops;     /* lw, matmul and WMEM DMAs so far (tile.c's weight streams) */
    int dry;           /* count only, no text (tile's sizing pass) */
    int oom;           /* set (and kept) when a write failed: out of memory */
    /* when set, called once per instruction after it is counted (training records each
       instruction's phase and layer) */
    void (*hook)(void *arg);
    void *hook_arg;
} tpuc_ectx_t;

int tpuc_e_dma_in(tpuc_ectx_t *c, unsigned mem, uint64_t row, uint64_t rows, uint64_t cols,
                  uint64_t addr, uint64_t stride);
int tpuc_e_dma_out(tpuc_ectx_t *c, unsigned mem, uint64_t row, uint64_t rows, uint64_t cols,
                   uint64_t addr, uint64_t stride);
int tpuc_e_lw(tpuc_ectx_t *c, uint64_t wrow);
int tpuc_e_mm(tpuc_ectx_t *c, uint64_t ub, uint64_t acc, uint64_t rows, int accumulate);
/* bmem < 0: a unary op */
int tpuc_e_vop(tpuc_ectx_t *c, unsigned op, unsigned amem, uint64_t arow, int bmem,
               uint64_t brow, int bcast, unsigned dmem, uint64_t drow, uint64_t rows);
int tpuc_e_softmax(tpuc_ectx_t *c, uint64_t src, unsigned dmem, uint64_t dst, uint64_t g,
                   uint64_t len, uint64_t cs, uint64_t rs);
/* red: "sum", "max" or "min"; G logical rows of len elements, results packed N per dst row */
int tpuc_e_vred(tpuc_ectx_t *c, const char *red, unsigned smem, uint64_t src, unsigned dmem,
                uint64_t dst, uint64_t g, uint64_t len, uint64_t cs, uint64_t rs);
int tpuc_e_halt(tpuc_ectx_t *c);
/* ---- the instructions training's step program adds (train.c) ---- */
/* lw of the tile's transpose (`lw w=W transpose`, docs/isa.md "Transposes for training") */
int tpuc_e_lw_transpose(tpuc_ectx_t *c, uint64_t wrow);
/* the board's all-reduce of rows [row, row+rows) of mem (ACC), in place */
int tpuc_e_allreduce(tpuc_ectx_t *c, unsigned mem, uint64_t row, uint64_t rows);
/* A comment line of the program's text ("# " and the text); no instruction. */
int tpuc_e_comment(tpuc_ectx_t *c, const char *fmt, ...) TPUC_PRINTF(2, 3);
/* The one-line message for a program of `count` instructions that IMEM cannot hold, naming
   the largest layers so far. */
void tpuc_imem_error(const tpuc_prog_t *p, const tpuc_hw_t *hw, size_t count, int partial,
                     char *err, size_t errlen);
/* The loop pass (loops.c): the straight-line stream in[0..n) rolled into loop nests that
   dispatch the same instructions; no nest spans i-1 and i where cut[i] is 1 or 2 (cut may be
   NULL); cut[i] = 4 is soft: the parts between soft cuts are rolled on their own first,
   then together. tag (may be NULL): instructions whose tags differ never stand for each
   other in a nest (each output pc stands for instructions of one tag). wmodk (0: none): WMEM
   rows are taken modulo 2^wmodk (the WMEM's rows, a power of two), their registers with that
   modulus (`stride xR mod=M`), so a ring of WMEM slots rolls where it wraps. *out (*nout instructions) and *orig (per output pc: the first input
   instruction it stands for) are malloc'd. cut[i] = 2 marks a START there (the sequencer's
   state, strides included, reset: a part of the program run on its own). 0, or -1 with err. */
int tpuc_loops(const tpu_insn_t *in, size_t n, const uint8_t *cut, const uint16_t *tag,
               unsigned wmodk, tpu_insn_t **out, size_t *nout, size_t **orig, char *err,
               size_t errlen);
/* Expands prog (control flow only: tpu_seq_step / tpu_seq_resolve; the sequencer state reset
   at pc 0 and at each pc of starts[], ascending) and compares every dynamic instruction with
   ref[0..nref): 0 when they are the same (*ndisp, when not NULL: the loops and strides
   dispatched), else -1 with an internal error in err. */
int tpuc_loops_expand_check(const tpu_insn_t *prog, size_t nprog, const size_t *starts,
                            size_t nstarts, const tpu_insn_t *ref, size_t nref, uint64_t *ndisp,
                            char *err, size_t errlen);
/* Assembles p->text into p->insns, rolls it into loops (unless hw->no_loops; p->straight
   keeps the straight-line stream, the text is rewritten to the rolled program, the layers'
   pc ranges follow) and checks the IMEM size of the rolled program. `starts` (may be NULL)
   are straight-line pcs where a part of the program is started on its own (a training
   step's update part): they become cuts, and are mapped to the rolled pcs in place. */
int tpuc_assemble_parts(tpuc_prog_t *p, const tpuc_hw_t *hw, size_t *starts, size_t nstarts,
                        char *err, size_t errlen);
/* 1 unless --no-loops or TPUC_NO_LOOPS (a value other than 0) turns the loop pass off. */
int tpuc_loops_on(const tpuc_hw_t *hw);
/* Assembles p->text into p->insns and checks the IMEM size. */
int tpuc_assemble(tpuc_prog_t *p, const tpuc_hw_t *hw, char *err, size_t errlen);

#endif
