"""kagent's evaluation harness: a long-lived worker that loads PyTorch reference
problems, verifies candidate Triton kernels against them and times them.

The Go supervisor (platform/worker) starts ``python3 -m kagent_harness.worker``
and talks to it over JSON lines (see PROTOCOL.md next to this package).

Modules, one concern each:

- ``protocol``     JSON lines over a private copy of stdout; fd 1 points at stderr.
- ``failures``     check failures and the classification of exceptions.
- ``device``       the device (cuda or cpu): sync, memory, timers, default device.
- ``loading``      importing problem.py and candidates, input draws, references.
- ``chunks``       walking large tensors in bounded pieces.
- ``checksum``     keyed bit-exact checksums of tensors (stored draws unchanged?).
- ``flops``        the reference's FLOP count (FlopCounterMode, torch >= 2.1).
- ``static_check`` the AST checker of candidate source (ban list as data;
                   ``static_resolve`` looks its names up on the real modules).
- ``guard``        identity snapshot of what the harness relies on (tamper check).
- ``poison``       NaN-filled allocations and free memory during candidate calls.
- ``launches``     counting Triton kernel launches.
- ``numerics``     output comparison: tolerances, relative L2, bitwise equality.
- ``verify``       the verification checks, in order.
- ``timing``       benchmarking and interleaved A/B comparison.
- ``usertest``     running a kernel dir's test.py in a fresh process.
- ``worker``       the request loop.
"""

HARNESS_VERSION = "0.1.0"
PROTOCOL_VERSION = 1
