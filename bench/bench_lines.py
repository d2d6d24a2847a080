"""Reading `sparsejit bench` JSON lines, shared by the scripts of this folder."""

import json
import sys


def read_records(path, required, program, what):
    """The JSON lines of `path`; SystemExit "<program>: <path>:<line>: ..." naming the first line
    that is not JSON or not an object with every key of `required` (`what`: what such a record
    is, for the message)."""
    records = []
    with open(path) as f:
        for number, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as e:
                sys.exit(f"{program}: {path}:{number}: not JSON ({e.msg})")
            if not isinstance(record, dict) or not set(required) <= record.keys():
                sys.exit(f"{program}: {path}:{number}: not {what} (needs {', '.join(required[:-1])} and {required[-1]})")
            records.append(record)
    return records


# Ops whose vendor call in the bench computes the whole op. SDDMM's does not: cuSPARSE's sampled
# dots skip the scaling by S's values, which the runtime's forced `cusparse` variant adds.
VENDOR_COMPUTES_THE_OP = {"spmm": True, "sddmm": False}


def oracle_ms(record):
    """The fastest choice auto could make for a `bench --variants all` record: its fastest forced
    variant, or the vendor's best algorithm where that call computes the op (the C++ bench's own
    "oracle" since 2026-12-02; earlier SDDMM records also held cuSPARSE's bare call). None when
    nothing was timed."""
    times = [t for t in (record.get("variants") or {}).values() if isinstance(t, (int, float))]
    vendor_best = (record.get("vendor") or {}).get("best")
    if VENDOR_COMPUTES_THE_OP.get(record.get("op"), True) and isinstance(vendor_best, (int, float)):
        times.append(vendor_best)
    return min(times) if times else None
