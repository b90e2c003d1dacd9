_ALL_CHECKS = ["static", "import", "entry", "tamper", "correctness", "unwritten_output", "precision",
               "input_mutation", "determinism", "triton_launch", "extra_shapes", "caching", "user_test"]


def fake_reply_lines(first_id=1, last_id=12, ms=0.001):
    """Protocol replies for the ids the supervisor will wait on (hello is 0,
    load_problem 1, verify 2, then bench kernel/eager/compile): each result
    reads as a passing verdict and as a fast timing."""
    result = {
        "passed": True, "failure": "", "reason": "", "fatal": False, "max_abs_err": 0.0, "rel_l2": 0.0,
        "launches": 1, "tf32": "forbid", "entry": "kernel_function",
        "checks": [{"name": n, "passed": True, "skipped": False, "reason": "ok"} for n in _ALL_CHECKS],
        "median_ms": ms, "p20_ms": ms, "p80_ms": ms, "mean_ms": ms, "cv": 0.0, "n": 10, "times_ms": [ms] * 10,
        "method": "events", "representative": False, "estimate_ms": ms, "warmup_calls": 1, "sets": 1,
        "host_median_ms": 0.0, "recheck": {"passed": True, "checked": 10, "reason": "ok"}, "host_check": None,
        "unseen_inputs": {"passed": True, "times_ms": [ms], "median_ms": ms, "limit_ms": 1.0},
    }
    lines = []
    for i in range(first_id, last_id + 1):
        lines.append(json.dumps({"id": i, "ok": True, "result": result}) + "\n")
    return lines


def reply_fd():
    """The worker's private reply pipe: the lowest-numbered pipe that is not
    fd 1/2's (the protocol dups stdout before stdin)."""
    err = os.readlink("/proc/self/fd/2")
    fds = sorted(int(n) for n in os.listdir("/proc/self/fd"))
    for fd in fds:
        if fd <= 2:
            continue
        try:
            link = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if link.startswith("pipe:") and link != err:
            return fd
    return -1
