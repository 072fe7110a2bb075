# docs/isa.md "Loops": a tiled matmul written by hand (N = 4). C = A B, A 8 x 8 in UB
# (K-chunk kt at rows 8 kt ..), B 8 x 12 in WMEM (tile (kt, nt) at rows 4 (2 nt + kt)),
# C 8 x 12 in ACC (N-tile nt at rows 8 nt ..).
.equ NEGZERO 0x100                        # host word 0x80000000
        dma_in acc row=0 rows=24 cols=1 addr=NEGZERO stride=0
        stride x1 l0=8 l1=4               # WMEM: tile (kt, nt) at 4 (2 nt + kt)
        stride x2 l0=8                    # ACC:  N-tile nt at 8 nt
        stride x3 l1=8                    # UB:   K-chunk kt at 8 kt
        loop 0 count=3 skip=NT-. body=END-NT+1   # nt = 0 .. 2
        loop 1 count=2 skip=NT-. body=2          # kt = 0 .. 1 (hoisted: armed once)
NT:     lw w=0+x1
        matmul ub=0+x3 acc=0+x2 rows=8 accumulate
END:    vop relu a=acc:0+x2 dst=acc:0+x2 rows=8
        halt
