# matmul acc_mode=first:lL (docs/isa.md "Loops"): overwrite in the first iteration of level
# L and the levels inside it, accumulate in the others; on levels enclosing the matmul, on
# levels inside its own, outside any loop; and the reserved encodings as raw words (error 1)
        stride x1 l0=8 l1=4 l2=2
        stride x1 l3=1
        stride x2 l0=0 l1=1 l2=0
        lw w=0
        matmul ub=0 acc=0 rows=4 acc_mode=first:l0
        matmul ub=0 acc=0 rows=4 acc_mode=first:l3
        loop 0 count=3 skip=1 body=9
        loop 1 count=2 skip=1 body=8
        matmul ub=0+x1 acc=16+x2 rows=2 acc_mode=first:l0
        matmul ub=0 acc=16+x2 rows=2 acc_mode=first:l1
        matmul ub=0 acc=16 rows=2 acc_mode=first:l2
        loop 2 count=2 body=3
        loop 3 count=4 skip=1 body=2
        matmul ub=x1 acc=x2 rows=1 acc_mode=first:l3
        matmul ub=x1 acc=x2 rows=1 acc_mode=first:l2
        matmul ub=8 acc=8 rows=1 acc_mode=accumulate
        matmul ub=8 acc=8 rows=1 acc_mode=overwrite
        .insn 0x00040321, 0, 0, 0
        .insn 0x00040b21, 0, 0, 0
        .insn 0x00040c21, 0, 0, 0
        .insn 0x00040f21, 0, 0, 0
        halt
