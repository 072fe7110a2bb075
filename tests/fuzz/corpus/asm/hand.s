.equ BASE 0x100
.equ ROW 3*4
lw w=BASE+2*ROW-1
.insn 0x20, 0x1234 0 0
vop add a=ub:0 b=acc:1 bcast dst=ub:2 rows=1 # c
; x
matmul ub=0 acc=0 rows=1 acc_mode=accumulate
vred max src=acc:0 dst=ub:0 rows=1 length=2 chunk_stride=1 row_stride=1
softmax src=acc:0 dst=ub:4 rows=1 length=2 chunk_stride=1 row_stride=1
allreduce acc row=0 rows=1 ring
send ub row=0 rows=1 core=1
halt
