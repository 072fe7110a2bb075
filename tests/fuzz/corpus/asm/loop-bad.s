# malformed loop syntax (each line an error)
        loop 4 count=1 body=1
        loop 0 body=1
        loop 0 count=1
        loop 0 count=1 body=1 skip=0 skip=1
        stride x8 l0=1
        stride x1 l0=1 l3=2
        stride l0=1
        vop add a=ub:x1+x2 b=ub:0 dst=ub:0 rows=1
        vop relu a=ub:0-x1 dst=ub:0 rows=x1
        lw w=2*x1
        matmul ub=x1*2 acc=-x2 rows=1
        dma_in ub row=0 rows=1 cols=1 addr=0 stride=x1
.equ x1 4
.equ A 1
A:
1L:     nop
L: L:   nop
x3:     nop
        loop 0 count=0 body=1 skip=.-1
        loop 3 count=65536 body=65536 skip=-1
