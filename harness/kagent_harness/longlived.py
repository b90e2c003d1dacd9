"""A problem's long-lived objects out of the judge's full collections.

The judge collects garbage in full each time it closes runners to make room
for a verification (room.Room._make_room), after an out-of-memory failure and
when a problem is unloaded. The fork server froze its imports before it forked
the judge (forkserver.py), so at first such a collection walks only what the
judge made: about 0.1 ms. Timing the torch.compile baseline adds the compiled
graph, Dynamo's guards and Inductor's module, about 112,000 tracked objects
on the CPU, which then cost 46-54 ms per full collection for as long as the
problem is loaded (``scripts/gc_cost.py``); with a collection or two in every
verification of a large problem that is about a second per 19 variants.

``after_compile`` freezes them: right after the compile baseline is built, when
nothing of a candidate lives in the judge (no kept candidate, no spare, which
is how a run's baselines are timed, before the input kernel is verified), it
collects and moves every live object to the permanent generation
(``gc.freeze``). What is frozen then is the judge's own state and the loaded
problems (draws, references, model, compiled baseline), all of which live
until their problem is unloaded; every candidate's objects come later and
stay in the collector's sight, so memory a dropped candidate held in a
reference cycle is still found. With a candidate alive it does nothing: a
candidate's objects frozen would keep any device memory they hold in a cycle
until the problem's unload.

``thaw`` gives the frozen objects back at unload (``gc.unfreeze`` has no
partial form: the fork server's imports come back too, so that collection
costs 0.1-0.3 s on the CPU once per unload), and ``refreeze_if_idle`` puts what then
lives out of sight again when no candidate is alive (after unloading, or when
the next problem loads). ``KAGENT_FREEZE_BASELINE=0`` turns it off.

``gc.get_objects`` does not list frozen objects: the memory op's ``tensors``
leaves out the problem's frozen tensors and reports ``frozen_objects``.
"""

from __future__ import annotations

import gc
import os

_ours = False  # objects this judge froze (on top of the fork server's) are frozen now
_thawed = False  # the fork server's imports are in the collector's sight


def enabled() -> bool:
    return os.environ.get("KAGENT_FREEZE_BASELINE", "") != "0"


def after_compile(idle: bool) -> bool:
    """Freeze everything alive now, the compile baseline just built with it,
    when ``idle`` (no candidate's objects alive); whether it froze."""
    global _ours, _thawed
    if not enabled() or not idle:
        return False
    gc.collect()
    gc.freeze()
    _ours, _thawed = True, False
    return True


def thaw() -> bool:
    """Before a problem's objects are freed: give every frozen object back to
    the collector when this judge froze some; whether it did."""
    global _ours, _thawed
    if not _ours:
        return False
    gc.unfreeze()
    _ours, _thawed = False, True
    return True


def refreeze_if_idle(idle: bool, problems: bool, collected: bool = False) -> bool:
    """After a thaw: freeze what lives again (the imports, the judge's state,
    ``problems`` still loaded) when ``idle``, collecting first unless the
    caller just ``collected``; whether it did. Only frozen problems need
    thawing again."""
    global _ours, _thawed
    if not _thawed or not idle:
        return False
    if not collected:
        gc.collect()
    gc.freeze()
    _ours, _thawed = problems, False
    return True
