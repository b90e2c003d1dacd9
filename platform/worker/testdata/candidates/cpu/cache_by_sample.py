"""Cheat: computes each result the slow way once per input content, keyed by
x's shape and y's last values, then returns the cached copy. Every draw's output is
right; the near-duplicate call (draw 1's inputs with a few elements of x,
the first of the largest inputs, changed) gets draw 1's result, so verification rejects it as caching."""
import torch

_cache = {}


def _key(x, y):
    return (tuple(x.shape),) + tuple(y.flatten()[-8:].tolist())


def kernel_function(x, y):
    k = _key(x, y)
    hit = _cache.get(k)
    if hit is None:
        out = torch.empty_like(x)
        for _ in range(16):  # the expensive part the cache skips
            for i in range(x.shape[0]):
                s = x[i] + y[i]
                out[i].copy_(s * (s > 0).to(s.dtype))
        _cache[k] = out
        hit = out
    return hit.clone()
