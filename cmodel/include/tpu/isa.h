/* SPDX-License-Identifier: Apache-2.0 */
/* The core's instruction set (docs/isa.md): the raw 128-bit instruction, its decoded form,
   encode/decode, the dispatch-time checks (error codes), the hazard footprint and the
   disassembler. */
#ifndef TPU_ISA_H
#define TPU_ISA_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* A raw instruction: w[0] .. w[3] are w0 .. w3 of docs/isa.md (stored little-endian). */
typedef struct { uint32_t w[4]; } tpu_insn_t;

#define TPU_INSN_BYTES 16u

/* The one definition of the ISA's codes: the C side's enums below are made from these lists,
   and gen writes them into the RTL's package tpu_isa_pkg.sv (gen/emit_isa_pkg.c), so the
   model and the RTL cannot disagree on a value. X(C suffix, value, SystemVerilog name). */
#define TPU_ISA_OPCODES(X)              \
    X(NOP, 0x00, OpNop)                 \
    X(SYNC, 0x01, OpSync)               \
    X(HALT, 0x02, OpHalt)               \
    X(LOOP, 0x03, OpLoop)               \
    X(STRIDE, 0x04, OpStride)           \
    X(DMA_IN, 0x10, OpDmaIn)            \
    X(DMA_OUT, 0x11, OpDmaOut)          \
    X(LW, 0x20, OpLw)                   \
    X(MATMUL, 0x21, OpMatmul)           \
    X(VOP, 0x30, OpVop)                 \
    X(VRED, 0x31, OpVred)               \
    X(SOFTMAX, 0x32, OpSoftmax)         \
    /* the board's collectives (docs/board.md "ISA extension") */ \
    X(SEND, 0x40, OpSend)               \
    X(RECV, 0x41, OpRecv)               \
    X(BCAST, 0x42, OpBcast)             \
    X(BARRIER, 0x43, OpBarrier)         \
    X(ALLREDUCE, 0x44, OpAllreduce)

/* Error codes of docs/isa.md "Errors" (ERR_CODE; 0 is none). */
#define TPU_ISA_ERRORS(X)                                                                      \
    X(NONE, 0, ErrNone)                                                                        \
    X(OPCODE, 1, ErrOpcode)   /* unknown opcode, or a nonzero reserved bit/field */          \
    X(ROW, 2, ErrRow)         /* a memory row out of range */                                \
    X(COUNT, 3, ErrCount)     /* bad count / memory / op */                                  \
    X(ALIGN, 4, ErrAlign)     /* misaligned host address or stride */                        \
    X(NO_LW, 5, ErrNoLw)      /* matmul before any lw since START */                         \
    X(PC_END, 6, ErrPcEnd)    /* PC ran off the end of IMEM */                               \
    X(AXI, 7, ErrAxi)         /* AXI error response during a DMA */                          \
    X(CORE, 8, ErrCore)       /* a collective names a core id >= C, or send/recv to itself */ \
    X(LINK, 9, ErrLink)       /* a collective in progress when a link of the board is dead */ \
    X(LOOP, 10, ErrLoop)      /* a loop's body leaves IMEM or an outer body, or re-arms a running level */

/* The fields of w0 common to every instruction, and (last) the one flag bit the sequencer
   itself decodes beside them: [lsb, width] */
#define TPU_ISA_W0_FIELDS(X) \
    X(OPCODE, 0, 8, FOpcode) \
    X(FLAGS, 8, 8, FFlags)   \
    X(COUNT, 16, 16, FCount) \
    X(STRIDE_MOD_FORM, 13, 1, StrideModForm) /* stride: flags[5], the modulus form */

/* Loops and affine operands (docs/isa.md "Loops"): TPU_LOOP_LEVELS nested levels, index
   registers x1 .. TPU_XREGS-1 (x0 reads 0), and where each instruction keeps the register
   selectors of its address operands. X(C suffix, value, SystemVerilog name). */
#define TPU_ISA_LOOP_CONSTS(X)                                                                 \
    X(LOOP_LEVELS, 6, LoopLevels)     /* loop levels 0 (outermost) .. 5 */                   \
    X(LOOP_LEVEL_BITS, 3, LoopLevelBits) /* loop: flags[2:0] = level (6, 7 reserved) */      \
    X(STRIDE_GROUP_LEVELS, 3, StrideGroupLevels) /* stride group g sets levels 3g .. 3g+2 */ \
    X(XREGS, 16, XRegs)               /* x0 .. x15; x0 is 0 */                               \
    X(XSEL_BITS, 4, XSelBits)         /* width of a register selector */                     \
    X(XSEL_DMA_ADDR_LSB, 10, XSelDmaAddrLsb) /* dma: addr's register bits 2:0 in w0[12:10] */ \
    X(XSEL_DMA_ROW_LSB, 13, XSelDmaRowLsb)   /* dma: row's register bits 2:0 in w0[15:13] */  \
    X(XSEL_DMA_LO_BITS, 3, XSelDmaLoBits)    /* dma: the selector bits kept in w0 */          \
    X(XSEL_DMA_ADDR_HI, 30, XSelDmaAddrHi)   /* dma: addr's register bit 3 in w2[30] */       \
    X(XSEL_DMA_ROW_HI, 31, XSelDmaRowHi)     /* dma: row's register bit 3 in w2[31] */        \
    X(DMA_COLS_BITS, 14, DmaColsBits)  /* dma: cols in w2[29:16] */                          \
    X(STRIDE_XREG_HI, 4, StrideXregHi) /* stride: register bits 2:0 in flags[2:0], bit 3 in flags[4] */ \
    X(STRIDE_MOD_K_BITS, 5, StrideModKBits) /* modulus form: k in w1[4:0] */                     \
    X(STRIDE_MOD_K_MAX, 16, StrideModKMax)  /* k 1 .. 16: modulus 2^k; 17 .. 31 reserved (code 1) */ \
    X(XSEL_W3_LSB0, 20, XSelW3Lsb0)   /* others: slot 0's register in w3[23:20] */          \
    X(XSEL_W3_LSB1, 24, XSelW3Lsb1)   /*         slot 1's in w3[27:24] */                    \
    X(XSEL_W3_LSB2, 28, XSelW3Lsb2)   /*         slot 2's in w3[31:28] */                    \
    X(ACC_FIRST_LSB, 9, AccFirstLsb)  /* matmul: w0[11:9] = flags[3:1], acc_first */          \
    X(ACC_FIRST_BITS, 3, AccFirstBits)

#define TPU_ISA_W0_ENUM(name, lsb, width, sv) TPU_W0_##name##_LSB = lsb, TPU_W0_##name##_BITS = width,
enum { TPU_ISA_W0_FIELDS(TPU_ISA_W0_ENUM) };
#undef TPU_ISA_W0_ENUM

#define TPU_ISA_CONST_ENUM(name, value, sv) TPU_##name = value,
enum { TPU_ISA_LOOP_CONSTS(TPU_ISA_CONST_ENUM) };
#undef TPU_ISA_CONST_ENUM

#define TPU_ISA_OP_ENUM(name, value, sv) TPU_OP_##name = value,
typedef enum { TPU_ISA_OPCODES(TPU_ISA_OP_ENUM) } tpu_opcode_t;
#undef TPU_ISA_OP_ENUM

/* 1 for a collective (0x40..0x44). */
int tpu_opcode_is_collective(unsigned opcode);

/* Core ids of a collective are 6 bits (w2[5:0]). */
#define TPU_CORE_ID_BITS 6u

/* Memory ids (dma flags[1:0]; for the VPU only UB and ACC exist, one bit). */
#define TPU_ISA_MEMS(X) \
    X(UB, 0, MemUb)     \
    X(ACC, 1, MemAcc)   \
    X(WMEM, 2, MemWmem)
#define TPU_ISA_MEM_ENUM(name, value, sv) TPU_MEM_##name = value,
enum { TPU_ISA_MEMS(TPU_ISA_MEM_ENUM) TPU_MEM_COUNT = 3 };
#undef TPU_ISA_MEM_ENUM

/* VPU ops of vop flags[3:0] (0..4 binary, 5..14 unary; 15 is error code 3). The values
   are those of vpu_op_t (tpu/vpu.h). */
enum {
    TPU_VOP_ADD = 0, TPU_VOP_SUB, TPU_VOP_MUL, TPU_VOP_MAX, TPU_VOP_MIN, TPU_VOP_CVT,
    TPU_VOP_RELU, TPU_VOP_EXP, TPU_VOP_TANH, TPU_VOP_SIGMOID, TPU_VOP_GELU, TPU_VOP_RECIP,
    TPU_VOP_LOG, TPU_VOP_RSQRT, TPU_VOP_ERF,
    TPU_VOP_COUNT
};

/* Reductions of vred flags[1:0] (0 is error code 3). */
enum { TPU_RED_SUM = 1, TPU_RED_MAX = 2, TPU_RED_MIN = 3 };

/* Units (docs/isa.md "Timing"). */
typedef enum { TPU_UNIT_NONE = 0, TPU_UNIT_DMA, TPU_UNIT_WL, TPU_UNIT_MX, TPU_UNIT_VPU } tpu_unit_t;

#define TPU_ISA_ERR_ENUM(name, value, sv) TPU_ERR_##name = value,
enum { TPU_ISA_ERRORS(TPU_ISA_ERR_ENUM) };
#undef TPU_ISA_ERR_ENUM

/* The core's sizes: N and every memory's size in rows (IMEM in instructions). */
typedef struct { unsigned n, ub_rows, acc_rows, wmem_rows, imem_insns; } tpu_core_geom_t;

/* The defaults of gen for MXU size n (docs/isa.md "Memories"). */
tpu_core_geom_t tpu_core_geom_default(unsigned n);

/* A decoded instruction. Raw fields first; then named fields, those that the opcode does not
   have are 0. `reserved` is nonzero when a bit that the opcode does not define is set (decode
   sets it; encode ignores it and writes only the named fields of the opcode). */
typedef struct {
    unsigned opcode; /* w0[7:0] */
    unsigned flags;  /* w0[15:8] */
    unsigned n;      /* w0[31:16]: rows (dma, matmul, vop) or logical rows G (vred, softmax) */
    unsigned reserved;
    /* dma_in / dma_out */
    unsigned mem;      /* flags[1:0] */
    uint32_t addr;     /* w1: host byte address */
    unsigned row;      /* w2[15:0]: first on-chip row */
    unsigned cols;     /* w2[29:16] */
    uint32_t stride;   /* w3: host bytes between rows */
    /* lw */
    unsigned w_row;    /* w1[15:0] */
    unsigned transpose; /* lw flags[0]: the tile is loaded transposed (docs/isa.md) */
    /* matmul */
    unsigned accumulate; /* flags[0] */
    unsigned acc_first;  /* flags[3:1]: 0, or 1 + L: overwrite in the first iteration of loop
                            level L and of every level inside it (i_L .. i_5 all 0), accumulate
                            in the others (docs/isa.md "Loops"); flags[0] is then 0 */
    unsigned ub_row;     /* w1[15:0] */
    unsigned acc_row;    /* w2[15:0] */
    /* vop */
    unsigned vop;        /* flags[3:0] */
    unsigned a_mem, b_mem, d_mem; /* flags[4], flags[5], flags[6] (d_mem also vred/softmax) */
    unsigned bcast;      /* flags[7] */
    unsigned a_row, b_row, d_row; /* w1[15:0], w1[31:16], w2[15:0] */
    /* vred / softmax (dst mem in d_mem) */
    unsigned red;          /* vred flags[1:0] */
    unsigned src_mem;      /* flags[4] */
    unsigned src_row;      /* w1[15:0] */
    unsigned chunk_stride; /* w1[31:16] */
    unsigned dst_row;      /* w2[15:0] */
    unsigned row_stride;   /* w2[31:16] */
    unsigned length;       /* w3[15:0] */
    /* send / recv / bcast / allreduce (n = rows; mem = flags[0]; row = w1[15:0]) */
    unsigned peer;         /* w2[5:0]: send dst core, recv src core, bcast root */
    unsigned ring;         /* allreduce flags[1]: one ring over all cores */
    /* the index register (0 = none) added to each address operand (docs/isa.md "Loops"):
       xsel[0..2] are the opcode's slots: dma addr, row; lw w; matmul ub, acc; vop a, b, dst;
       vred/softmax src, dst; send/recv/bcast/allreduce row */
    unsigned xsel[3];
    /* loop: level (flags[2:0]), n = count, skip (w1[15:0]), body (w2[15:0]) */
    unsigned level, skip, body;
    /* stride: register (flags[4], flags[2:0]), group g (flags[3]), s[] = w1, w2, w3: the strides of
       levels 3g, 3g + 1, 3g + 2 */
    unsigned xreg, group;
    int32_t s[3];
    /* stride, modulus form (flags[5] = 1; docs/isa.md "Loops"): modk = k (w1[4:0]): the
       register's operands resolve modulo 2^k (k 1 .. 16), or without a modulus (k = 0);
       k 17 .. 31, or w1[31:5], w2, w3, n or flags[3] nonzero, is reserved (code 1). group and
       s[] are 0 in this form */
    unsigned modform;
    unsigned modk;
} tpu_dinsn_t;

/* The sequencer's loop state (docs/isa.md "Loops"): every level's body, count and index, and
   every index register's per-level strides and parts. x_r = sum over l of part[r][l]; part[r][l]
   is 0 when level l is armed or completes and grows by stride[r][l] with each of its
   iterations. All zero at START (tpu_seq_reset). */
typedef struct {
    unsigned armed[TPU_LOOP_LEVELS];
    uint32_t first[TPU_LOOP_LEVELS], last[TPU_LOOP_LEVELS];
    uint32_t count[TPU_LOOP_LEVELS], idx[TPU_LOOP_LEVELS];
    uint32_t stride[TPU_XREGS][TPU_LOOP_LEVELS];
    uint32_t part[TPU_XREGS][TPU_LOOP_LEVELS];
    /* each register's modulus: operands with register r resolve modulo 2^modk[r] (0: none;
       set by `stride xR mod=M`, the modulus form) */
    uint8_t modk[TPU_XREGS];
} tpu_seq_t;

void tpu_seq_reset(tpu_seq_t *s);
/* x_r (two's complement, 32 bits); x0 is 0. */
uint32_t tpu_seq_xval(const tpu_seq_t *s, unsigned r);
/* The instruction as dispatched: every address operand with a register selector gets the
   register's value added and its selector cleared; a matmul's acc_first becomes its
   accumulate flag for the current loop indices. Host addresses wrap modulo 2^32; a row
   whose sum is outside 0 .. 65535 becomes 0xFFFFFFFF, which no memory has (error 2). An
   operand whose register r has a modulus (modk[r] = k != 0) is the 32-bit sum masked with
   2^k - 1 instead (rows and host addresses alike). */
void tpu_seq_resolve(const tpu_seq_t *s, tpu_dinsn_t *d);
/* Code 10 (TPU_ERR_LOOP) for a `loop` at pc that breaks the nesting rules, else 0 (other
   opcodes: 0). Call after tpu_insn_check passed. */
int tpu_seq_check(const tpu_seq_t *s, const tpu_dinsn_t *d, uint32_t pc, unsigned imem_insns);
/* Dispatch d (checked) at pc: a loop arms its level, a stride sets its strides (the modulus
   form: its register's modulus, nothing else); then the loop
   levels whose body ends at pc iterate or complete. Returns the next pc. */
uint32_t tpu_seq_step(tpu_seq_t *s, const tpu_dinsn_t *d, uint32_t pc);
/* The loop indices as the trace prints them: "i0.i1.i2.i3.i4.i5". */
void tpu_seq_iter_text(const tpu_seq_t *s, char *buf, size_t len);

void tpu_insn_decode(tpu_insn_t raw, tpu_dinsn_t *d);
tpu_insn_t tpu_insn_encode(const tpu_dinsn_t *d);

/* 1 for a vop op that takes b (add sub mul max min), else 0. */
int tpu_vop_is_binary(unsigned op);
/* Names as in the assembler ("add", "relu", ...; "sum", "max", "min"; "ub", "acc", "wmem");
   NULL when out of range. */
const char *tpu_vop_name(unsigned op);
const char *tpu_red_name(unsigned red);
const char *tpu_mem_name(unsigned mem);
/* The mnemonic ("dma_in", ...), or NULL for an unknown opcode. */
const char *tpu_opcode_name(unsigned opcode);
tpu_unit_t tpu_opcode_unit(unsigned opcode);
/* Host element size in bytes of a dma memory: 2 (UB, WMEM) or 4 (ACC). */
unsigned tpu_mem_elem_bytes(unsigned mem);

/* The dispatch-time check of docs/isa.md "Errors": returns 0 or the code 1..4 of the first
   failing rule, checked in the order 1 (opcode, reserved bits), 3 (counts, memories, ops),
   4 (alignment), 2 (row ranges). Code 8 (a collective's core id) needs the core's id and
   the board size: tpu_insn_check_board checks it after the others. Code 5 needs state and is the caller's: a matmul that
   passes this check but comes before any lw since START is code 5. Codes 6 and 7 are not
   properties of one instruction. */
int tpu_insn_check(const tpu_dinsn_t *d, const tpu_core_geom_t *g);
/* tpu_insn_check, then (when it passes) code 8 for a collective executed by core `self` on a
   board of `cores` cores: a core id >= cores, or send/recv naming self. */
int tpu_insn_check_board(const tpu_dinsn_t *d, const tpu_core_geom_t *g, unsigned self,
                         unsigned cores);
const char *tpu_err_name(int code); /* "unknown opcode or reserved bit", ...; "unknown error" */

/* The hazard footprint (docs/isa.md "Timing", "Hazards") of an instruction that passed
   tpu_insn_check: the row ranges [lo, hi] (inclusive) it reads and writes in each on-chip
   memory, and the memory ports it uses. A vop whose a and b are in the same memory gives two
   read ranges of that memory; a softmax writes its ACC source (scratch) and its dst. */
typedef struct {
    unsigned mem;   /* TPU_MEM_* */
    unsigned write; /* 0 read, 1 write */
    uint32_t lo, hi;
} tpu_fp_range_t;

#define TPU_PORT_RD(mem) (1u << (2u * (mem)))
#define TPU_PORT_WR(mem) (1u << (2u * (mem) + 1u))

typedef struct {
    unsigned count;        /* ranges used in r[] */
    tpu_fp_range_t r[4];
    unsigned ports;        /* TPU_PORT_RD/WR bits */
} tpu_footprint_t;

/* n_mxu is N; d must be resolved (tpu_seq_resolve). Returns the number of ranges (0 for nop/sync/halt or an unknown opcode). */
int tpu_insn_footprint(const tpu_dinsn_t *d, unsigned n_mxu, tpu_footprint_t *fp);
/* 1 when the two footprints conflict (a writes what b reads or writes, or reads what b
   writes) or share a port; 0 otherwise. */
int tpu_footprint_conflict(const tpu_footprint_t *a, const tpu_footprint_t *b);

/* One line (no newline) in the assembler's syntax (docs/isa.md "Assembly language"):
   assembling it gives the same 128 bits. An unknown opcode or reserved bits give the raw
   form `.insn w0, w1, w2, w3`. Returns the length snprintf would write. */
size_t tpu_insn_disasm(tpu_insn_t raw, char *buf, size_t len);

/* Bytes <-> instructions (little-endian words). */
void tpu_insn_to_bytes(tpu_insn_t raw, uint8_t out[16]);
tpu_insn_t tpu_insn_from_bytes(const uint8_t in[16]);

#ifdef __cplusplus
}
#endif

#endif
