/* SPDX-License-Identifier: Apache-2.0 */
/* The ONNX compiler (docs/compiler.md): one IR, and one plain function per pass.
     tpuc_onnx_read   ONNX bytes -> graph       (onnx_read.c)
     tpuc_fold        graph -> graph: batch bound, shapes inferred, Identity/Dropout removed,
                      BatchNormalization folded, the tanh-GELU subgraph matched   (fold.c)
     tpuc_lower       graph -> graph: every node checked against what the core can run,
                      tensors given host layouts                                  (lower.c)
     tpuc_tile        graph -> program: host memory laid out, instructions emitted per node
                      with the tiles that fit UB / ACC / WMEM                     (tile.c, emit.c)
     tpuc_report      program -> per-layer report (text and JSON)                 (report.c)
   The compiler stands on the C model's public API (tpu/isa.h, tpu/asm.h, tpu/numerics.h,
   tpu/core.h) and on nothing in sim/. */
#ifndef TPUC_H
#define TPUC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "tpu/isa.h"

#ifdef __cplusplus
extern "C" {
#endif

#define TPUC_MAX_DIMS 6
#define TPUC_MAX_IO 8
/* Refused before anything is allocated: a tensor of more elements than this. */
#define TPUC_MAX_ELEMS (1ll << 31)
/* the host memory the activations may take with a buffer of their own each (tpuc_hw_t.reuse) */
#define TPUC_OWN_BUFFERS_MAX (256ull << 20)

/* ---- the hardware a program is compiled for (the same options and defaults as gen) ---- */
typedef struct {
    tpu_core_geom_t geom;   /* N, UB/ACC/WMEM rows, IMEM instructions */
    unsigned axi_data_bits; /* 0: the default for N */
    unsigned cores;         /* C: data-parallel inference, the batch split over the cores */
    unsigned topo_rows, topo_cols;
    unsigned freq_mhz;      /* for images/s in the report */
    long batch;             /* --batch: the symbolic batch bound here (0: not given) */
    int no_fuse_pool;       /* --no-fuse-pool: run every MaxPool as its own node */
    int no_fuse_add;        /* --no-fuse-add: run every residual Add as its own node */
    int no_im2col;          /* --no-im2col: the first Conv reads its windows kernel row by
                               kernel row from the SPATIAL input (same results) */
    int no_keep;            /* --no-keep: every Gemm's output goes through host memory, even
                               where the next Gemm could read it from UB (same results) */
    int no_dense;           /* --no-dense: a strided Conv's or pool's output is written in
                               its r-space (half dropped rows) as before (same results) */
    int no_share;           /* --no-share: every K-chunk DMA'd to UB rows of its own, none
                               read as a shifted view of another's (same results) */
    int no_reuse;           /* --no-reuse: every activation gets a host buffer of its own,
                               none reused after its last reader (same results) */
    int reuse;              /* --reuse: dead tensors' buffers are reused whatever the size.
                               Neither (the default): reused only when buffers of their own
                               would take more than TPUC_OWN_BUFFERS_MAX bytes */
    int predict_only;       /* --report-only: a program longer than IMEM is still predicted
                               (run in segments on the model), not refused */
    int no_loops;           /* --no-loops (hidden; TPUC_NO_LOOPS=1 in the environment too):
                               the program is written straight-line, without the loop pass
                               (loops.c); the same dynamic instructions, so the same bits */
} tpuc_hw_t;

/* ---- IR ---- */
/* ONNX's TensorProto codes; BOOL: a constant only (an attention mask), its 0/1 values in the
   int64 data */
typedef enum { TPUC_F32 = 1, TPUC_I32 = 6, TPUC_I64 = 7, TPUC_BOOL = 9 } tpuc_dtype_t;

/* Where a tensor lives in host memory (lower/tile): bf16 or fp32 rows of `cols` elements.
   PLAIN: row-major in the logical shape, rows = product of all dims but the last.
   SPATIAL: an [B, C, H, W] (or [B, C, L], H = 1) activation with channels in the row: pixel
   (b, h, w) is row b*img + off + h*rpitch + w*wstep, row pitch cols = C elements; the rows
   around the valid H x W hold the pad value (`clean`) or garbage (wstep > 1: the output of
   a Conv with its MaxPool fused, pooled pixels every wstep rows).
   IM2COL: the graph input read only by a Conv whose kernel rows would each fill a small part
   of a K-chunk (e.g. 3 x 3 x 1): the host lays out every window the Conv reads, so the
   whole kernel is one K-chunk run (docs/compiler.md "The first Conv's windows"). Row
   r = (b*ioh + oh)*iow + ow is the window of output pixel (b, oh, ow): its ikh x ikw x ichan
   elements in (kernel row, kernel column, channel) order (cols = ikh*ikw*ichan), element
   (i, j, c) the input's pixel (oh*ish + i - ipt, ow*isw + j - ipl) of channel c, or 0 outside
   the h x w image (the Conv's zero padding).
   With ipool = k (the Conv's MaxPool k x k fused, docs/compiler.md "Pooled windows") only the
   pixels of whole pool windows are laid out, grouped so that the epilogue's max is over
   contiguous blocks: the pooled pixels p = (b*PH + ph)*PW + pw (PH = ioh / k, PW = iow / k)
   in groups of ipg (the last one shorter, gs); group i's k*k*gs rows are k*k blocks of gs, block
   u*k + v holding output pixel (k*ph + u, k*pw + v) of its pooled pixels in order. */
typedef enum { TPUC_LAYOUT_NONE = 0, TPUC_LAYOUT_PLAIN, TPUC_LAYOUT_SPATIAL, TPUC_LAYOUT_IM2COL } tpuc_layout_kind_t;

typedef struct {
    tpuc_layout_kind_t kind;
    unsigned esize;       /* 2 (bf16) or 4 (fp32) */
    uint64_t addr;        /* host byte address of row 0 */
    uint64_t rows, cols;  /* the buffer: rows x cols elements, dense */
    /* SPATIAL only */
    uint64_t img, off, rpitch; /* rows per image, row of pixel (0,0), rows per image row */
    uint64_t wstep;            /* rows per pixel step in w (0 means 1) */
    uint64_t h, w;             /* the valid pixels */
    unsigned pad_t, pad_l, pad_b, pad_r; /* clean rows/columns around the valid pixels */
    uint16_t pad_value;        /* bf16 bits of the pad (0 or -Inf) */
    int flat;                  /* a Flatten of this SPATIAL tensor (read as [B, C*H*W]) */
    /* IM2COL only: kernel, strides, top/left pads, output pixels, channels */
    uint64_t ikh, ikw, ish, isw, ipt, ipl, ioh, iow, ichan;
    uint64_t ipool, ipg;       /* the fused pool's k and pooled pixels per group (0: none) */
} tpuc_layout_t;

typedef struct {
    char *name;
    int ndim;
    int64_t dims[TPUC_MAX_DIMS]; /* -1: the symbolic batch before it is bound */
    int is_const;                /* an initializer or a folded constant */
    tpuc_dtype_t dtype;
    float *f;                    /* constant data, float32 */
    int64_t *i;                  /* constant data, int64 (shapes) */
    int is_input, is_output;
    int nuses;                   /* nodes that read it (fold) */
    int producer;                /* node index, -1 for inputs and constants */
    tpuc_layout_t lay;           /* tile */
} tpuc_tensor_t;

typedef struct {
    char *name;
    int type;       /* ONNX AttributeType: 1 FLOAT, 2 INT, 3 STRING, 4 TENSOR, 6 FLOATS, 7 INTS */
    float f;
    int64_t i;
    char *s;
    size_t nints;
    int64_t *ints;
    size_t nfloats;
    float *floats;
    int tensor;     /* TENSOR: index of a constant tensor in the graph, -1 otherwise */
} tpuc_attr_t;

/* The operators after fold; TPUC_OP_DEAD marks a removed node. */
typedef enum {
    TPUC_OP_DEAD = 0, TPUC_OP_GEMM, TPUC_OP_MATMUL, TPUC_OP_ADD, TPUC_OP_RELU, TPUC_OP_SIGMOID,
    TPUC_OP_TANH, TPUC_OP_GELU, TPUC_OP_SOFTMAX, TPUC_OP_CONV, TPUC_OP_MAXPOOL,
    TPUC_OP_AVGPOOL, TPUC_OP_GAP, TPUC_OP_FLATTEN, TPUC_OP_RESHAPE, TPUC_OP_BN,
    TPUC_OP_DROPOUT, TPUC_OP_IDENTITY, TPUC_OP_CONSTANT, TPUC_OP_MUL, TPUC_OP_POW,
    TPUC_OP_DIV, TPUC_OP_PAD, TPUC_OP_CLIP, TPUC_OP_CONCAT, TPUC_OP_SHAPE, TPUC_OP_GATHER, TPUC_OP_UNSQUEEZE,
    TPUC_OP_SQUEEZE, TPUC_OP_SLICE, TPUC_OP_CAST, TPUC_OP_TRANSPOSE, TPUC_OP_SUB, TPUC_OP_NEG,
    TPUC_OP_HARDSIGMOID, TPUC_OP_HARDSWISH, TPUC_OP_REDUCEMEAN, TPUC_OP_REDUCESUM,
    TPUC_OP_REDUCEMAX, TPUC_OP_SQRT, TPUC_OP_EXP, TPUC_OP_LAYERNORM,
    TPUC_OP_MATMUL2, /* fold: a MatMul of two activations (attention; fold_attn.c) */
    TPUC_OP_CONVT,   /* ConvTranspose: fold_pad.c rewrites it as a Pad and a Conv */
    /* attention masks (fold_mask.c): folded on constants, Where(mask, -inf, x) -> an Add */
    TPUC_OP_CONSTOFSHAPE, TPUC_OP_EXPAND, TPUC_OP_EQUAL, TPUC_OP_WHERE, TPUC_OP_TRILU, TPUC_OP_OR,
    TPUC_OP_CHANNELS, /* lower (channels.c): a channel shuffle or a Slice of the channels of a
                         Conv/pool output, copied by DMA (tile_channels.c) */
    TPUC_OP_TOROWS,   /* lower (channels.c): Transpose [0, 2, 3, 1] of a Conv/pool output,
                         its pixels as the rows of a row-major [B, H, W, C] (ConvNeXt) */
    TPUC_OP_TOPIXELS, /* and back: Transpose [0, 3, 1, 2] of a row-major [B, H, W, C] into a
                         Conv/pool layout [B, C, H, W] */
    TPUC_OP_PICK,     /* fold_vit.c: x[:, i] of a row-major activation (a Gather of one
                         constant index on axis 1; sl_start[1] = i) */
    TPUC_OP_MOD,      /* Mod of two constants (shape arithmetic: Swin's window padding),
                         folded (fold_attn.c's tpuc_fold_const_arith) */
    TPUC_OP_LSTM, TPUC_OP_GRU, TPUC_OP_RNN, /* fold_rnn.c: unrolled over the sequence */
    TPUC_OP_ERF,      /* Erf: the VPU's erf (vop erf) */
    TPUC_OP_GELU_ERF, /* fold: the exact GELU x * 0.5 * (1 + Erf(x / sqrt 2)) as one node
                         (hs_alpha = fp32(1/sqrt 2), hs_beta = 1, clip_lo = 0.5; tile.c's
                         emit_hard) */
    TPUC_OP_RANGE, TPUC_OP_SCATTERND, TPUC_OP_NOT, /* on constants (Swin's shift mask), folded
                                                      (fold_range.c) */
    TPUC_OP_EINSUM,   /* rewritten as Transposes around a MatMul (fold_einsum.c) */
    TPUC_OP_COUNT
} tpuc_op_t;

typedef struct {
    char *name;      /* the ONNX node's name, or "<op>_<index>" when it has none */
    char *op_type;   /* as in the file */
    tpuc_op_t op;
    int version;     /* the operator's resolved version (latest <= the model's import) */
    int nin, nout;
    int in[TPUC_MAX_IO], out[TPUC_MAX_IO]; /* tensor indices, -1 for an omitted optional input */
    size_t nattrs;
    tpuc_attr_t *attrs;
    /* filled by fold/lower: a node that absorbed others (bias, activation, softmax) */
    int fuse_act;    /* TPUC_OP_RELU/SIGMOID/TANH/GELU applied in the epilogue, 0 none */
    int fuse_softmax;
    int conv_k[2], conv_s[2], conv_p[4]; /* Conv/pool: kernel, stride, pads t l b r */
    int count_include_pad;
    float clip_lo, clip_hi;
    float hs_alpha, hs_beta; /* HardSigmoid / HardSwish: y = max(0, min(1, alpha x + beta)) (x) */
    int depthwise;   /* Conv with group = channels (one input channel per output channel) */ /* Clip (and a Clip fused as the activation: fuse_act = CLIP) */
    int groups;      /* Conv: group (1 when absent); grouped (not depthwise) runs on the MXU;
                        TPUC_OP_CHANNELS: the shuffle's groups (1: none), its output channel
                        j the shuffled input's channel sl_start[1] + j */
    int embed;       /* Gather of rows of a float initializer (in[0], [V, D]) by the integer
                        graph input (in[1]): an embedding lookup, run as a one-hot matmul;
                        2: its output transposed to [B, D, L] (a Transpose perm [0, 2, 1]
                        folded into it: channels-first for a Conv1d) */
    int fused_into;  /* tile: a MaxPool or a residual Add computed in the epilogue of Conv
                        node fused_into - 1 */
    int fuse_pool;   /* tile: a Conv whose k x k / stride k MaxPool runs in its epilogue: k */
    /* fold: a reduction (ReduceMean/Sum/Max) or Softmax over the axes [red_lo, red_hi] of its
       input (contiguous; Softmax one axis), and LayerNorm over [red_lo, rank - 1] with
       epsilon ln_eps (in[1] scale, in[2] bias, either -1) */
    int red_lo, red_hi;
    float ln_eps;
    /* fold_attn.c: a Transpose's perm, or a Slice's start on each axis (steps 1), of an
       activation; both lowered as row copies (tile_attn.c) */
    int perm[TPUC_MAX_DIMS];
    int64_t sl_start[TPUC_MAX_DIMS];
    /* fold_pad.c: a zero Pad folded into this Conv/AveragePool: added to its pads (t l b r) */
    int pre_pad[4];
    /* fold_pad.c: a Pad kept as a node (tile_pad.c): its widths in conv_p (t l b r), its
       interior step in conv_s (1, or a ConvTranspose's stride: s - 1 constant pixels between
       input pixels), its constant in pad_value; pad_set: these were set by the ConvTranspose
       rewrite, not read from the node's inputs */
    float pad_value;
    int pad_set;
} tpuc_node_t;

typedef struct {
    tpuc_tensor_t *t;
    size_t nt, capt;
    tpuc_node_t *n;
    size_t nn, capn;
    int inputs[TPUC_MAX_IO], ninputs;   /* graph inputs that are not initializers */
    int outputs[TPUC_MAX_IO], noutputs;
    int64_t opset;      /* the default domain's import */
    char *producer;
    /* set by fold (node index + 1, 0 none): the first BatchNormalization folded into its
       Conv/Gemm and the first Dropout removed -- right for inference, not for training (batch
       statistics, random masks), which refuses them by these */
    int folded_bn, removed_dropout;
} tpuc_graph_t;

void tpuc_graph_free(tpuc_graph_t *g);
int tpuc_tensor_find(const tpuc_graph_t *g, const char *name);
int64_t tpuc_tensor_elems(const tpuc_tensor_t *t);
const tpuc_attr_t *tpuc_attr(const tpuc_node_t *n, const char *name);
int64_t tpuc_attr_int(const tpuc_node_t *n, const char *name, int64_t dflt);

/* ---- the passes: 0, or -1 with a one-line message in err ---- */
/* Reads a serialized ModelProto (untrusted bytes). */
int tpuc_onnx_read(const uint8_t *buf, size_t len, tpuc_graph_t *g, char *err, size_t errlen);
int tpuc_onnx_read_file(const char *path, tpuc_graph_t *g, char *err, size_t errlen);
int tpuc_fold(tpuc_graph_t *g, const tpuc_hw_t *hw, char *err, size_t errlen);
int tpuc_lower(tpuc_graph_t *g, const tpuc_hw_t *hw, char *err, size_t errlen);

/* A compiled program: assembly text, instructions, the constant host image and per-layer
   records. */
typedef struct {
    char *node;       /* the ONNX node(s) it comes from */
    char *op;
    size_t first_insn, end_insn; /* its straight-line instructions [first, end) */
    size_t insns;     /* with loops: the program's pcs that stand first for one of them */
    uint64_t macs;    /* useful multiply-accumulates (per core) */
    uint64_t mxu_rows;/* vectors presented to the MXU */
    uint64_t ub_hi, acc_hi, wmem_hi; /* high-water rows */
    uint64_t cycles;  /* predicted by the C model (report) */
    uint64_t mxu_busy;
    /* the matmul's shape (Gemm/MatMul: K x N'; Conv: C_in/group * KH * KW x C_out/group),
       for the shape bound of issue 14: useful MACs over the MACs of K and N' padded up to
       multiples of N; 0 where the layer is no such matmul */
    uint64_t k, nout;
    /* each unit's busy cycles in the layer (tpuc_report): the union of (dispatch, completion]
       of its instructions; mx: lw and matmul, the layer's matmul phase */
    uint64_t mx_cycles, dma_cycles, vpu_cycles;
    /* the roofline (tpuc_report): the bytes its DMAs move and the AXI beats they take at the
       port's width (the DMA's floor in cycles) */
    uint64_t dma_bytes, dma_beats;
    char *consts;     /* what the layer's constants became: "W bf16, bias fp32 (ACC)" */
} tpuc_layer_t;

typedef struct {
    char *text; size_t len, cap;     /* assembly */
    tpu_insn_t *insns; size_t ninsns;
    uint8_t *image; size_t image_bytes; /* constants, loaded at image_base */
    uint64_t image_base;
    int fills;                        /* buffers prefilled with bf16 -Inf (MaxPool padding) */
    uint64_t fill_addr[64], fill_bytes[64];
    uint64_t host_bytes;             /* the host memory the program needs */
    uint64_t act_bytes, act_all;     /* activation buffers: as laid out (dead ones reused), and
                                        what each its own would take (--no-reuse) */
    tpuc_layer_t *layers; size_t nlayers, caplayers;
    int in_t, out_t;                 /* the graph's input and output tensors */
    long batch;                      /* images per core */
    uint64_t total_cycles, total_macs;
    size_t segments;                 /* model runs the report took (1: the whole program) */
    /* the loop pass (loops.c): insns are the rolled program; straight the stream the
       lowering wrote (the same dynamic instructions), orig[pc] the first straight-line
       instruction each pc stands for (a loop or stride: its nest's first) */
    tpu_insn_t *straight; size_t nstraight;
    size_t *orig;
    size_t nloops, nstrides;         /* loop and stride instructions written */
    uint64_t loop_dispatches;        /* loop and stride instructions dispatched in a run (each
                                        costs at most one cycle) */
    size_t nrolled;                  /* the loop pass's result, also when it was not kept (more
                                        than 32768 instructions: insns is the straight line) */
    uint8_t *cut;                    /* set by the caller before tpuc_assemble (nstraight + 1,
                                        may be NULL): cut[i] = 1, no loop spans i-1 and i (the
                                        layers' boundaries are always cuts) */
    uint16_t *tag;                   /* set by the caller before tpuc_assemble (nstraight, may be
                                        NULL): instructions of different tags are never the same
                                        pc of a nest, so every pc keeps one tag (a training
                                        step's phase and layer, which its report attributes by) */
} tpuc_prog_t;

int tpuc_tile(tpuc_graph_t *g, const tpuc_hw_t *hw, tpuc_prog_t *p, char *err, size_t errlen);
void tpuc_prog_free(tpuc_prog_t *p);
/* Runs the program on the C model with a zero input to get each layer's cycles. */
int tpuc_report(const tpuc_graph_t *g, const tpuc_hw_t *hw, tpuc_prog_t *p, char *err,
                size_t errlen);
void tpuc_report_text(const tpuc_graph_t *g, const tpuc_hw_t *hw, const tpuc_prog_t *p, FILE *f);
void tpuc_report_json(const tpuc_graph_t *g, const tpuc_hw_t *hw, const tpuc_prog_t *p, FILE *f);

/* The model description tpu-infer reads (model.txt), and its reader. */
void tpuc_write_meta(const tpuc_graph_t *g, const tpuc_hw_t *hw, const tpuc_prog_t *p, FILE *f);

typedef struct {
    char name[128];
    int ndim;
    int64_t dims[TPUC_MAX_DIMS]; /* dims[0] = the compiled batch per core */
    tpuc_layout_t lay;
    int64_t onehot;              /* input only: integer token ids, each id a one-hot bf16 row
                                    of `onehot` columns (the embedding's V); 0: float input */
} tpuc_io_t;

typedef struct {
    tpu_core_geom_t geom;
    unsigned axi_data_bits, cores, topo_rows, topo_cols;
    long batch;              /* per core */
    uint64_t host_bytes;
    uint64_t image_base, image_bytes;
    int nfills;
    uint64_t fill_addr[64], fill_bytes[64];
    tpuc_io_t in, out;
} tpuc_meta_t;

int tpuc_read_meta(const char *path, tpuc_meta_t *m, char *err, size_t errlen);

/* ---- The folders tpu-compile and tpu-infer own (modeldir.c; docs/compiler.md "Output
   folders"). Each check is made before any work and refuses with one line in err. ---- */
#define TPUC_WORK_MARK "tpu-infer.work" /* the file that makes a folder a --work folder */
/* tpu-compile -o DIR: 0 when DIR is new, an empty folder, or a folder tpu-compile wrote (only
   its files, model.txt and model.s with its headers, and --work folders); else -1. */
int tpuc_model_dir_ok(const char *dir, char *err, size_t errlen);
/* Removes a folder tpu-compile wrote (tpuc_model_dir_ok's kind, checked again), its work
   folders with it; -1, nothing removed, when it holds anything else. */
int tpuc_model_dir_remove(const char *dir);
/* tpu-infer --work W: 0 when W is new, empty, or an earlier work folder; else -1. */
int tpuc_work_dir_ok(const char *work, char *err, size_t errlen);
/* 1 when dir holds the work folder's mark; writing the mark: 0 or -1 with err. */
int tpuc_is_work_dir(const char *dir);
int tpuc_work_dir_mark(const char *dir, char *err, size_t errlen);

/* Core `core`'s argument file (tpu-run, tpu-board-run, core_tb, board_tb): the program and
   constants from dir, input<core>.npy and output<core>.npy in io_dir. */
void tpuc_write_args(const tpuc_meta_t *m, const char *dir, unsigned core, const char *io_dir,
                     FILE *f);
/* Elements of a graph input/output at the compiled batch. */
uint64_t tpuc_io_elems(const tpuc_io_t *io);
/* x (float32, the ONNX shape at the compiled batch, C order) into the host image's input
   buffer (bf16 by the contract's rounding, the layout's padding value around it). */
void tpuc_put_input(const tpuc_io_t *io, const float *x, uint8_t *host);
/* The output buffer of the host image into y (float32, the ONNX shape, C order). */
void tpuc_get_output(const tpuc_io_t *io, const uint8_t *host, float *y);

/* bf16 rounding of the contract (fp32 bits -> bf16 bits) and back, for the host side. */
uint16_t tpuc_f32_to_bf16(float x);
float tpuc_bf16_to_f32(uint16_t b);

#ifdef __cplusplus
}
#endif
#endif
