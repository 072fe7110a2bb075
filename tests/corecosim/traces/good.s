# the program good.trace pretends to be the trace of (N = 2), for tpu-core-cmp --prog
dma_in ub row=0 rows=2 cols=2 addr=0 stride=4
dma_in wmem row=0 rows=2 cols=2 addr=64 stride=4
loop 0 count=2 body=1
lw w=0+x1
matmul ub=0 acc=0 rows=2
softmax src=acc:7 dst=ub:5 rows=2 length=2 chunk_stride=1 row_stride=1
sync
halt
