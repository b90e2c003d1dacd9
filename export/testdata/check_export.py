"""Checks an export's patch module and KernelBench file (kagent's tests).

usage: check_export.py OUT PKG match|fallback

KAGENT_CHECK_DEVICE (default cpu) is the device the models and inputs are
put on; on a GPU the problem's own size is used, on the CPU its "cpu" size.

match: patch() replaces the problem's Model inside a small model and the
patched model's output matches the unpatched one's (first call verified,
later calls kernel only); unpatch() restores it; the KernelBench ModelNew
matches Model. fallback: the kernel is wrong, so the first call warns and
the original's output is used from then on.
"""

import importlib.util
import os
import sys
import warnings
from pathlib import Path

import torch
from torch import nn

out, pkg, mode = Path(sys.argv[1]), sys.argv[2], sys.argv[3]
sys.path.insert(0, str(out / "patch"))
kp = __import__(f"kagent_patch_{pkg}")
device = os.environ.get("KAGENT_CHECK_DEVICE", "cpu")
size = (kp.KAGENT_CONFIG.get("sizes") or {}).get("cpu", {}) if device == "cpu" else {}
dtype = kp.kagent_dtype()


def draw(module, seed):
    saved = {k: getattr(module, k) for k in size}
    try:
        for k, v in size.items():
            setattr(module, k, v)
        torch.manual_seed(0)
        init = list(module.get_init_inputs())
        torch.manual_seed(seed)
        inputs = list(module.get_inputs())
    finally:
        for k, v in saved.items():
            setattr(module, k, v)
    if dtype is not None:
        inputs = [t.to(dtype) if isinstance(t, torch.Tensor) and t.is_floating_point() else t for t in inputs]
    inputs = [t.to(device) if isinstance(t, torch.Tensor) else t for t in inputs]
    return init, inputs


init, inputs = draw(kp.reference, 1)


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.pre = nn.Identity()
        torch.manual_seed(0)
        self.norm = kp.Model(*init)

    def forward(self, *xs):
        return self.norm(*[self.pre(x) for x in xs])


class Outer(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = Block()

    def forward(self, *xs):
        return self.block(*xs)


model = Outer().to(device)
if dtype is not None:
    model = model.to(dtype)
keys = sorted(model.state_dict())
with torch.no_grad():
    ref = model(*inputs)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    names = kp.patch(model)
if not names:
    # Model keeps an __init__ argument under another name: patch says so
    # and takes init_args.
    assert any("left alone" in str(w.message) for w in caught), [str(w.message) for w in caught]
    names = kp.patch(model, init_args=lambda module: init)
assert names == ["block.norm"], names
assert isinstance(model.block.norm, kp.KernelModule)
assert sorted(model.state_dict()) == keys, (sorted(model.state_dict()), keys)
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    with torch.no_grad():
        first = model(*inputs)
        second = model(*inputs)
mismatch = [w for w in caught if "does not match" in str(w.message)]
if mode == "match":
    assert not mismatch, [str(w.message) for w in caught]
    assert not model.block.norm.kagent_fallback
    for o in (first, second):
        why = kp.kagent_compare(o, ref)
        assert why is None, why
    assert kp.unpatch(model) == ["block.norm"]
    assert type(model.block.norm) is kp.Model
    # The KernelBench file: ModelNew matches Model.
    spec = importlib.util.spec_from_file_location(f"kb_{pkg}", out / "kernelbench" / f"{pkg}.py")
    kb = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = kb
    spec.loader.exec_module(kb)
    kinit, kinputs = draw(kb, 2)
    torch.manual_seed(0)
    m = kb.Model(*kinit).to(device)
    mn = kb.ModelNew(*kinit).to(device)
    mn.load_state_dict(m.state_dict())
    if dtype is not None:
        m, mn = m.to(dtype), mn.to(dtype)
    with torch.no_grad():
        why = kp.kagent_compare(mn(*[t.clone() for t in kinputs]), m(*kinputs))
    assert why is None, "kernelbench: " + why
else:
    assert mismatch, [str(w.message) for w in caught]
    assert model.block.norm.kagent_fallback
    for o in (first, second):
        assert kp.kagent_compare(o, ref) is None
print("ok", mode)
