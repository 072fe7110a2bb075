        stride x1 l0=1 l1=2 l2=3
        stride x1 l3=4
        loop 0 count=2 skip=1 body=9
        loop 1 count=2 skip=1 body=8
        loop 2 count=2 skip=1 body=7
        loop 3 count=2 skip=1 body=6
        nop
        dma_in ub row=x1 rows=1 cols=1 addr=0x1000+x1
        lw w=x1
        vop relu a=ub:x1 dst=ub:x1 rows=1
        sync
        nop
        halt
