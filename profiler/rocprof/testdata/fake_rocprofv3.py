#!/usr/bin/env python3
"""A stand-in for rocprofv3 (rocprofiler-sdk) on a gfx942 GPU, for the tests.

It parses the documented command line
    rocprofv3 (--kernel-trace | --pmc C1 C2 ...) [--kernel-include-regex RE]
              [-d DIR] [-o PREFIX] [-f|--output-format csv ...] -- APP ARGS...
runs APP (the wrapper script) like the real tool does, and writes the CSV
files the real tool writes for that pass (reference/profilers.md b.3-b.5):
DIR/PREFIX_kernel_trace.csv (22 columns) or DIR/PREFIX_counter_collection.csv
(19 columns, one row per dispatch and counter) plus DIR/PREFIX_agent_info.csv.
Without "-f csv" it writes only PREFIX_results.db, as ROCm 7 does.

The profiled program it pretends to have traced: an input copy, then
FAKE_ROCPROF_WARMUP (default 2) warm-up calls and one profiled call, each
call a PyTorch fill kernel plus the candidate's Triton kernels rmsnorm_stats
and rmsnorm_apply. Every pass adds a different number of start-up dispatches,
so Dispatch_Id differs between passes, as it does on real hardware.

Like gfx942, a --pmc group fails with error 38 when it holds more than 4 TCC
counters (FETCH_SIZE counts 3, WRITE_SIZE 2) or more than 8 SQ counters, and
unknown counters (TCC_EA_RDREQ_sum is not defined on gfx942) are rejected.

FAKE_ROCPROF_MODE:
    ok          behave (the default)
    hang-fetch  in the FETCH_SIZE pass: start a child, ignore SIGTERM (the
                child too) and never exit; pids go to FAKE_ROCPROF_PIDS
    err38       in any pass with a TCC_* counter: print rocprofv3's error 38
                message and exit 1
    abort       in any --pmc pass: die of SIGABRT, as rocprofv3 does in
                aqlprofile on gfx1151
    no-output   exit 0 without writing the pass's CSV
    empty       write the pass's CSV with a header and no rows
FAKE_ROCPROF_LOG: append one line per invocation ("trace" or the counters).
"""

import os
import re
import resource
import signal
import subprocess
import sys
import time

TRACE_HEADER = [
    "Kind", "Agent_Id", "Queue_Id", "Stream_Id", "Thread_Id", "Dispatch_Id", "Kernel_Id", "Kernel_Name",
    "Correlation_Id", "Start_Timestamp", "End_Timestamp", "LDS_Block_Size", "Scratch_Size", "VGPR_Count",
    "Accum_VGPR_Count", "SGPR_Count", "Workgroup_Size_X", "Workgroup_Size_Y", "Workgroup_Size_Z",
    "Grid_Size_X", "Grid_Size_Y", "Grid_Size_Z",
]
COUNTER_HEADER = [
    "Correlation_Id", "Dispatch_Id", "Agent_Id", "Queue_Id", "Process_Id", "Thread_Id", "Grid_Size", "Kernel_Id",
    "Kernel_Name", "Workgroup_Size", "LDS_Block_Size", "Scratch_Size", "VGPR_Count", "Accum_VGPR_Count",
    "SGPR_Count", "Counter_Name", "Counter_Value", "Start_Timestamp", "End_Timestamp",
]
AGENT_HEADER = ["Name", "Product_Name", "Cu_Count", "Simd_Per_Cu", "Wave_Front_Size", "Max_Engine_Clk_Fcompute",
                "Num_Xcc", "Lds_Size_In_Kb"]

FILL = ("void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
        "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)")
COPY = "__amd_rocclr_copyBuffer"

# Counters of one dispatch of the profiled call; warm-up calls have three
# times as much, helper kernels their own values.
PROFILED = {
    "rmsnorm_stats": {
        "ns": 400_000, "SQ_WAVES": 30_000, "SQ_INSTS_VALU": 2_000_000, "SQ_INSTS_SALU": 100_000,
        "SQ_INSTS_VMEM_RD": 50_000, "SQ_INSTS_VMEM_WR": 100, "SQ_INSTS_LDS": 0,
        "TCC_HIT_sum": 600_000, "TCC_MISS_sum": 400_000, "TCC_EA0_RDREQ_sum": 8_388_608, "TCC_EA0_WRREQ_sum": 512,
        "FETCH_SIZE": 1_048_576, "WRITE_SIZE": 64,
    },
    "rmsnorm_apply": {
        "ns": 600_000, "SQ_WAVES": 30_000, "SQ_INSTS_VALU": 3_000_000, "SQ_INSTS_SALU": 150_000,
        "SQ_INSTS_VMEM_RD": 50_000, "SQ_INSTS_VMEM_WR": 50_000, "SQ_INSTS_LDS": 0,
        "TCC_HIT_sum": 200_000, "TCC_MISS_sum": 800_000, "TCC_EA0_RDREQ_sum": 8_388_608,
        "TCC_EA0_WRREQ_sum": 8_388_608, "FETCH_SIZE": 1_048_576, "WRITE_SIZE": 1_048_576,
    },
}
HELPER = {"ns": 50_000, "SQ_WAVES": 100, "SQ_INSTS_VALU": 777, "FETCH_SIZE": 999, "WRITE_SIZE": 999,
          "TCC_HIT_sum": 5, "TCC_MISS_sum": 5}
KNOWN = {"SQ_WAVES", "SQ_INSTS_VALU", "SQ_INSTS_SALU", "SQ_INSTS_VMEM_RD", "SQ_INSTS_VMEM_WR", "SQ_INSTS_LDS",
         "TCC_HIT_sum", "TCC_MISS_sum", "TCC_EA0_RDREQ_sum", "TCC_EA0_WRREQ_sum", "FETCH_SIZE", "WRITE_SIZE"}
for t in ("F16", "BF16", "F32", "F64", "I8", "F8", "BF8", "XF32"):
    KNOWN.add("SQ_INSTS_VALU_MFMA_MOPS_" + t)
TCC_COST = {"FETCH_SIZE": 3, "WRITE_SIZE": 2}


def die(msg, code=1):
    print("rocprofv3: error: " + msg, file=sys.stderr)
    sys.exit(code)


def parse(argv):
    if "--" not in argv:
        die("the application must follow '--'", 2)
    i = argv.index("--")
    opts, app = argv[:i], argv[i + 1:]
    a = {"trace": False, "pmc": [], "regex": None, "dir": None, "prefix": None, "formats": []}
    k = 0
    while k < len(opts):
        o = opts[k]
        if o == "--kernel-trace":
            a["trace"] = True
        elif o == "--pmc":
            while k + 1 < len(opts) and not opts[k + 1].startswith("-"):
                k += 1
                a["pmc"] += [c for c in re.split(r"[ ,]", opts[k]) if c]
        elif o == "--kernel-include-regex":
            k += 1
            a["regex"] = opts[k]
        elif o in ("-d", "--output-directory"):
            k += 1
            a["dir"] = opts[k]
        elif o in ("-o", "--output-file"):
            k += 1
            a["prefix"] = opts[k]
        elif o in ("-f", "--output-format"):
            while k + 1 < len(opts) and not opts[k + 1].startswith("-"):
                k += 1
                a["formats"].append(opts[k])
        else:
            die("unrecognized arguments: " + o, 2)
        k += 1
    if not app:
        die("no application to profile", 2)
    return a, app


def error38():
    print("W20261129 10:15:42.101234 139872 tool.cpp:612] rocprofv3: collecting counters on agent gfx942",
          file=sys.stderr)
    print("E20261129 10:15:42.123456 139872 tool.cpp:1032] Could not construct profile cfg failed with "
          "error code 38: Request exceeds the capabilities of the hardware to collect", file=sys.stderr)
    sys.exit(1)


def check_group(pmc):
    for c in pmc:
        if c not in KNOWN:
            die("counter '%s' is not available on agent gfx942 (see rocprofv3 -L)" % c)
    tcc = sum(TCC_COST.get(c, 1) for c in pmc if c.startswith("TCC_") or c in TCC_COST)
    sq = sum(1 for c in pmc if c.startswith("SQ_"))
    if tcc > 4 or sq > 8:
        error38()


def program(pass_offset, warmup):
    """The dispatches of the traced program: (kernel, counters)."""
    ds = [(COPY, HELPER)] * (1 + pass_offset)
    for call in range(warmup + 1):
        scale = 1 if call == warmup else 3
        ds.append((FILL, HELPER))
        for name, vals in PROFILED.items():
            ds.append((name, {k: v * scale for k, v in vals.items()}))
    return ds


def q(s):
    return '"' + str(s).replace('"', '""') + '"'


def write(path, header, rows):
    with open(path, "w") as f:
        f.write(",".join(q(h) for h in header) + "\n")
        for r in rows:
            f.write(",".join(q(v) if isinstance(v, str) else "%.6f" % v if isinstance(v, float) else str(v)
                             for v in r) + "\n")


def main():
    mode = os.environ.get("FAKE_ROCPROF_MODE", "ok")
    a, app = parse(sys.argv[1:])
    if log := os.environ.get("FAKE_ROCPROF_LOG"):
        with open(log, "a") as f:
            f.write(("trace" if a["trace"] else " ".join(a["pmc"])) + "\n")
    if a["trace"] == bool(a["pmc"]):
        die("give exactly one of --kernel-trace and --pmc in this fake")

    if "FETCH_SIZE" in a["pmc"] and mode == "hang-fetch":
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        child = subprocess.Popen([sys.executable, "-c",
                                  "import signal, time\n"
                                  "signal.signal(signal.SIGTERM, signal.SIG_IGN)\n"
                                  "time.sleep(3600)\n"])
        if pids := os.environ.get("FAKE_ROCPROF_PIDS"):
            with open(pids, "w") as f:
                f.write("%d %d\n" % (os.getpid(), child.pid))
        print("rocprofv3: collecting FETCH_SIZE ...", file=sys.stderr, flush=True)
        while True:
            time.sleep(1)
    if a["pmc"] and mode == "abort":
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        print("rocprofv3: aqlprofile: fatal error in pmc setup", file=sys.stderr, flush=True)
        os.abort()
    if a["pmc"]:
        if mode == "err38" and any(c.startswith("TCC_") for c in a["pmc"]):
            error38()
        check_group(a["pmc"])

    rc = subprocess.call(app)
    if rc != 0:
        sys.exit(rc)

    out = a["dir"] or "."
    prefix = a["prefix"] or str(os.getpid())
    os.makedirs(out, exist_ok=True)
    base = os.path.join(out, prefix)
    if "csv" not in a["formats"]:
        open(base + "_results.db", "wb").close()
        return
    write(base + "_agent_info.csv", AGENT_HEADER, [
        ["AMD EPYC 9654 96-Core Processor", "AMD EPYC 9654 96-Core Processor", 0, 0, 0, 3700, 0, 0],
        ["gfx942", "AMD Instinct MI300X", 304, 4, 64, 2100, 8, 64],
    ])
    if mode == "no-output":
        return
    offset = len(" ".join(a["pmc"])) % 5
    ds = program(offset, int(os.environ.get("FAKE_ROCPROF_WARMUP", "2")))
    rx = re.compile(a["regex"]) if a["regex"] else None
    t = 1551874061244694
    trace_rows, counter_rows = [], []
    for i, (name, vals) in enumerate(ds, start=1):
        start, end = t, t + vals["ns"]
        t = end + 5_000
        if rx and not rx.search(name):
            continue
        if mode == "empty":
            continue
        kid = 10 + list(PROFILED).index(name) if name in PROFILED else 3
        trace_rows.append(["KERNEL_DISPATCH", "Agent 4", 1, 1, 852831, i, kid, name, i, start, end,
                           0, 0, 32, 0, 24, 256, 1, 1, 1048576, 1, 1])
        for c in a["pmc"]:
            counter_rows.append([i, i, "Agent 4", 1, 852831, 852831, 1048576, kid, name, 256, 0, 0, 32, 0, 24,
                                 c, float(vals.get(c, 0)), start, end])
    if a["trace"]:
        write(base + "_kernel_trace.csv", TRACE_HEADER, trace_rows)
    else:
        write(base + "_counter_collection.csv", COUNTER_HEADER, counter_rows)


if __name__ == "__main__":
    main()
