s/BLOCK_M=16, BLOCK_K=32, num_warps=2/BLOCK_M=16, BLOCK_K=16, num_warps=1/
