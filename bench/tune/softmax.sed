s/BLOCK=256, num_warps=4, num_stages=2/BLOCK=256, num_warps=1, num_stages=1/
