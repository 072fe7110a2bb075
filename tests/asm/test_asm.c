/* SPDX-License-Identifier: Apache-2.0 */
/* The assembler: syntax (comments, .equ, expressions, defaults, aliases) and every error
   message with its line and column. */
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

/* Assembles a and b, which must both succeed and give the same bits. */
static void same(const char *a, const char *b)
{
    tpu_insn_t *pa, *pb;
    size_t na, nb;
    char *ea, *eb;
    if (tpu_asm(a, "a.s", &pa, &na, &ea))
        fail_msg("%s", ea);
    if (tpu_asm(b, "b.s", &pb, &nb, &eb))
        fail_msg("%s", eb);
    assert_int_equal(na, nb);
    assert_memory_equal(pa, pb, na * sizeof *pa);
    free(pa); free(pb); free(ea); free(eb);
}

static void test_syntax(void **state)
{
    (void)state;
    same("# comment only\n\n   ; another\nnop # trailing\nhalt;x", "nop\nhalt");
    same(".equ BASE 0x100\n.equ ROWS 4\ndma_in ub row=BASE+1 rows=ROWS*2 cols=ROWS addr=BASE*16-2*8",
         "dma_in ub row=257 rows=8 cols=4 addr=4080 stride=8");
    same(".equ A 3\n.equ B A*A+1\nlw w=B-A", "lw w=7");
    same("lw transpose w=3", "lw w=3 transpose");
    same("lw w=3 transpose", ".insn 0x120, 3, 0, 0");
    /* stride defaults to cols times the element size of the memory */
    same("dma_in acc row=0 rows=1 cols=3 addr=0", "dma_in acc row=0 rows=1 cols=3 addr=0 stride=12");
    same("dma_out ub row=0 rows=1 cols=3 addr=0", "dma_out ub row=0 rows=1 cols=3 addr=0 stride=6");
    /* accumulate spellings, key order, tabs and CR LF */
    same("matmul ub=1 acc=2 rows=3 acc", "matmul rows=3 acc=2 ub=1 accumulate");
    same("matmul ub=1 acc=2 rows=3 acc_mode=accumulate\r\n", "matmul\tub=1\tacc=2 rows=3 accumulate");
    same("matmul ub=1 acc=2 rows=3 acc_mode=overwrite", "matmul ub=1 acc=2 rows=3");
    same("vop add bcast a=acc:0 b=ub:1 dst=ub:2 rows=3", "vop add a=acc:0 b=ub:1 bcast dst=ub:2 rows=3");
    same(".insn 1,2,3,4", ".insn 0x1, 0x2, 0x3, 0x4");
    same(".insn 0x30,0 , 2,3", ".insn 48 0 2 3");
    same(".equ K 3\nsend acc rows=2 core=K-1 row=K*2", "send acc row=6 rows=2 core=2");
    same("allreduce acc ring rows=1 row=0", "allreduce acc row=0 rows=1 ring");
    same("barrier # all", ".insn 0x43, 0, 0, 0");
    /* empty program */
    tpu_insn_t *p;
    size_t n;
    char *e;
    assert_int_equal(tpu_asm("# nothing\n", "e.s", &p, &n, &e), 0);
    assert_int_equal(n, 0);
    assert_string_equal(e, "");
    free(p);
    free(e);
    /* cols <= N only with n_mxu */
    assert_int_equal(tpu_asm_n("dma_in ub row=0 rows=1 cols=16 addr=0", "n.s", 16, &p, &n, &e), 0);
    free(p);
    free(e);
}

static void test_errors(void **state)
{
    (void)state;
    struct { unsigned n_mxu; const char *src, *err; } t[] = {
        { 0, "nop\n  foo x", "t.s:2:3: error: unknown mnemonic 'foo', expected nop, sync, halt, "
          "loop, stride, dma_in, dma_out, lw, matmul, vop, vred, softmax, send, recv, bcast, "
          "barrier, allreduce, .equ, .insn or a label NAME:" },
        /* the collectives (docs/board.md "ISA extension") */
        { 0, "send wmem row=0 rows=1 core=1",
          "t.s:1:6: error: bad memory 'wmem' for send, expected ub or acc" },
        { 0, "recv imem row=0 rows=1 core=1",
          "t.s:1:6: error: unknown memory 'imem' for recv, expected ub or acc" },
        { 0, "bcast row=0 rows=1 root=1",
          "t.s:1:7: error: operand after bcast, expected a memory ub or acc first" },
        { 0, "allreduce", "t.s:1:10: error: end of line after allreduce, expected a memory ub "
          "or acc first" },
        { 0, "send ub row=0 rows=1 core=64",
          "t.s:1:27: error: value 64 out of range for 'core', expected 0..63 (a core id)" },
        { 0, "bcast ub row=0 rows=1 root=-1",
          "t.s:1:28: error: value -1 out of range for 'root', expected 0..63 (a core id)" },
        { 0, "recv ub row=0 rows=1", "t.s:1:21: error: end of line without key 'core' for recv, "
          "expected core=<value>" },
        { 0, "send ub row=0 rows=1 core=1 root=1", "t.s:1:29: error: unknown key 'root' for "
          "send, expected one of row, rows, core" },
        { 0, "bcast ub row=0 rows=1 root=1 core=1", "t.s:1:30: error: unknown key 'core' for "
          "bcast, expected one of row, rows, root" },
        { 0, "allreduce acc row=0 rows=1 ring ring",
          "t.s:1:33: error: duplicate flag 'ring', expected it once" },
        { 0, "allreduce acc row=0 rows=1 torus",
          "t.s:1:28: error: unexpected 'torus', expected key=value" },
        { 0, "barrier 1", "t.s:1:9: error: trailing '1', expected end of line (barrier takes no "
          "operands)" },
        { 0, "send ub row=0 rows=65536 core=1",
          "t.s:1:20: error: value 65536 out of range for 'rows', expected 0..65535" },
        { 0, "lw w=1 x=2", "t.s:1:8: error: unknown key 'x' for lw, expected w" },
        { 0, "matmul ub=0 acc=0 rows=1 foo=2", "t.s:1:26: error: unknown key 'foo' for matmul, "
          "expected one of ub, acc, rows, acc_mode" },
        { 0, "lw", "t.s:1:3: error: end of line without key 'w' for lw, expected w=<value>" },
        { 0, "lw w=1 w=2", "t.s:1:8: error: duplicate key 'w', expected each key once" },
        { 0, "lw w=1 transpose transpose",
          "t.s:1:18: error: duplicate flag 'transpose', expected it once" },
        { 0, "lw transpose", "t.s:1:13: error: end of line without key 'w' for lw, expected "
          "w=<value>" },
        { 0, "lw w=1 transposed", "t.s:1:8: error: unexpected 'transposed', expected key=value" },
        { 0, "lw w=1 transpose=1", "t.s:1:8: error: unknown key 'transpose' for lw, expected w" },
        { 0, "matmul ub=0 acc=0 rows=1 transpose",
          "t.s:1:26: error: unexpected 'transpose', expected key=value" },
        { 0, "lw w=65536", "t.s:1:6: error: value 65536 out of range for 'w', expected 0..65535" },
        { 0, "lw w=-1", "t.s:1:6: error: value -1 out of range for 'w', expected 0..65535" },
        { 0, "dma_in ub row=0 rows=1 cols=1 addr=0x100000000",
          "t.s:1:36: error: value 4294967296 out of range for 'addr', expected 0..4294967295" },
        { 4, "dma_in ub row=0 rows=1 cols=5 addr=0",
          "t.s:1:29: error: value 5 out of range for 'cols', expected 1..4 (--mxu 4)" },
        { 4, "dma_in ub row=0 rows=1 cols=0 addr=0",
          "t.s:1:29: error: value 0 out of range for 'cols', expected 1..4 (--mxu 4)" },
        { 0, "lw w=12x", "t.s:1:6: error: bad number '12x', expected a decimal or 0x hex number" },
        /* issue 16 item 2: products are checked before they are formed, never wrapped */
        { 0, "lw w=4294967296*4294967296+7", "t.s:1:6: error: value of "
          "'4294967296*4294967296+7' too large, expected at most 2^48" },
        { 0, "dma_in ub row=0 rows=1 cols=1 addr=65536*65536*65536*65536+0x100",
          "t.s:1:36: error: value of '65536*65536*65536*65536+0x100' too large, expected at "
          "most 2^48" },
        { 0, "lw w=-4294967296*4294967296", "t.s:1:6: error: value of "
          "'-4294967296*4294967296' too large, expected at most 2^48" },
        { 0, "lw w=0x1000000000000*0x1000000000000*0", "t.s:1:6: error: value of "
          "'0x1000000000000*0x1000000000000*0' too large, expected at most 2^48" },
        { 0, "lw w=0xg", "t.s:1:6: error: bad number '0xg', expected a decimal or 0x hex number" },
        { 0, "lw w=$3", "t.s:1:6: error: bad number '$3', expected a decimal or 0x hex number or "
          "a .equ name" },
        { 0, "lw w=X+1", "t.s:1:6: error: unknown name 'X', expected a number, a label or a "
          ".equ name defined above" },
        { 0, "lw w=1+", "t.s:1:8: error: end of '1+', expected a term after the operator" },
        { 0, "lw w=", "t.s:1:6: error: empty value for 'w', expected a value" },
        { 0, "nop 3", "t.s:1:5: error: trailing '3', expected end of line (nop takes no operands)" },
        { 0, "lw w=1 3", "t.s:1:8: error: unexpected '3', expected key=value" },
        { 0, "dma_in row=0", "t.s:1:8: error: operand after dma_in, expected a memory ub, acc or "
          "wmem first" },
        { 0, "dma_in", "t.s:1:7: error: end of line after dma_in, expected a memory ub, acc or wmem "
          "first" },
        { 0, "dma_in imem row=0 rows=1 cols=1 addr=0",
          "t.s:1:8: error: unknown memory 'imem', expected ub, acc or wmem" },
        { 0, "vop foo a=ub:0 dst=ub:0 rows=1", "t.s:1:5: error: unknown vop op 'foo', expected "
          "add, sub, mul, max, min, cvt, relu, exp, tanh, sigmoid, gelu or recip" },
        { 0, "vred avg src=acc:0 dst=ub:0 rows=1 length=1 chunk_stride=1 row_stride=1",
          "t.s:1:6: error: unknown reduction 'avg', expected sum, max or min" },
        { 0, "vop relu a=ub:0 b=ub:1 dst=ub:0 rows=1",
          "t.s:1:17: error: key 'b' for unary op relu, expected no b" },
        { 0, "vop exp a=ub:0 bcast dst=ub:0 rows=1",
          "t.s:1:16: error: flag 'bcast' for unary op exp, expected no bcast" },
        { 0, "vop add a=ub:0 dst=ub:0 rows=1",
          "t.s:1:31: error: end of line without key 'b' for binary op add, expected b=MEM:ROW" },
        { 0, "vop add a=wmem:0 b=ub:0 dst=ub:0 rows=1",
          "t.s:1:11: error: memory 'wmem' for 'a', expected ub or acc" },
        { 0, "vop add a=0 b=ub:0 dst=ub:0 rows=1",
          "t.s:1:11: error: '0' for 'a', expected MEM:ROW with MEM ub or acc" },
        { 0, "vop add a=ub: b=ub:0 dst=ub:0 rows=1",
          "t.s:1:14: error: empty row for 'a', expected a row number" },
        { 0, "matmul ub=0 acc=0 rows=1 acc_mode=maybe",
          "t.s:1:35: error: acc_mode 'maybe', expected accumulate, overwrite or first:l0 .. first:l5" },
        { 0, "matmul ub=0 acc=0 rows=1 acc_mode=first:l6",
          "t.s:1:35: error: acc_mode 'first:l6', expected accumulate, overwrite or first:l0 .. first:l5" },
        { 0, "matmul ub=0 acc=0 rows=1 acc_mode=first:1",
          "t.s:1:35: error: acc_mode 'first:1', expected accumulate, overwrite or first:l0 .. first:l5" },
        { 0, "matmul ub=0 acc=0 rows=1 accumulate acc_mode=first:l1",
          "t.s:1:26: error: flag 'accumulate' and acc_mode=, expected one of them" },
        { 0, "matmul ub=0 acc=0 rows=1 acc acc",
          "t.s:1:30: error: duplicate flag 'acc', expected it once" },
        { 0, "matmul ub=0 acc=0 rows=1 acc acc_mode=overwrite",
          "t.s:1:26: error: flag 'acc' and acc_mode=, expected one of them" },
        { 0, ".equ", "t.s:1:5: error: end of line, expected '.equ NAME value'" },
        { 0, ".equ X 1 2", "t.s:1:10: error: trailing '2', expected end of line after "
          "'.equ NAME value'" },
        { 0, ".equ 9X 1", "t.s:1:6: error: bad name '9X', expected a letter or _ then letters, "
          "digits, _" },
        { 0, ".equ X 1\n.equ X 2", "t.s:2:6: error: duplicate .equ 'X', expected each name "
          "defined once" },
        { 0, ".insn 1,2,3", "t.s:1:12: error: end of line after 3 words, expected 4 words w0, "
          "w1, w2, w3" },
        { 0, ".insn 1,2,3,4,5", "t.s:1:15: error: trailing '5', expected end of line after 4 "
          "words" },
        { 0, ".insn 1,2,3,0x100000000", "t.s:1:13: error: value 4294967296 out of range for "
          "'word', expected 0..4294967295" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        tpu_insn_t *p = (tpu_insn_t *)1;
        size_t n = 99;
        char *e;
        int rc = tpu_asm_n(t[i].src, "t.s", t[i].n_mxu, &p, &n, &e);
        if (rc != 1)
            fail_msg("'%s': %d errors, expected 1:\n%s", t[i].src, rc, e);
        assert_null(p);
        assert_int_equal(n, 0);
        size_t l = strlen(e);
        assert_true(l > 0 && e[l - 1] == '\n');
        e[l - 1] = 0;
        if (strcmp(e, t[i].err))
            fail_msg("'%s':\n got      %s\n expected %s", t[i].src, e, t[i].err);
        free(e);
    }
}

/* docs/isa.md "Loops", "Assembly language": loop, stride, labels, `.` and index registers */
static void test_loop_syntax(void **state)
{
    (void)state;
    /* skip defaults to 1; labels before and after their use; `.` is this instruction */
    same("loop 0 count=3 body=2", "loop 0 count=3 skip=1 body=2");
    same("loop 0 count=3 skip=TOP-. body=END-TOP+1\nnop\nTOP: lw w=0\nEND:\nmatmul ub=0 acc=0 rows=1",
         "loop 0 count=3 skip=2 body=2\nnop\nlw w=0\nmatmul ub=0 acc=0 rows=1");
    same("A: nop\nloop 1 count=2 skip=.-A+3 body=.+1-A", "nop\nloop 1 count=2 skip=4 body=2");
    same("nop\n\n# a label alone on its line names the next instruction\nL:\n\nloop 0 count=1 skip=L+1 body=L",
         "nop\nloop 0 count=1 skip=2 body=1");
    /* strides: a missing key is 0; negative values; l3 alone */
    same("stride x2 l1=-4", "stride x2 l0=0 l1=-4 l2=0");
    same("stride x2 l2=3 l0=1", ".insn 0x204, 1, 0, 3");
    same("stride x5 l3=-1", ".insn 0xd04, 0xffffffff, 0, 0");
    same("stride x5 l5=2 l3=-1", ".insn 0xd04, 0xffffffff, 0, 2");
    same("stride x5 l4=3", "stride x5 l3=0 l4=3 l5=0");
    /* x8 .. x15: a selector's fourth bit (stride flags[4]; dma w2[30], w2[31]; w3 bits 23,
       27, 31) */
    same("stride x13 l1=2", ".insn 0x1504, 0, 2, 0");
    same("dma_in ub row=1+x9 rows=1 cols=1 addr=0x40+x12 stride=0",
         ".insn 0x13010, 0x40, 0xc0010001, 0");
    same("vop add a=ub:0+x8 b=acc:0+x15 dst=acc:1+x10 rows=1",
         ".insn 0x16030, 0, 1, 0xaf800000");
    same("matmul ub=0 acc=0 rows=1 acc_mode=first:l5", ".insn 0x10c21, 0, 0, 0");
    same(".equ S 4\nstride x1 l0=-S*2 l1=S", "stride x1 l0=-8 l1=4 l2=0");
    /* registers: one term of the expression, anywhere in it; x0 is none */
    same(".equ BASE 16\nvop add a=acc:BASE+4+x3 b=ub:x1 dst=acc:x3+BASE+4 rows=1",
         "vop add a=acc:20+x3 b=ub:0+x1 dst=acc:20+x3 rows=1");
    same("lw w=5+x0", "lw w=5");
    same("matmul ub=x1 acc=2*4+x2 rows=1", ".insn 0x10021, 0, 8, 0x2100000");
    same("dma_in ub row=16+x2 rows=1 cols=1 addr=0x10000+x4", ".insn 0x15010, 0x10000, 0x10010, 2");
    same("allreduce acc row=3+x7 rows=1", ".insn 0x10144, 3, 0, 0x700000");
    /* the modulus form: mod=M, M = 2^k (2 .. 65536), or 0 (none); expressions allowed */
    same("stride x3 mod=1024", ".insn 0x2304, 10, 0, 0");
    same("stride x3 mod=0", ".insn 0x2304, 0, 0, 0");
    same("stride x11 mod=65536", ".insn 0x3304, 16, 0, 0");
    same(".equ SLOTS 4\n.equ N 8\nstride x2 mod=SLOTS*N", "stride x2 mod=32");
    same("stride x1 mod=0x10", ".insn 0x2104, 4, 0, 0");
}

/* one error, its message exactly */
static void one_error(const char *src, const char *want)
{
    tpu_insn_t *p = (tpu_insn_t *)1;
    size_t n = 99;
    char *e;
    int rc = tpu_asm(src, "t.s", &p, &n, &e);
    if (rc != 1)
        fail_msg("'%s': %d errors, expected 1:\n%s", src, rc, e);
    assert_null(p);
    assert_int_equal(n, 0);
    size_t l = strlen(e);
    assert_true(l > 0 && e[l - 1] == '\n' && !memchr(e, '\n', l - 1)); /* one line */
    e[l - 1] = 0;
    if (strncmp(e, want, strlen(want)) != 0 || (want[strlen(want) - 1] != ' ' && strcmp(e, want)))
        fail_msg("'%s':\n got      %s\n expected %s", src, e, want);
    free(e);
}

static void test_loop_errors(void **state)
{
    (void)state;
    struct { const char *src, *err; } t[] = {
        { "loop 0 body=1", "t.s:1:14: error: end of line without key 'count' for loop, expected count=<value>" },
        { "nop\nloop 0 count=1", "t.s:2:15: error: end of line without key 'body' for loop, expected body=<value>" },
        { "loop 6 count=1 body=1", "t.s:1:6: error: value 6 out of range for 'level', expected 0..5 (a loop level)" },
        { "loop count=1 body=1", "t.s:1:6: error: operand after loop, expected a loop level 0 .. 5 first" },
        { "loop 0 count=65536 body=1", "t.s:1:14: error: value 65536 out of range for 'count', expected 0..65535" },
        { "loop 0 count=2 skip=.-1 body=1", "t.s:1:21: error: value -1 out of range for 'skip', expected 0..65535" },
        { "nop\nnop\nloop 0 count=1 body=1 skip=END-.", "t.s:3:28: error: unknown name 'END', expected a number, a label or a .equ name defined above" },
        { "stride x16 l0=1", "t.s:1:8: error: unknown register 'x16', expected x1 .. x15" },
        { "stride x08 l0=1", "t.s:1:8: error: unknown register 'x08', expected x1 .. x15" },
        { "stride l0=1", "t.s:1:8: error: operand after stride, expected an index register x1 .. x15 first" },
        { "stride x1 l0=1 l3=2", "t.s:1:16: error: l3 with l0, l1 or l2, expected either l0 .. l2 or l3 .. l5 (one stride instruction each)" },
        { "stride x1 l5=2 l1=1", "t.s:1:11: error: l5 with l0, l1 or l2, expected either l0 .. l2 or l3 .. l5 (one stride instruction each)" },
        { "stride x1", "t.s:1:10: error: end of line without a stride, expected l0= .. l5= or mod=" },
        /* the modulus form: M a power of two 2 .. 65536 or 0; not beside l0 .. l5 */
        { "stride x1 mod=1000", "t.s:1:15: error: modulus 1000 for 'mod', expected 0 (none) or a power of two 2 .. 65536" },
        { "stride x1 mod=1", "t.s:1:15: error: modulus 1 for 'mod', expected 0 (none) or a power of two 2 .. 65536" },
        { "stride x1 mod=131072", "t.s:1:15: error: modulus 131072 for 'mod', expected 0 (none) or a power of two 2 .. 65536" },
        { "stride x1 mod=-4", "t.s:1:15: error: modulus -4 for 'mod', expected 0 (none) or a power of two 2 .. 65536" },
        { "nop\nstride x1 mod=12", "t.s:2:15: error: modulus 12 for 'mod', expected 0 (none) or a power of two 2 .. 65536" },
        { "stride x1 mod=4 l0=2", "t.s:1:17: error: l0 with mod, expected either mod= (the modulus form) or strides l0= .. l5= (one stride instruction each)" },
        { "stride x1 l4=2 mod=4", "t.s:1:11: error: l4 with mod, expected either mod= (the modulus form) or strides l0= .. l5= (one stride instruction each)" },
        { "stride x1 mod=4 mod=8", "t.s:1:17: error: duplicate key 'mod', expected each key once" },
        { "stride x1 mod=x2", "t.s:1:15: error: index register 'x2' in 'x2', expected a number (only address operands take +xR)" },
        { "stride mod=4", "t.s:1:8: error: operand after stride, expected an index register x1 .. x15 first" },
        { "stride x1 l0=2147483648", "t.s:1:14: error: value 2147483648 out of range for 'l0', expected -2147483648..2147483647 (a signed stride)" },
        /* a register on a key that is not an address */
        { "dma_in ub row=0 rows=x1 cols=1 addr=0", "t.s:1:22: error: index register 'x1' in 'x1', expected a number (only address operands take +xR)" },
        { "dma_in ub row=0 rows=1 cols=1 addr=0 stride=x2", "t.s:1:45: error: index register 'x2' in 'x2', expected a number (only address operands take +xR)" },
        { "loop 0 count=x1 body=1", "t.s:1:14: error: index register 'x1' in 'x1', expected a number (only address operands take +xR)" },
        { "vred sum src=acc:0 dst=ub:0 rows=1 length=x1 chunk_stride=0 row_stride=0", "t.s:1:43: error: index register 'x1' in 'x1', expected a number (only address operands take +xR)" },
        { ".equ A x1", "t.s:1:8: error: index register 'x1' in 'x1', expected a number (only address operands take +xR)" },
        /* subtracted, multiplied, two registers */
        { "vop relu a=ub:0-x1 dst=ub:0 rows=1", "t.s:1:17: error: 'x1' in '0-x1', expected the register added once with +" },
        { "lw w=x1*2", "t.s:1:6: error: 'x1' in 'x1*2', expected the register added once with +" },
        { "lw w=x1+x2", "t.s:1:9: error: second index register 'x2' in 'x1+x2', expected one" },
        { "lw w=x1+1+x1", "t.s:1:11: error: second index register 'x1' in 'x1+1+x1', expected one" },
        /* x1 on the right of * or after a unary -: one error at the register (the message calls
           it an unknown name, see the report of issue 29's random testing) */
        { "lw w=2*x1", "t.s:1:8: error: " },
        { "lw w=-x1", "t.s:1:7: error: " },
        /* labels */
        { "nop\nL: nop\nL: nop", "t.s:3:1: error: duplicate label 'L', expected each name defined once" },
        { "nop\n1L: nop", "t.s:2:1: error: bad label '1L', expected a letter or _ then letters, digits, _ (x0 .. x15 are the index registers)" },
        { "x1: nop", "t.s:1:1: error: bad label 'x1', expected a letter or _ then letters, digits, _ (x0 .. x15 are the index registers)" },
        { ".equ x1 4", "t.s:1:6: error: name 'x1' is an index register, expected another name" },
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        one_error(t[i].src, t[i].err);
}

static void test_many_errors(void **state)
{
    (void)state;
    /* every bad line is reported, good lines between them too are checked */
    tpu_insn_t *p;
    size_t n;
    char *e;
    int rc = tpu_asm("bad1\nnop\nlw w=99999\nhalt\nbad2 x\n", "m.s", &p, &n, &e);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(e, "m.s:1:1: error: unknown mnemonic 'bad1'"));
    assert_non_null(strstr(e, "m.s:3:6: error: value 99999"));
    assert_non_null(strstr(e, "m.s:5:1: error: unknown mnemonic 'bad2'"));
    free(e);
    /* a limit on the count */
    size_t len = 200 * 4;
    char *src = malloc(len + 1);
    for (size_t i = 0; i < 200; i++)
        memcpy(src + 4 * i, "bad\n", 4);
    src[len] = 0;
    rc = tpu_asm(src, "l.s", &p, &n, &e);
    assert_true(rc > TPU_ASM_MAX_ERRORS);
    size_t lines = 0;
    for (const char *s = e; *s; s++)
        lines += *s == '\n';
    assert_int_equal(lines, TPU_ASM_MAX_ERRORS + 1);
    assert_non_null(strstr(e, "too many errors, stopping"));
    free(src);
    free(e);
    /* errors may be discarded */
    rc = tpu_asm("bad\n", "d.s", &p, &n, NULL);
    assert_int_equal(rc, 1);
}

/* issue 16 item 2: a NUL byte is an error where it is, not a silent end of the source */
static void test_nul_byte(void **state)
{
    (void)state;
    tpu_insn_t *p;
    size_t n;
    char *e;
    static const char src[] = "nop\nhalt\0nop\nlw w=70000\n";
    int rc = tpu_asm_len(src, sizeof src - 1, "z.s", 0, &p, &n, &e);
    assert_int_equal(rc, 2);
    assert_non_null(strstr(e, "z.s:2:5: error: NUL byte, expected text"));
    assert_non_null(strstr(e, "z.s:3:6: error: value 70000"));
    free(e);
    rc = tpu_asm_len("nop\nhalt", 8, "z.s", 0, &p, &n, &e);
    assert_int_equal(rc, 0);
    assert_int_equal(n, 2);
    free(p);
    free(e);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_syntax),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_loop_syntax),
        cmocka_unit_test(test_loop_errors),
        cmocka_unit_test(test_many_errors),
        cmocka_unit_test(test_nul_byte),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
