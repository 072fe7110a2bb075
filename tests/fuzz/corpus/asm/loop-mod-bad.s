# the modulus form's errors: not a power of two, 1, too large, beside a stride key, reserved k
        stride x1 mod=1000
        stride x1 mod=1
        stride x1 mod=131072
        stride x1 mod=4 l0=2
        stride x1 l3=2 mod=4
        stride x0 mod=4
        .insn 0x00002104, 17, 0, 0
        .insn 0x00002904, 4, 0, 0
        .insn 0x00002104, 31, 1, 2
        halt
