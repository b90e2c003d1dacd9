s/self.block = 1024/self.block = 128/
s/BLOCK=256, num_warps=4)/BLOCK=256, num_warps=1)/
