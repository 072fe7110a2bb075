/* SPDX-License-Identifier: Apache-2.0 */
/* tpu/isa.h: encoding against hand-encoded words of docs/isa.md, random encode/decode round
   trips of every opcode, disassembly -> assembly -> the same bits, the error codes of
   tpu_insn_check, footprints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "tpu/asm.h"
#include "tpu/isa.h"

static uint64_t rng_state = 0x243F6A8885A308D3ull;

static uint32_t rnd(void)
{
    /* xorshift64* */
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return (uint32_t)((rng_state * 0x2545F4914F6CDD1Dull) >> 32);
}

static const unsigned opcodes[] = { TPU_OP_NOP, TPU_OP_SYNC, TPU_OP_HALT, TPU_OP_LOOP,
                                    TPU_OP_STRIDE, TPU_OP_DMA_IN,
                                    TPU_OP_DMA_OUT, TPU_OP_LW, TPU_OP_MATMUL, TPU_OP_VOP,
                                    TPU_OP_VRED, TPU_OP_SOFTMAX, TPU_OP_SEND, TPU_OP_RECV,
                                    TPU_OP_BCAST, TPU_OP_BARRIER, TPU_OP_ALLREDUCE };
#define NOPC (sizeof opcodes / sizeof opcodes[0])

/* A raw instruction with random values in exactly the fields docs/isa.md defines for op
   (written here from the table, not with the code under test). */
static tpu_insn_t random_valid(unsigned op)
{
    tpu_insn_t r = { { 0, 0, 0, 0 } };
    unsigned f = 0, n = rnd() & 0xFFFF;
    switch (op) {
    case TPU_OP_NOP: case TPU_OP_SYNC: case TPU_OP_HALT:
        n = 0;
        break;
    case TPU_OP_LOOP: /* docs/isa.md "Loops": level, count, skip, body */
        f = rnd() % TPU_LOOP_LEVELS;
        r.w[1] = rnd() & 0xFFFF; r.w[2] = rnd() & 0xFFFF;
        break;
    case TPU_OP_STRIDE: /* register (x0 encodable), group; three strides each */
        n = 0;
        f = (rnd() & 7) | (rnd() & 0x10);
        if (rnd() % 4 == 0) { /* the modulus form: flags[5], k = 0 .. 16 in w1[4:0] */
            f |= 0x20;
            r.w[1] = rnd() % 17;
            break;
        }
        f |= rnd() & 8;
        r.w[1] = rnd(); r.w[2] = rnd(); r.w[3] = rnd();
        break;
    case TPU_OP_DMA_IN: case TPU_OP_DMA_OUT:
        f = rnd() % 3; /* ub acc wmem (3 is not encodable by name) */
        f |= rnd() & 0xFC; /* the addr and row registers, flags[4:2] and [7:5] */
        r.w[1] = rnd(); r.w[2] = rnd(); r.w[3] = rnd();
        break;
    case TPU_OP_LW:
        n = 0;
        f = rnd() & 1; /* transpose */
        r.w[1] = rnd() & 0xFFFF;
        r.w[3] = rnd() & 0x700000u; /* w's register, w3[22:20] */
        break;
    case TPU_OP_MATMUL:
        f = rnd() & 1;
        r.w[1] = rnd() & 0xFFFF; r.w[2] = rnd() & 0xFFFF;
        r.w[3] = rnd() & 0x7700000u; /* ub's and acc's registers */
        break;
    case TPU_OP_VOP: {
        unsigned vop = rnd() % TPU_VOP_COUNT;
        f = vop | (rnd() & 0x10) | (rnd() & 0x40);
        r.w[1] = rnd() & 0xFFFF;
        r.w[3] = rnd() & 0x70700000u; /* a's and dst's registers */
        if (vop <= 4) {
            f |= (rnd() & 0x20) | (rnd() & 0x80);
            r.w[1] |= rnd() & 0xFFFF0000u;
            r.w[3] |= rnd() & 0x7000000u; /* b's register: binary ops only */
        }
        r.w[2] = rnd() & 0xFFFF;
        break;
    }
    case TPU_OP_VRED: case TPU_OP_SOFTMAX:
        f = (op == TPU_OP_VRED ? 1 + rnd() % 3 : 0) | (rnd() & 0x10) | (rnd() & 0x40);
        r.w[1] = rnd(); r.w[2] = rnd(); r.w[3] = (rnd() & 0xFFFF) | (rnd() & 0x7700000u);
        break;
    case TPU_OP_SEND: case TPU_OP_RECV: case TPU_OP_BCAST: /* docs/board.md "ISA extension" */
        f = rnd() & 1;
        r.w[1] = rnd() & 0xFFFF; r.w[2] = rnd() & 0x3F;
        r.w[3] = rnd() & 0x700000u; /* row's register */
        break;
    case TPU_OP_BARRIER:
        n = 0;
        break;
    case TPU_OP_ALLREDUCE:
        f = rnd() & 3;
        r.w[1] = rnd() & 0xFFFF;
        r.w[3] = rnd() & 0x700000u;
        break;
    }
    r.w[0] = op | f << 8 | n << 16;
    return r;
}

static void assert_same(tpu_insn_t a, tpu_insn_t b)
{
    for (int i = 0; i < 4; i++)
        assert_int_equal(a.w[i], b.w[i]);
}

/* Hand-encoded from the table of docs/isa.md. */
static void test_known_encodings(void **state)
{
    (void)state;
    struct { const char *src; uint32_t w[4]; } t[] = {
        { "dma_in acc row=5 rows=3 cols=4 addr=0x100 stride=64",
          { 0x10 | 1 << 8 | 3u << 16, 0x100, 5 | 4u << 16, 64 } },
        { "dma_out ub row=7 rows=2 cols=1 addr=16", { 0x11 | 2u << 16, 16, 7 | 1u << 16, 2 } },
        { "lw w=12", { 0x20, 12, 0, 0 } },
        { "lw w=12 transpose", { 0x20 | 1 << 8, 12, 0, 0 } },
        { "lw transpose w=65535", { 0x20 | 1 << 8, 65535, 0, 0 } },
        { "matmul ub=1 acc=2 rows=9 accumulate", { 0x21 | 1 << 8 | 9u << 16, 1, 2, 0 } },
        { "vop sub a=acc:3 b=ub:4 bcast dst=acc:5 rows=6",
          { 0x30 | (1 | 0x10 | 0x40 | 0x80) << 8 | 6u << 16, 3 | 4u << 16, 5, 0 } },
        { "vop recip a=ub:3 dst=acc:5 rows=6", { 0x30 | (11 | 0x40) << 8 | 6u << 16, 3, 5, 0 } },
        { "vop log a=acc:3 dst=ub:5 rows=6", { 0x30 | (12 | 0x10) << 8 | 6u << 16, 3, 5, 0 } },
        { "vop rsqrt a=ub:7 dst=acc:7 rows=1", { 0x30 | (13 | 0x40) << 8 | 1u << 16, 7, 7, 0 } },
        { "vop erf a=acc:2 dst=ub:9 rows=4", { 0x30 | (14 | 0x10) << 8 | 4u << 16, 2, 9, 0 } },
        { "vred min src=acc:1 dst=ub:2 rows=3 length=40 chunk_stride=8 row_stride=7",
          { 0x31 | (3 | 0x10) << 8 | 3u << 16, 1 | 8u << 16, 2 | 7u << 16, 40 } },
        { "softmax src=acc:1 dst=acc:2 rows=3 length=4 chunk_stride=5 row_stride=6",
          { 0x32 | (0x10 | 0x40) << 8 | 3u << 16, 1 | 5u << 16, 2 | 6u << 16, 4 } },
        { "halt", { 2, 0, 0, 0 } },
        /* docs/isa.md "Loops": the modulus form, flags[5], k = log2 M in w1[4:0] */
        { "stride x3 mod=1024", { 0x04 | (3 | 0x20) << 8, 10, 0, 0 } },
        { "stride x9 mod=0", { 0x04 | (1 | 0x10 | 0x20) << 8, 0, 0, 0 } },
        { "stride x15 mod=65536", { 0x04 | (7 | 0x10 | 0x20) << 8, 16, 0, 0 } },
        { "stride x1 mod=2", { 0x04 | (1 | 0x20) << 8, 1, 0, 0 } },
        /* docs/board.md "ISA extension" */
        { "send acc row=5 rows=3 core=7", { 0x40 | 1 << 8 | 3u << 16, 5, 7, 0 } },
        { "recv ub row=65535 rows=1 core=63", { 0x41 | 1u << 16, 65535, 63, 0 } },
        { "bcast acc row=2 rows=4 root=1", { 0x42 | 1 << 8 | 4u << 16, 2, 1, 0 } },
        { "barrier", { 0x43, 0, 0, 0 } },
        { "allreduce acc row=9 rows=2", { 0x44 | 1 << 8 | 2u << 16, 9, 0, 0 } },
        { "allreduce acc row=9 rows=2 ring", { 0x44 | 3 << 8 | 2u << 16, 9, 0, 0 } },
        { "allreduce ub row=0 rows=1", { 0x44 | 1u << 16, 0, 0, 0 } },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        tpu_insn_t *p;
        size_t n;
        char *e;
        assert_int_equal(tpu_asm(t[i].src, "t.s", &p, &n, &e), 0);
        assert_int_equal(n, 1);
        for (int k = 0; k < 4; k++)
            assert_int_equal(p[0].w[k], t[i].w[k]);
        uint8_t b[16];
        tpu_insn_to_bytes(p[0], b);
        assert_int_equal(b[0], t[i].w[0] & 0xFF); /* little-endian */
        assert_int_equal(b[3], t[i].w[0] >> 24);
        assert_int_equal(b[4], t[i].w[1] & 0xFF);
        assert_same(tpu_insn_from_bytes(b), p[0]);
        free(p);
        free(e);
    }
}

static void test_roundtrip_random(void **state)
{
    (void)state;
    for (int it = 0; it < 20000; it++) {
        unsigned op = opcodes[rnd() % NOPC];
        tpu_insn_t r = random_valid(op);
        tpu_dinsn_t d, d2;
        tpu_insn_decode(r, &d);
        assert_int_equal(d.opcode, op);
        assert_int_equal(d.reserved, 0);
        assert_same(tpu_insn_encode(&d), r);
        tpu_insn_decode(tpu_insn_encode(&d), &d2);
        assert_memory_equal(&d, &d2, sizeof d);
    }
    /* named fields land where the table says */
    tpu_dinsn_t d;
    tpu_insn_t r = { { 0x30 | (2 | 0x20) << 8 | 77u << 16, 0x00050004, 0x9, 0 } };
    tpu_insn_decode(r, &d);
    assert_int_equal(d.vop, 2);
    assert_int_equal(d.b_mem, 1);
    assert_int_equal(d.a_mem, 0);
    assert_int_equal(d.n, 77);
    assert_int_equal(d.a_row, 4);
    assert_int_equal(d.b_row, 5);
    assert_int_equal(d.d_row, 9);
}

static void dis_asm(tpu_insn_t r)
{
    char text[200];
    tpu_insn_t *p;
    size_t n;
    char *e;
    size_t len = tpu_insn_disasm(r, text, sizeof text);
    assert_true(len < sizeof text);
    assert_int_equal(strlen(text), len);
    int rc = tpu_asm(text, "dis.s", &p, &n, &e);
    if (rc != 0)
        fail_msg("'%s' does not assemble: %s", text, e);
    assert_int_equal(n, 1);
    assert_same(p[0], r);
    free(p);
    free(e);
}

/* docs/isa.md "Loops": every new form written out, its disassembly reassembles to the same
   bits and names the register (+xR) or the loop's fields */
static void test_loop_forms_roundtrip(void **state)
{
    (void)state;
    static const char *const src[] = {
        "loop 0 count=1 skip=1 body=1",
        "loop 1 count=65535 skip=65535 body=65535",
        "loop 2 count=3 body=2",
        "loop 3 count=0 skip=0 body=0", /* assembles; error 3 at run time */
        "stride x1 l0=8 l1=-4 l2=0",
        "stride x7 l0=-2147483648 l1=2147483647 l2=-1",
        "stride x3 l3=-5",
        "stride x2 l3=1 l4=-2 l5=3",
        "stride x4 l5=7",
        "loop 5 count=2 body=1",
        "loop 4 count=9 skip=2 body=3",
        "stride x0 l0=1", /* assembles; error 3 at run time */
        "stride x5 mod=4096",
        "stride x12 mod=0",
        "stride x0 mod=2", /* assembles; error 3 at run time */
        "dma_in ub row=16+x2 rows=2 cols=1 addr=0x1000+x4 stride=2",
        "dma_in wmem row=x7 rows=1 cols=1 addr=x1",
        "dma_out acc row=3+x5 rows=1 cols=1 addr=0x40 stride=4",
        "lw w=4+x6 transpose",
        "matmul ub=x1 acc=8+x2 rows=8 accumulate",
        "vop add a=ub:1+x1 b=acc:2+x2 bcast dst=acc:3+x3 rows=4",
        "vop relu a=acc:0+x4 dst=ub:0+x4 rows=1",
        "vred max src=acc:5+x5 dst=ub:6+x6 rows=2 length=3 chunk_stride=1 row_stride=1",
        "softmax src=acc:0+x7 dst=acc:0+x7 rows=1 length=1 chunk_stride=0 row_stride=0",
        "send ub row=1+x1 rows=1 core=1",
        "recv acc row=x2 rows=1 core=0",
        "bcast ub row=2+x3 rows=2 root=3",
        "allreduce acc row=x4 rows=1 ring",
    };
    for (size_t i = 0; i < sizeof src / sizeof src[0]; i++) {
        tpu_insn_t *p;
        size_t n;
        char *e, text[200];
        if (tpu_asm(src[i], "l.s", &p, &n, &e) != 0)
            fail_msg("'%s': %s", src[i], e);
        assert_int_equal(n, 1);
        tpu_dinsn_t d;
        tpu_insn_decode(p[0], &d);
        assert_int_equal(d.reserved, 0);
        tpu_insn_disasm(p[0], text, sizeof text);
        if (strstr(src[i], "+x") || strstr(src[i], "=x"))
            if (!strstr(text, "+x"))
                fail_msg("'%s' disassembles to '%s': no register", src[i], text);
        dis_asm(p[0]);
        free(p);
        free(e);
    }
    /* the fields land where the table says */
    char text[200];
    tpu_insn_t l = { { 0x03 | 2u << 8 | 7u << 16, 3, 5, 0 } };
    tpu_insn_disasm(l, text, sizeof text);
    assert_string_equal(text, "loop 2 count=7 skip=3 body=5");
    tpu_insn_t st = { { 0x04 | (3u | 8u) << 8, 0xFFFFFFFBu, 0, 0 } };
    tpu_insn_disasm(st, text, sizeof text);
    assert_string_equal(text, "stride x3 l3=-5 l4=0 l5=0");
    tpu_insn_t st5 = { { 0x04 | (3u | 8u) << 8, 1, 2, 0xFFFFFFFFu } };
    tpu_insn_disasm(st5, text, sizeof text);
    assert_string_equal(text, "stride x3 l3=1 l4=2 l5=-1");
    tpu_insn_t md = { { 0x04 | (2u | 0x20u) << 8, 7, 0, 0 } };
    tpu_insn_disasm(md, text, sizeof text);
    assert_string_equal(text, "stride x2 mod=128");
    tpu_insn_t m0 = { { 0x04 | (6u | 0x30u) << 8, 0, 0, 0 } };
    tpu_insn_disasm(m0, text, sizeof text);
    assert_string_equal(text, "stride x14 mod=0");
    /* the modulus form's reserved k (17 .. 31), flags[3], w1[31:5], w2, w3: .insn */
    static const uint32_t resv[][4] = { { 0x2104, 17, 0, 0 }, { 0x2104, 31, 0, 0 },
                                        { 0x2904, 4, 0, 0 }, { 0x2104, 0x24, 0, 0 },
                                        { 0x2104, 4, 1, 0 }, { 0x2104, 4, 0, 1 },
                                        { 0x12104, 4, 0, 0 }, { 0x6104, 4, 0, 0 } };
    for (size_t i = 0; i < sizeof resv / sizeof resv[0]; i++) {
        tpu_insn_t rv = { { resv[i][0], resv[i][1], resv[i][2], resv[i][3] } };
        tpu_dinsn_t dv;
        tpu_insn_decode(rv, &dv);
        assert_int_equal(dv.reserved, 1);
        tpu_insn_disasm(rv, text, sizeof text);
        assert_int_equal(strncmp(text, ".insn", 5), 0);
        dis_asm(rv);
    }
    tpu_insn_t l5 = { { 0x03 | 5u << 8 | 2u << 16, 1, 1, 0 } };
    tpu_insn_disasm(l5, text, sizeof text);
    assert_string_equal(text, "loop 5 count=2 skip=1 body=1");
    tpu_insn_t mm = { { 0x21 | 1u << 8 | 8u << 16, 0, 8, 1u << 20 | 2u << 24 } };
    tpu_insn_disasm(mm, text, sizeof text);
    assert_string_equal(text, "matmul ub=0+x1 acc=8+x2 rows=8 accumulate");
    /* a unary vop's b register, or a loop level 6, is reserved: .insn */
    tpu_insn_t ub = { { 0x30 | 6u << 8 | 1u << 16, 0, 0, 1u << 24 } };
    tpu_insn_disasm(ub, text, sizeof text);
    assert_int_equal(strncmp(text, ".insn", 5), 0);
    dis_asm(ub);
    tpu_insn_t sg = { { 0x03 | 6u << 8 | 1u << 16, 1, 1, 0 } };
    tpu_insn_disasm(sg, text, sizeof text);
    assert_int_equal(strncmp(text, ".insn", 5), 0);
    dis_asm(sg);
}

static void test_disasm_roundtrip(void **state)
{
    (void)state;
    for (int it = 0; it < 20000; it++)
        dis_asm(random_valid(opcodes[rnd() % NOPC]));
    /* anything at all: unknown opcodes and reserved bits come back as .insn */
    for (int it = 0; it < 5000; it++) {
        tpu_insn_t r = { { rnd(), rnd(), rnd(), rnd() } };
        if (it & 1)
            r.w[0] = (r.w[0] & ~0xFFu) | opcodes[rnd() % NOPC];
        dis_asm(r);
    }
    char text[200];
    tpu_insn_t r = { { 0x21 | 16 << 8, 0, 0, 0 } }; /* matmul flags[4] reserved */
    tpu_insn_disasm(r, text, sizeof text);
    assert_string_equal(text, ".insn 0x00001021, 0x00000000, 0x00000000, 0x00000000");
    tpu_insn_t r3 = { { 0x21 | 3 << 8, 0, 0, 0 } }; /* acc_first beside flags[0] reserved */
    tpu_insn_disasm(r3, text, sizeof text);
    assert_string_equal(text, ".insn 0x00000321, 0x00000000, 0x00000000, 0x00000000");
    tpu_insn_t r4 = { { 0x21 | 4 << 8 | 8u << 16, 0, 0, 0 } }; /* acc_first 2: level 1 */
    tpu_insn_disasm(r4, text, sizeof text);
    assert_string_equal(text, "matmul ub=0 acc=0 rows=8 acc_mode=first:l1");
    tpu_insn_t t = { { 0x20 | 1 << 8, 7, 0, 0 } }; /* lw transpose */
    tpu_insn_disasm(t, text, sizeof text);
    assert_string_equal(text, "lw w=7 transpose");
    tpu_insn_t t2 = { { 0x20 | 2 << 8, 7, 0, 0 } }; /* lw flags[1] reserved */
    tpu_insn_disasm(t2, text, sizeof text);
    assert_string_equal(text, ".insn 0x00000220, 0x00000007, 0x00000000, 0x00000000");
    tpu_insn_t v = { { 0x30 | 15 << 8 | 1u << 16, 0, 0, 0 } }; /* vop 15: no mnemonic */
    tpu_insn_disasm(v, text, sizeof text);
    assert_int_equal(strncmp(text, ".insn", 5), 0);
}

/* Check of one assembled line against geometry g. */
static int code_of(const char *src, const tpu_core_geom_t *g)
{
    tpu_insn_t *p;
    size_t n;
    char *e;
    if (tpu_asm(src, "c.s", &p, &n, &e) != 0)
        fail_msg("'%s': %s", src, e);
    free(e);
    tpu_dinsn_t d;
    tpu_insn_decode(p[0], &d);
    free(p);
    return tpu_insn_check(&d, g);
}

static void test_check_codes(void **state)
{
    (void)state;
    tpu_core_geom_t g = { 4, 100, 50, 32, 1024 };
    struct { const char *src; int code; } t[] = {
        /* valid, at the edges of every range */
        { "nop", 0 }, { "sync", 0 }, { "halt", 0 },
        { "dma_in ub row=96 rows=4 cols=4 addr=2 stride=6", 0 },
        { "dma_in acc row=49 rows=1 cols=1 addr=4 stride=4", 0 },
        { "dma_in wmem row=0 rows=32 cols=4 addr=0 stride=8", 0 },
        { "dma_out acc row=0 rows=50 cols=4 addr=0x10 stride=0", 0 },
        { "lw w=28", 0 },
        { "lw w=28 transpose", 0 },
        { ".insn 0x00000120, 28, 0, 0", 0 },           /* lw flags[0] = transpose: valid */
        { "matmul ub=90 acc=40 rows=10", 0 },
        { "vop add a=ub:99 b=acc:49 dst=ub:99 rows=1", 0 },
        { "vop mul a=ub:0 b=acc:49 bcast dst=ub:0 rows=100", 0 },
        { "vop exp a=acc:0 dst=acc:0 rows=50", 0 },
        /* G=5 rows, length 9 -> C = 3 chunks: last src row 10 + 4*2 + 2*3 = 24; dst rows 2 */
        { "vred sum src=acc:10 dst=ub:98 rows=5 length=9 chunk_stride=3 row_stride=2", 0 },
        { "vred max src=acc:25 dst=ub:98 rows=5 length=9 chunk_stride=3 row_stride=2", 0 },
        { "softmax src=acc:35 dst=ub:85 rows=5 length=9 chunk_stride=3 row_stride=2", 0 },
        /* code 1 */
        { ".insn 0x05, 0, 0, 0", 1 }, { ".insn 0x22, 0, 0, 0", 1 },
        { ".insn 0x03, 0, 0, 0", 3 }, { "loop 0 count=1 skip=0 body=1", 3 },
        { "loop 0 count=1 body=0", 3 }, { "stride x0 l0=1", 3 },
        { ".insn 0x0103, 0x10000, 0, 0", 1 }, { ".insn 0x00010404, 0, 0, 0", 1 },
        { ".insn 0x100, 0, 0, 0", 1 },                 /* nop with a flag */
        { ".insn 0x10000, 0, 0, 0", 1 },               /* nop with n */
        { ".insn 0x00000002, 0, 0, 1", 1 },            /* halt with w3 */
        { ".insn 0x00010021, 0, 0, 0x00080000", 1 },   /* matmul w3[19] */
        { ".insn 0x00010020, 0, 0, 0", 1 },            /* lw with n */
        { ".insn 0x00000020, 0x10000, 0, 0", 1 },      /* lw w1[16] */
        { ".insn 0x00000220, 0, 0, 0", 1 },            /* lw flags[1] */
        { ".insn 0x00000320, 0, 0, 0", 1 },            /* lw flags[1] with transpose */
        { ".insn 0x00008020, 0, 0, 0", 1 },            /* lw flags[7] */
        { ".insn 0x00010120, 0, 0, 0", 1 },            /* lw transpose with n */
        { ".insn 0x00011021, 0, 0, 0", 1 },            /* matmul flags[4] */
        { ".insn 0x00010321, 0, 0, 0", 1 },            /* matmul acc_first and flags[0] */
        { ".insn 0x00010C21, 0, 0, 0", 0 },            /* matmul acc_first 6: level 5 */
        { ".insn 0x00010E21, 0, 0, 0", 1 },            /* matmul acc_first 7: no level 6 */
        { ".insn 0x00010603, 1, 1, 0", 1 },            /* loop level 6 */
        { ".insn 0x00010703, 1, 1, 0", 1 },            /* loop level 7 */
        { ".insn 0x00010803, 1, 1, 0", 1 },            /* loop flags[3] */
        { ".insn 0x00010503, 1, 1, 0", 0 },            /* loop level 5 */
        { ".insn 0x00000904, 1, 2, 3", 0 },            /* stride x1 l3=1 l4=2 l5=3 */
        /* the modulus form (docs/isa.md "Loops"): k 0 .. 16; 17 .. 31 and the other bits of
           w1, w2, w3, n, flags[3] reserved (code 1); x0 code 3 as the other forms */
        { "stride x1 mod=65536", 0 }, { "stride x1 mod=0", 0 }, { "stride x15 mod=2", 0 },
        { ".insn 0x00002104, 16, 0, 0", 0 },           /* k = 16 */
        { ".insn 0x00002104, 17, 0, 0", 1 },           /* k = 17: reserved */
        { ".insn 0x00002104, 31, 0, 0", 1 },           /* k = 31: reserved */
        { ".insn 0x00002104, 0x20, 0, 0", 1 },         /* w1[5] */
        { ".insn 0x00002104, 0x80000004, 0, 0", 1 },   /* w1[31] */
        { ".insn 0x00002104, 4, 2, 0", 1 },            /* w2 */
        { ".insn 0x00002104, 4, 0, 3", 1 },            /* w3 */
        { ".insn 0x00012104, 4, 0, 0", 1 },            /* n */
        { ".insn 0x00002904, 4, 0, 0", 1 },            /* flags[3] */
        { ".insn 0x00006104, 4, 0, 0", 1 },            /* flags[6] */
        { ".insn 0x00002004, 4, 0, 0", 3 },            /* x0 */
        { "stride x0 mod=4", 3 },
        { ".insn 0x00004104, 4, 0, 0", 1 },            /* flags[6], not the modulus form */
        { ".insn 0x00010021, 0, 0x10000, 0", 1 },      /* matmul w2[16] */
        { ".insn 0x00010021, 0, 0, 1", 1 },            /* matmul w3 */
        { ".insn 0x00012630, 0, 0, 0", 1 },            /* relu with b mem (flags[5]) */
        { ".insn 0x00018630, 0, 0, 0", 1 },            /* relu with bcast */
        { ".insn 0x00010630, 0x10000, 0, 0", 1 },      /* relu with b row */
        { ".insn 0x00010030, 0, 0x10000, 0", 1 },      /* vop w2[16] */
        { ".insn 0x00011531, 0, 0, 1", 1 },            /* vred flags[2] */
        { ".insn 0x00013131, 0, 0, 1", 1 },            /* vred flags[5] */
        { ".insn 0x00011131, 0, 0, 0x10001", 1 },      /* vred w3[16] */
        { ".insn 0x00011132, 0, 0, 1", 1 },            /* softmax flags[0] */
        { ".insn 0x00010240, 0, 1, 0", 1 },            /* send flags[1] */
        { ".insn 0x00010041, 0x10000, 1, 0", 1 },      /* recv w1[16] */
        { ".insn 0x00010042, 0, 0x40, 0", 1 },         /* bcast w2[6] */
        { ".insn 0x00010040, 0, 1, 1", 1 },            /* send w3 */
        { ".insn 0x00010043, 0, 0, 0", 1 },            /* barrier with n */
        { ".insn 0x00000143, 0, 0, 0", 1 },            /* barrier with a flag */
        { ".insn 0x00000043, 0, 1, 0", 1 },            /* barrier w2 */
        { ".insn 0x00010544, 0, 0, 0", 1 },            /* allreduce flags[2] */
        { ".insn 0x00010144, 0, 1, 0", 1 },            /* allreduce w2 */
        { ".insn 0x00010144, 0x10000, 0, 0", 1 },      /* allreduce w1[16] */
        { ".insn 0x00010045, 0, 0, 0", 1 },            /* 0x45 unknown */
        { ".insn 0x0001003f, 0, 0, 0", 1 },            /* 0x3f unknown */
        /* collectives: valid at the edges */
        { "send ub row=99 rows=1 core=63", 0 },
        { "recv acc row=0 rows=50 core=0", 0 },
        { "bcast ub row=0 rows=100 root=5", 0 },
        { "barrier", 0 },
        { "allreduce acc row=49 rows=1 ring", 0 },
        /* collectives: code 3 (n = 0, allreduce on UB) and 2 */
        { "send ub row=0 rows=0 core=1", 3 },
        { "recv acc row=0 rows=0 core=1", 3 },
        { "bcast ub row=0 rows=0 root=0", 3 },
        { "allreduce acc row=0 rows=0", 3 },
        { "allreduce ub row=0 rows=1", 3 },
        { "allreduce ub row=200 rows=1", 3 },          /* 3 before 2 */
        { "send ub row=100 rows=1 core=1", 2 },
        { "recv acc row=1 rows=50 core=1", 2 },
        { "bcast acc row=50 rows=1 root=0", 2 },
        { "allreduce acc row=49 rows=2", 2 },
        /* code 3 */
        { "dma_in ub row=0 rows=0 cols=4 addr=0", 3 },
        { "dma_in ub row=0 rows=1 cols=0 addr=0", 3 },
        { "dma_in ub row=0 rows=1 cols=5 addr=0", 3 },
        { ".insn 0x00010310, 0, 0x00010000, 2", 3 },   /* dma_in mem 3 */
        { ".insn 0x00010311, 0, 0x00010000, 2", 3 },   /* dma_out mem 3 */
        { "dma_out wmem row=0 rows=1 cols=4 addr=0", 3 },
        { "matmul ub=0 acc=0 rows=0", 3 },
        { "vop add a=ub:0 b=ub:0 dst=ub:0 rows=0", 3 },
        { ".insn 0x00010e30, 0, 0, 0", 0 },            /* vop 14 = erf: valid */
        { ".insn 0x00010d30, 0, 0, 0", 0 },            /* vop 13 = rsqrt: valid */
        { ".insn 0x00010f30, 0, 0, 0", 3 },            /* vop 15 */
        { "vred sum src=acc:0 dst=ub:0 rows=0 length=1 chunk_stride=1 row_stride=1", 3 },
        { "vred sum src=acc:0 dst=ub:0 rows=1 length=0 chunk_stride=1 row_stride=1", 3 },
        { ".insn 0x00011031, 0, 0, 1", 3 },            /* vred op 0 */
        { "softmax src=ub:0 dst=ub:0 rows=1 length=1 chunk_stride=1 row_stride=1", 3 },
        { "softmax src=acc:0 dst=ub:0 rows=1 length=0 chunk_stride=1 row_stride=1", 3 },
        /* code 4 */
        { "dma_in ub row=0 rows=1 cols=4 addr=1 stride=8", 4 },
        { "dma_in ub row=0 rows=1 cols=4 addr=2 stride=7", 4 },
        { "dma_in acc row=0 rows=1 cols=4 addr=2 stride=16", 4 },
        { "dma_in acc row=0 rows=1 cols=4 addr=4 stride=6", 4 },
        { "dma_in wmem row=0 rows=1 cols=4 addr=3 stride=8", 4 },
        { "dma_out acc row=0 rows=1 cols=4 addr=0x102 stride=16", 4 },
        { "dma_out ub row=0 rows=1 cols=4 addr=0x100 stride=9", 4 },
        /* code 2 */
        { "dma_in ub row=97 rows=4 cols=4 addr=2 stride=6", 2 },
        { "dma_in acc row=50 rows=1 cols=1 addr=4 stride=4", 2 },
        { "dma_in wmem row=1 rows=32 cols=4 addr=0 stride=8", 2 },
        { "dma_out acc row=1 rows=50 cols=4 addr=0x10 stride=0", 2 },
        { "lw w=29", 2 },
        { "lw w=29 transpose", 2 },
        { "matmul ub=91 acc=40 rows=10", 2 },
        { "matmul ub=90 acc=41 rows=10", 2 },
        { "vop add a=ub:100 b=acc:49 dst=ub:99 rows=1", 2 },
        { "vop add a=ub:99 b=acc:50 dst=ub:99 rows=1", 2 },
        { "vop add a=ub:99 b=acc:49 dst=ub:100 rows=1", 2 },
        { "vop mul a=ub:0 b=acc:50 bcast dst=ub:0 rows=100", 2 },
        { "vop mul a=ub:0 b=acc:1 dst=ub:0 rows=50", 2 },   /* b [1, 51) */
        { "vop exp a=acc:0 dst=acc:1 rows=50", 2 },
        { "vred sum src=acc:36 dst=ub:98 rows=5 length=9 chunk_stride=3 row_stride=2", 2 },
        { "vred sum src=acc:10 dst=ub:99 rows=5 length=9 chunk_stride=3 row_stride=2", 2 },
        { "softmax src=acc:36 dst=ub:85 rows=5 length=9 chunk_stride=3 row_stride=2", 2 },
        { "softmax src=acc:35 dst=ub:86 rows=5 length=9 chunk_stride=3 row_stride=2", 2 },
        /* exact arithmetic: no wrap at 16 or 32 bits */
        { "vred sum src=acc:0 dst=ub:0 rows=65535 length=65535 chunk_stride=65535 "
          "row_stride=65535", 2 },
        { "dma_in ub row=65535 rows=65535 cols=4 addr=0", 2 },
        /* order: 3 before 4 before 2 */
        { "dma_in ub row=99 rows=4 cols=5 addr=1", 3 },
        { "dma_in ub row=99 rows=4 cols=4 addr=1", 4 },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        int c = code_of(t[i].src, &g);
        if (c != t[i].code)
            fail_msg("'%s': code %d, expected %d", t[i].src, c, t[i].code);
    }
    assert_string_equal(tpu_err_name(2), "memory row out of range");
    assert_string_equal(tpu_err_name(99), "unknown error");
    /* code 5 is the caller's: a matmul alone passes the check */
    assert_int_equal(code_of("matmul ub=0 acc=0 rows=1", &g), 0);
    /* code 8 needs the core id and C (tpu_insn_check_board), after codes 1-4 */
    struct { const char *src; unsigned self, cores; int code; } b[] = {
        { "send ub row=0 rows=1 core=1", 0, 2, 0 },
        { "send ub row=0 rows=1 core=2", 0, 2, 8 },       /* id >= C */
        { "send ub row=0 rows=1 core=1", 1, 2, 8 },       /* to itself */
        { "recv acc row=0 rows=1 core=0", 0, 8, 8 },
        { "recv acc row=0 rows=1 core=7", 0, 8, 0 },
        { "recv acc row=0 rows=1 core=8", 3, 8, 8 },
        { "send ub row=0 rows=1 core=0", 0, 1, 8 },       /* C = 1: every send is 8 */
        { "send ub row=0 rows=1 core=1", 0, 1, 8 },
        { "bcast ub row=0 rows=1 root=0", 0, 1, 0 },      /* the root may be the core itself */
        { "bcast ub row=0 rows=1 root=3", 3, 4, 0 },
        { "bcast ub row=0 rows=1 root=4", 0, 4, 8 },
        { "allreduce acc row=0 rows=1", 5, 64, 0 },
        { "barrier", 0, 1, 0 },
        { "send ub row=100 rows=1 core=9", 0, 2, 2 },     /* 2 before 8 */
        { "send ub row=0 rows=0 core=0", 0, 2, 3 },       /* 3 before 8 */
        { ".insn 0x00010240, 0, 0, 0", 0, 2, 1 },         /* 1 before 8 */
    };
    for (size_t i = 0; i < sizeof b / sizeof b[0]; i++) {
        tpu_insn_t *p;
        size_t n;
        char *e;
        assert_int_equal(tpu_asm(b[i].src, "b.s", &p, &n, &e), 0);
        free(e);
        tpu_dinsn_t d;
        tpu_insn_decode(p[0], &d);
        free(p);
        int c = tpu_insn_check_board(&d, &g, b[i].self, b[i].cores);
        if (c != b[i].code)
            fail_msg("'%s' on core %u of %u: code %d, expected %d", b[i].src, b[i].self,
                     b[i].cores, c, b[i].code);
    }
    assert_string_equal(tpu_err_name(8), "bad core id");
}

static int has(const tpu_footprint_t *f, unsigned mem, unsigned w, uint32_t lo, uint32_t hi)
{
    for (unsigned i = 0; i < f->count; i++)
        if (f->r[i].mem == mem && f->r[i].write == w && f->r[i].lo == lo && f->r[i].hi == hi)
            return 1;
    return 0;
}

static tpu_footprint_t fp_of(const char *src, unsigned n)
{
    tpu_insn_t *p;
    size_t c;
    char *e;
    tpu_footprint_t f;
    tpu_dinsn_t d;
    assert_int_equal(tpu_asm(src, "f.s", &p, &c, &e), 0);
    free(e);
    tpu_insn_decode(p[0], &d);
    free(p);
    tpu_insn_footprint(&d, n, &f);
    return f;
}

static void test_footprint(void **state)
{
    (void)state;
    tpu_footprint_t f;
    f = fp_of("matmul ub=3 acc=7 rows=4 accumulate", 4);
    assert_int_equal(f.count, 3);
    assert_true(has(&f, TPU_MEM_UB, 0, 3, 6) && has(&f, TPU_MEM_ACC, 0, 7, 10) &&
                has(&f, TPU_MEM_ACC, 1, 7, 10));
    assert_int_equal(f.ports, TPU_PORT_RD(0) | TPU_PORT_RD(1) | TPU_PORT_WR(1));
    f = fp_of("matmul ub=3 acc=7 rows=4", 4);
    assert_int_equal(f.ports, TPU_PORT_RD(0) | TPU_PORT_WR(1));
    f = fp_of("lw w=8", 4);
    assert_true(f.count == 1 && has(&f, TPU_MEM_WMEM, 0, 8, 11));
    f = fp_of("vop add a=ub:1 b=ub:20 bcast dst=acc:5 rows=3", 4);
    assert_true(has(&f, 0, 0, 1, 3) && has(&f, 0, 0, 20, 20) && has(&f, 1, 1, 5, 7));
    f = fp_of("vred sum src=acc:10 dst=ub:98 rows=5 length=9 chunk_stride=3 row_stride=2", 4);
    assert_true(has(&f, 1, 0, 10, 24) && has(&f, 0, 1, 98, 99));
    f = fp_of("softmax src=acc:10 dst=ub:50 rows=5 length=9 chunk_stride=3 row_stride=2", 4);
    assert_true(has(&f, 1, 0, 10, 24) && has(&f, 1, 1, 10, 24) && has(&f, 0, 1, 50, 64));
    f = fp_of("dma_in wmem row=4 rows=4 cols=4 addr=0", 4);
    assert_true(f.count == 1 && has(&f, 2, 1, 4, 7));
    tpu_footprint_t a = fp_of("dma_in ub row=0 rows=4 cols=4 addr=0", 4);
    tpu_footprint_t b = fp_of("matmul ub=3 acc=0 rows=1", 4);
    tpu_footprint_t c = fp_of("matmul ub=4 acc=0 rows=1", 4);
    tpu_footprint_t d = fp_of("vop relu a=acc:0 dst=acc:9 rows=1", 4);
    assert_int_equal(tpu_footprint_conflict(&a, &b), 1); /* writes what b reads */
    assert_int_equal(tpu_footprint_conflict(&a, &c), 0);
    assert_int_equal(tpu_footprint_conflict(&c, &d), 1); /* ACC write port shared */
    f = fp_of("nop", 4);
    assert_int_equal(f.count, 0);
    f = fp_of("send acc row=3 rows=2 core=1", 4);
    assert_true(f.count == 1 && has(&f, 1, 0, 3, 4));
    f = fp_of("recv ub row=3 rows=2 core=1", 4);
    assert_true(f.count == 1 && has(&f, 0, 1, 3, 4));
    f = fp_of("allreduce acc row=3 rows=2", 4);
    assert_true(f.count == 2 && has(&f, 1, 0, 3, 4) && has(&f, 1, 1, 3, 4));
    assert_int_equal(fp_of("barrier", 4).count, 0);
    assert_true(tpu_opcode_is_collective(TPU_OP_BARRIER) && !tpu_opcode_is_collective(0x45) &&
                !tpu_opcode_is_collective(TPU_OP_SOFTMAX));
    assert_int_equal(tpu_opcode_unit(TPU_OP_MATMUL), TPU_UNIT_MX);
    assert_int_equal(tpu_opcode_unit(TPU_OP_SYNC), TPU_UNIT_NONE);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_known_encodings), cmocka_unit_test(test_roundtrip_random),
        cmocka_unit_test(test_disasm_roundtrip), cmocka_unit_test(test_loop_forms_roundtrip), cmocka_unit_test(test_check_codes),
        cmocka_unit_test(test_footprint),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
