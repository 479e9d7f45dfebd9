"""OUT/manifest.jsonl of a batch job: one JSON object per input, in the order of the inputs.

The fields and their formatting are the CLI's (tools/batch_job.cpp): input, output,
status (ok | skipped | error), ms, error; keys sorted, no spaces, one object per line.
"""

import json
import os
import tempfile

MANIFEST_NAME = "manifest.jsonl"


def manifest_path(out_dir):
    return os.path.join(out_dir, MANIFEST_NAME)


def skipped_record(item):
    return {"input": item.input, "output": item.output, "status": "skipped"}


def error_record(item, message):
    return {"input": item.input, "output": item.output, "status": "error", "error": message, "ms": 0.0}


def _line(record):
    return json.dumps(record, sort_keys=True, separators=(",", ":"), ensure_ascii=False) + "\n"


def write_manifest(out_dir, records):
    """Writes the manifest atomically (a temporary file renamed over it)."""
    path = manifest_path(out_dir)
    descriptor, temporary = tempfile.mkstemp(prefix=MANIFEST_NAME + ".tmp.", dir=out_dir)
    try:
        with os.fdopen(descriptor, "w", encoding="utf-8", errors="surrogateescape") as out:
            out.writelines(_line(record) for record in records)
        os.replace(temporary, path)
    except BaseException:
        os.unlink(temporary)
        raise
    return path


def check_writable(out_dir):
    """Creates out_dir; ValueError in one line if that or writing there fails (before any work)."""
    try:
        os.makedirs(out_dir, exist_ok=True)
        with tempfile.NamedTemporaryFile(prefix=MANIFEST_NAME + ".tmp.", dir=out_dir):
            pass
    except OSError as error:
        raise ValueError(f"--out-dir '{out_dir}': cannot write there ({error.strerror})") from None
