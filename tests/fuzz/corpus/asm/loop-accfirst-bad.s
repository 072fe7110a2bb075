# malformed acc_mode=first (each line an error)
        matmul ub=0 acc=0 rows=1 acc_mode=first:l4
        matmul ub=0 acc=0 rows=1 acc_mode=first:l
        matmul ub=0 acc=0 rows=1 acc_mode=first:l01
        matmul ub=0 acc=0 rows=1 acc_mode=first:l-1
        matmul ub=0 acc=0 rows=1 acc_mode=first
        matmul ub=0 acc=0 rows=1 acc_mode=First:l0
        matmul ub=0 acc=0 rows=1 acc_mode=first:l0 accumulate
        matmul ub=0 acc=0 rows=1 accumulate acc_mode=first:l1
        matmul ub=0 acc=0 rows=1 acc_mode=first:l2 acc_mode=first:l2
        matmul ub=0 acc=0 rows=1 acc_mode=first:x1
