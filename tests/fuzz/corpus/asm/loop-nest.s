# loops, strides, labels, registers (valid)
.equ BASE 16
        stride x1 l0=8 l1=-4 l2=0
        stride x2 l3=1
        stride x7 l0=-1
        loop 0 count=3 skip=TOP-. body=END-TOP+1
        loop 1 count=2 skip=2 body=3
TOP:    loop 2 count=1 body=2
        lw w=0+x1 transpose
        matmul ub=BASE+x2 acc=x3 rows=8 accumulate
        loop 3 count=65535 skip=1 body=1
        dma_in ub row=16+x4 rows=2 cols=1 addr=0x1000+x5 stride=0
        vop add a=ub:BASE+4+x3 b=acc:2+x6 bcast dst=acc:0+x7 rows=2
        vred sum src=acc:x1 dst=ub:1+x2 rows=2 length=3 chunk_stride=1 row_stride=1
END:    softmax src=acc:0+x1 dst=acc:x2 rows=1 length=1 chunk_stride=0 row_stride=0
        dma_out acc row=x1 rows=1 cols=1 addr=x2
        allreduce acc row=0+x3 rows=1 ring
        send ub row=x4 rows=1 core=1
L:
        halt
