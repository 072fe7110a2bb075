# modulo index registers (docs/isa.md "Loops", the modulus form): a ring of WMEM slots
        stride x1 l0=4
        stride x1 mod=16
        stride x2 l0=32
        stride x2 mod=0x100
        stride x3 l0=-3 l1=1
        stride x3 mod=8
        loop 0 count=10 skip=1 body=4
        dma_in wmem row=8+x1 rows=4 cols=4 addr=0x40+x2 stride=8
        lw w=8+x1
        matmul ub=2+x3 acc=0 rows=1
        vop relu a=ub:0+x3 dst=ub:0+x3 rows=1
        stride x1 mod=0
        stride x15 mod=65536
        stride x9 mod=2
        halt
