"""Oracle for Gleaner's submit language: the job ads HTCondor's own submit code
(`SubmitHash::make_job_ad`, inside PyPI `htcondor`'s `htcondor2` module) makes from a
submit file, without a schedd.

`htcondor2.Submit.jobs()` is not implemented in htcondor 25.x, so this calls the
`SubmitBlob` the `Submit` object wraps through ctypes, as `Schedd.submit()` does:
`init_base_ad`, then `make_job_ad` once per proc, with the queue statement's items
from `Submit.itemdata()`. `htcondor2.Submit` stops at the first `queue`; a file with
several is read as condor_submit reads it: the k-th cluster of procs from the text up
to the k-th `queue`, the earlier `queue` statements (and their item lists) left out.

stdin: {"file": PATH, "defines": ["KEY=VALUE", ...], "queue": ARGS or null,
        "cluster": N, "qdate": T, "owner": NAME}, or a JSON list of them
        (the file is read from its own directory, as condor_submit reads it there,
        with $(SUBMIT_FILE) its absolute path; `defines` come before its first line
        and `queue` is appended, as `condor_submit KEY=VALUE -queue ARGS FILE` does)
stdout: {"procs": [{ATTR: "expression as HTCondor unparses it", ...}, ...]}
        or {"error": "what HTCondor's submit code said"}; for a list, a list of them
Exit 3 when htcondor2 cannot be imported or its submit code cannot be reached.
"""
import ctypes
import json
import os
import re
import sys

try:
    import classad2
    import htcondor2
    import htcondor2.htcondor2_impl as impl
except ImportError as e:
    print(f"cannot import htcondor2: {e}", file=sys.stderr)
    sys.exit(3)


def bind():
    lib = ctypes.PyDLL(impl.__file__)

    def fn(name, res, args):
        f = getattr(lib, name)
        f.restype = res
        f.argtypes = args
        return f

    p = ctypes.c_void_p
    return {
        "handle": fn("_Z15get_handle_fromP7_object", p, [ctypes.py_object]),
        "init_base_ad": fn("_ZN10SubmitBlob12init_base_adElPKc", ctypes.c_int,
                           [p, ctypes.c_long, ctypes.c_char_p]),
        "make_job_ad": fn(
            "_ZN10SubmitBlob11make_job_adE10JOB_ID_KEYiibbPFiPvP10SubmitHash17_submit_file_rolePKciES1_",
            p, [p, ctypes.c_uint64, ctypes.c_int, ctypes.c_int, ctypes.c_bool, ctypes.c_bool, p, p]),
        "no_file_checks": fn("_ZN10SubmitBlob20setDisableFileChecksEb", None, [p, ctypes.c_bool]),
        "set_param": fn("_ZN10SubmitBlob16set_submit_paramEPKcS1_", None,
                        [p, ctypes.c_char_p, ctypes.c_char_p]),
        "queue_count": fn("_ZNK10SubmitBlob19queueStatementCountEv", ctypes.c_int, [p]),
        "error_stack": fn("_ZNK10SubmitBlob11error_stackEv", p, [p]),
        "new_ad": fn("_Z23py_new_classad2_classadPv", ctypes.py_object, [p]),
        "copy": getattr(ctypes.CDLL(classad_lib()), "_ZNK7classad7ClassAd4CopyEv"),
        "parent": getattr(ctypes.CDLL(classad_lib()), "_ZN7classad7ClassAd18GetChainedParentAdEv"),
        "err_message": getattr(ctypes.CDLL(utils_lib()), "_ZNK11CondorError7messageEi"),
    }


def lib_named(prefix):
    d = os.path.join(os.path.dirname(os.path.dirname(htcondor2.__file__)), "htcondor.libs")
    for n in os.listdir(d):
        if n.startswith(prefix):
            return os.path.join(d, n)
    raise ImportError(f"no {prefix}* in {d}")


def classad_lib():
    return lib_named("libclassad-")


def utils_lib():
    return lib_named("libcondor_utils")


def blob(api, submit):
    # The handle object holds the SubmitBlob pointer right after PyObject_HEAD.
    h = api["handle"](submit)
    return ctypes.c_void_p.from_address(h + 2 * ctypes.sizeof(ctypes.c_void_p)).value


def errors(api, sb):
    stack = api["error_stack"](sb)
    out = []
    if stack:
        api["err_message"].restype = ctypes.c_char_p
        api["err_message"].argtypes = [ctypes.c_void_p, ctypes.c_int]
        for level in range(16):
            m = api["err_message"](stack, level)
            if not m:
                break
            out.append(m.decode(errors="replace").strip())
    return "; ".join(out) or "HTCondor's submit code refused the file"


def as_dict(api, ptr):
    """The attributes of the ClassAd at `ptr` (a copy, owned by Python)."""
    api["copy"].restype = ctypes.c_void_p
    api["copy"].argtypes = [ctypes.c_void_p]
    ad = api["new_ad"](api["copy"](ptr))
    return {k: str(ad.lookup(k)) for k in ad.keys()}


QUEUE = re.compile(r"^\s*queue(\s|$)", re.IGNORECASE)


def split_at_queues(text):
    """The text before each top-level `queue` statement and the statement itself
    (with its item list when that spans lines)."""
    lines = text.splitlines(keepends=True)
    pieces, before, i = [], [], 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not QUEUE.match(line):
            before.append(line)
            continue
        stmt = [line]
        if "(" in line and ")" not in line.split("(", 1)[1]:
            while i < len(lines):
                stmt.append(lines[i])
                i += 1
                if lines[i - 1].lstrip().startswith(")"):
                    break
        pieces.append(("".join(before), "".join(stmt)))
    return pieces


def run_one(api, req):
    """HTCondor's ads for one request (see the module's doc)."""
    path = os.path.abspath(req["file"])
    os.chdir(os.path.dirname(path))
    text = open(path, encoding="utf-8").read()
    if req.get("queue") is not None:
        text += "\nqueue " + req["queue"] + "\n"
    # condor_submit's $(SUBMIT_FILE) (a default the file may override).
    defines = "SUBMIT_FILE = " + path + "\n"
    defines += "".join(d + "\n" for d in req.get("defines", []))
    procs = []
    pieces = split_at_queues(text)
    if not pieces:
        return {"error": "no queue statement"}
    api["parent"].restype = ctypes.c_void_p
    api["parent"].argtypes = [ctypes.c_void_p]
    for k in range(len(pieces)):
        # Everything before the k-th queue, earlier queue statements left out.
        body = defines + "".join(b for b, _ in pieces[: k + 1]) + pieces[k][1]
        try:
            s = htcondor2.Submit(body)
        except Exception as e:  # the parser's own refusal
            return {"error": str(e)}
        # Kept alive: the ads make_job_ad returns belong to it.
        KEEP.append(s)
        sb = blob(api, s)
        api["no_file_checks"](sb, True)
        if api["init_base_ad"](sb, int(req.get("qdate", 0)), req.get("owner", "alice").encode()) != 0:
            return {"error": errors(api, sb)}
        count = api["queue_count"](sb)
        if count < 0:
            return {"error": "invalid queue statement"}
        try:
            items = s.itemdata()
        except Exception as e:
            return {"error": f"queue items: {e}"}
        items = [None] if items is None else list(items)
        # The slice of the queue statement (itemdata() gives every item).
        chosen = range(len(items))
        m = re.search(r"\s(?:in|from|matching)\s+(?:files\s+|dirs\s+|any\s+)?\[([^\]]*)\]",
                      " " + s.getQArgs(), re.IGNORECASE)
        if m and items != [None]:
            parts = [int(p) if p.strip() else None for p in m.group(1).split(":")]
            parts += [None] * (3 - len(parts))
            chosen = range(len(items))[slice(*parts)]
        for index, item in enumerate(items):
            if index not in chosen:
                continue
            # Set as condor_submit's queue loop sets them.
            if isinstance(item, dict):
                for var, value in item.items():
                    api["set_param"](sb, var.encode(), value.encode())
            elif item is not None:
                api["set_param"](sb, b"Item", item.encode())
            for step in range(count):
                proc = len(procs)
                jid = (int(req.get("cluster", 1)) & 0xFFFFFFFF) | (proc << 32)
                ad = api["make_job_ad"](sb, jid, index if item is not None else 0, step,
                                        False, False, None, None)
                if not ad:
                    return {"error": errors(api, sb)}
                merged = {}
                parent = api["parent"](ad)
                if parent:
                    merged.update(as_dict(api, parent))
                merged.update(as_dict(api, ad))
                procs.append(merged)
    return {"procs": procs}


# Every Submit made, alive until the process ends (its ads are its own).
KEEP = []


def main():
    req = json.load(sys.stdin)
    try:
        api = bind()
    except (AttributeError, OSError, ImportError) as e:
        print(f"cannot reach HTCondor's submit code: {e}", file=sys.stderr)
        sys.exit(3)
    if isinstance(req, list):
        out = [run_one(api, r) for r in req]
    else:
        out = run_one(api, req)
    print(json.dumps(out))
    sys.stdout.flush()
    # Leave without running destructors over the ads the Submit objects own.
    os._exit(0)


main()
