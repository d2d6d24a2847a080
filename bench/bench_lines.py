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
