# six loop levels, strides of levels 3 .. 5 in one instruction (valid)
        stride x1 l0=32 l1=16 l2=8
        stride x1 l3=4 l4=2 l5=1
        stride x2 l5=-1
        loop 0 count=2 skip=B0-. body=E-B0+1
        loop 1 count=2 skip=B1-. body=E-B1+1
B0:     nop
B1:     loop 2 count=2 skip=1 body=E-B2+1
B2:     loop 3 count=2 skip=2 body=E-B3+1
        loop 4 count=2 skip=1 body=E-B3+1
B3:     loop 5 count=2 skip=1 body=E-B5+1
B5:     vop relu a=ub:0+x1 dst=ub:100+x2 rows=1
E:      matmul ub=100+x2 acc=64+x1 rows=1 acc_mode=first:l5
        loop 6 count=1 body=1
        .insn 0x00020603, 1, 1, 0
        halt
