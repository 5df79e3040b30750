#!/usr/bin/env python3
"""Writes the seed corpora (fuzz/corpus/<target>/) and dictionaries
(fuzz/dict/<target>.dict) from the repository's examples and docs plus a
few hand-written inputs. Run from the repository root; the output is
committed, so this only needs rerunning when the formats change."""

import json
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parent.parent
CORPUS = ROOT / "fuzz" / "corpus"
DICT = ROOT / "fuzz" / "dict"


def put(target, name, data):
    d = CORPUS / target
    d.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    (d / name).write_bytes(data)


def code_blocks(md, lang=None):
    text = (ROOT / md).read_text()
    pat = r"```" + (re.escape(lang) if lang else r"[a-z]*") + r"\n(.*?)```"
    return re.findall(pat, text, re.S)


# --- submit files -----------------------------------------------------------
for f in sorted((ROOT / "examples" / "jobs").glob("*.sub")):
    put("submit_parse", f.name, f.read_text())
SUBMITS = {
    "minimal.sub": "executable = /bin/true\nqueue\n",
    "items.sub": (
        "executable = /bin/echo\narguments = \"$(Item) '$(Process)' $(Cluster)\"\n"
        "output = out.$(ItemIndex)\nerror = err.$(Step)\nlog = job.log\n"
        "queue 2 item in (a, b, c)\n"
    ),
    "multiline.sub": (
        "universe = vanilla\nexecutable = run.sh\n"
        "arguments = one \\\n  two three\n"
        "environment = \"A=1 B='x y' C=$ENV(HOME)\"\n"
        "request_memory = 512\nrequest_cpus = 2\nrequest_disk = 1024\n"
        "requirements = TARGET.Memory >= 512 && Arch == \"X86_64\"\n"
        "rank = TARGET.Mips\n+Project = \"physics\"\nMY.Group = \"a\"\n"
        "queue x, y from (\n  1, 2\n  3, 4\n)\n"
    ),
    "macros.sub": (
        "base = /data/$(user:nobody)\nname = run_$(Cluster)_$(Process)\n"
        "executable = $(base)/bin\ninitialdir = $(base)/$(name)\n"
        "transfer_input_files = in.txt, $(name).cfg\n"
        "should_transfer_files = IF_NEEDED\nwhen_to_transfer_output = ON_EXIT_OR_EVICT\n"
        "arguments = $$(Memory) $(DOLLAR)x $ENV(N:1)\nqueue $ENV(N)\n"
    ),
    "checkpoint.sub": (
        "executable = sim\ncheckpoint_exit_code = 85\n"
        "transfer_checkpoint_files = state.bin\ncheckpoint_interval = 60\n"
        "checkpoint_method = criu\nconcurrency_limits = matlab, foo:2\n"
        "max_retries = 3\non_exit_hold = ExitCode =!= 0\non_exit_hold_reason = \"bad\"\n"
        "on_exit_hold_subcode = 7\nperiodic_hold = JobRunCount > 5\n"
        "periodic_release = NumJobStarts < 3\nnice_user = true\n"
        "accounting_group = group_a.alice\nbatch_name = b1\npriority = -5\n"
        "getenv = true\nqueue 3\n"
    ),
    "two_queues.sub": (
        "executable = a\noutput = a.$(Process)\nqueue 2\n"
        "executable = b\narguments = $(Row) $(ProcId) $(ClusterId)\nqueue\n"
    ),
    "language.sub": (
        "if defined X\n  arguments = $(X)\nelif version >= 8.1\n  arguments = new\nelse\n"
        "  arguments = old\nendif\ninclude ifexist : common.inc\nName = abcdef\n"
        "I = $(Process) + 1\nexecutable = $Fnx(/bin/echo)\n"
        "output = $INT(I,%04d).$REAL(I,%.2f).$SUBSTR(Name,1,3).$CHOICE(Process,a,b,c)\n"
        "error = $RANDOM_INTEGER(0,10,2).$RANDOM_CHOICE(x,y).$EVAL(6*7)\n"
        "hold = true\ncron_minute = */5\ncron_hour = 0-4,9\ndeferral_window = 60\n"
        "on_exit_remove = false\nmax_retries = 2\nretry_until = 3\nkill_sig = SIGUSR1\n"
        "job_max_vacate_time = 2 * 3\nnotification = never\nrequest_Boats = 2\n"
        "queue 2 x in [1:3] (a b c d)\n"
    ),
    "refused.sub": (
        "universe = parallel\nmachine_count = 4\ndocker_image = x\ngrid_resource = y\n"
        "accounting_group_user = mallory\ncron_hour = 99\nqueue f matching *.dat\n"
    ),
    "errors.sub": (
        "executable = x\nexecuteable = typo\n = nothing\n$(undefined)\n"
        "arguments = \"unterminated\nqueue in (\n"
    ),
}
for name, text in SUBMITS.items():
    put("submit_parse", name, text)

# --- ClassAd ----------------------------------------------------------------
EXPRS = [
    "TARGET.Memory >= 1024 && Arch == \"X86_64\"",
    "ifThenElse(isUndefined(x), 1, x * 2.5)",
    "{ 1, 2.0, \"a\", [ b = 3 ] }[1] + size({})",
    "strcat(\"a\", string(3), substr(\"hello\", 1, 3)) =?= \"a3ell\"",
    "regexp(\"^a.*b$\", \"aXXb\", \"i\") || regexps(\"(a)\", \"xa\", \"\\\\1\\\\1\")",
    "pow(2, 63) + floor(-1.5) - ceiling(1e308 * 10) / round(2.5)",
    "MY.RequestMemory <= TARGET.Memory ? TARGET.Mips : undefined",
    "-1 >> 64 | 1 << 3 & ~0 ^ 5 >>> 2 % 3",
    "member(\"a\", { \"A\", \"b\" }) && identicalMember(1, { 1 })",
    "stringListMember(\"x\", \"a, x b\") && stringListSize(\"a b c\") == 3",
    "eval(\"1 + \" + string(time())) isnt error is true",
    "[ a = [ p = A ][\"P\"]; p = a + 1 ].p",
    "sum({ 1, 2.5, undefined }) + avg({}) + min({ 3, 1 }) + max({ true })",
    "unparse(Requirements) + toUpper(\"x\") + toLower(Owner)",
    "int(\"12abc\") + real(\"-INF\") + bool(\"yes\")",
    "\"\\303\\251\\n\\t\\\"\" < \"ABD\"",
    "!(a =!= b) && (c ?: 1)",
]
for i, e in enumerate(EXPRS):
    put("classad_parse_eval", f"expr{i:02}", e)
for i, block in enumerate(code_blocks("docs/classad.md")):
    if "=" in block and "cargo" not in block and "pip" not in block:
        put("classad_parse_eval", f"doc{i:02}", block)
put(
    "classad_parse_eval",
    "ad_old",
    "# a job\nOwner = \"alice\"\nMemory = 2048\nRequirements = TARGET.Owner != \"mallory\"\n"
    "Rank = KeyboardIdle > 15 * 60\nNested = [ x = { 1, 2 } ]\n",
)
put(
    "classad_parse_eval",
    "ad_new",
    "[ Name = \"ws1\"; Memory = 2048; Start = TARGET.RequestMemory <= Memory; "
    "Requirements = Start && Cpus > 0; Cpus = 4 ]",
)

# --- DAG --------------------------------------------------------------------
for i, block in enumerate(code_blocks("docs/dag-format.md")):
    if re.search(r"^\s*(JOB|DONE|DAG|PARENT)\b", block, re.M):
        put("dag_parse", f"doc{i:02}.dag", block)
put(
    "dag_parse",
    "diamond.dag",
    "JOB a a.sub\nJOB b b.sub\nJOB c c.sub\nJOB d d.sub\n"
    "PARENT a CHILD b c\nPARENT b c CHILD d\nRETRY b 2\nRETRY d 1\n"
    "VARS a x=\"1\" y=\"two words\"\nPRIORITY_PARENT b CHILD c\n",
)
put("dag_parse", "cycle.dag", "JOB a a.sub\nJOB b b.sub\nPARENT a CHILD b\nPARENT b CHILD a\n")
put(
    "dag_parse",
    "dagman.dag",
    "CONFIG /d/f1\nJOB A a.sub DIR sub\nJOB B { executable = /bin/true\n queue }\n"
    "SCRIPT DEFER 2 30 PRE A pre.sh $JOB $RETRY\nSCRIPT POST A post.sh $RETURN $DAG_STATUS\n"
    "PRE_SKIP A 3\nRETRY A 2 UNLESS-EXIT 4\nABORT-DAG-ON B 5 RETURN 1\n"
    "VARS ALL_NODES node = \"$(JOB)\" +Attr=\"x\"\nPRIORITY B 10\nCATEGORY A slow\nMAXJOBS slow 1\n"
    "SPLICE S /d/f2\nPARENT A CHILD S\nWEAK PARENT S CHILD B\nFINAL F f.sub\n"
    "NODE_STATUS_FILE x.status 5\nJOBSTATE_LOG x.jobstate.log\nDOT x.dot UPDATE\n"
    "\0DAGMAN_MAX_JOBS_IDLE = 3\nDAGMAN_USE_STRICT = 1\n"
    "\0JOB C c.sub\nJOB D d.sub\nPARENT C CHILD D\n",
)
put(
    "dag_parse",
    "rescue.dag",
    "JOB a a.sub\nJOB b b.sub\nPARENT a CHILD b\nRETRY b 2\n"
    "\0# Rescue DAG file, created after running\n#   the x.dag DAG file\n"
    "# Rescue DAG version: 2.1.0\n#\n# Total number of Nodes: 2\nDONE a\nRETRY b 1\n",
)

# --- configurations ---------------------------------------------------------
STATION = """name = "ws1"
listen = "127.0.0.1:9620"
address = "http://127.0.0.1:9620"
state_dir = "/var/lib/gleaner"
coordinator = "http://127.0.0.1:9618"
public_key = "/etc/gleaner/pool.pub"
token_file = "/etc/gleaner/station.token"
role = "both"
advertise_secs = 120
placement_interval_secs = 0.5
cpus = 4
memory_mb = 8192
speed = 1.5
activity = { source = "file", path = "/tmp/activity" }
eviction_policy = "linger_longer"
max_body_bytes = 1048576
lease_secs = 120
avoid_host_secs = 1800
start_retry_secs = 30
checkpoint_signal = "SIGUSR1"
checkpoint_grace_secs = 10
user_socket = "/run/gleaner/ws1.sock"

[attrs]
HasMatlab = "true"
Site = '"lab"'

[policy]
windows = ["Mon-Fri 18:00-08:00", "Sat,Sun 00:00-24:00"]
allow_users = []
deny_users = ["mallory"]
start = "TARGET.RequestMemory <= 2048"
max_guests = 2
"""
put("station_config", "full.toml", STATION)
put("station_config", "minimal.toml", "name = \"a\"\n")
put("station_config", "pool_key.toml", "pool_key = \"/etc/gleaner/pool.key\"\n")
COORD = """listen = "127.0.0.1:9618"
state_dir = "/var/lib/gleaner-coordinator"
scheduling_interval_secs = 120
advertise_period_secs = 120
startup_grace_secs = 0

[licences]
matlab = 2
foo = 10
"""
put("coordinator_config", "basic.toml", COORD)
put("coordinator_config", "empty.toml", "")
for i, block in enumerate(code_blocks("docs/configuration.md", "toml")):
    if "[licences]" in block or "[allocator" in block:
        put("coordinator_config", f"doc{i:02}.toml", block)
    else:
        put("station_config", f"doc{i:02}.toml", block)

# --- wire messages ----------------------------------------------------------
DESC = {
    "owner": "alice", "executable": "/bin/sleep", "arguments": ["10"],
    "environment": {"A": "1"}, "output": "out", "request_cpus": 1,
    "request_memory_mb": 512, "requirements": "TARGET.Memory > 100",
    "concurrency_limits": ["matlab"], "custom_attrs": {"Project": "\"x\""},
    "transfer_output_files": ["a.txt"], "checkpoint_exit_code": 85,
}
SUBMISSION = {
    "file_name": "job.sub", "owner": "alice", "env": {"HOME": "/home/alice"},
    "batches": [{
        "line": 3, "statement": "2 x in (a, b)",
        "vars": {
            "executable": {"name": "executable", "value": "/bin/echo", "line": 1},
            "arguments": {"name": "arguments", "value": "$(x) $(Process)", "line": 2},
            "+project": {"name": "+Project", "value": "\"p\"", "line": 2},
        },
        "procs": [
            {"step": 0, "item_index": 0, "items": {"x": "a"}},
            {"step": 1, "item_index": 0, "items": {"x": "a"}},
        ],
    }],
}
CLASS = {"key": "k1", "owner": "alice", "requirements": "TARGET.Memory > 1",
         "request_cpus": 1, "request_memory_mb": 100, "concurrency_limits": ["matlab:2"]}
RUN = "ws1/3.0/r2/0123456789abcdef"
WIRE = [
    ("station_ad", {
        "protocol": 1, "name": "ws1", "address": "http://ws1:9620", "state": "AV",
        "cpus": 4, "memory_mb": 8192, "disk_free_kb": 100000, "arch": "X86_64",
        "opsys": "LINUX", "speed": 1.25,
        "running_guests": [{"job": "3.0", "home": "ws2", "owner": "bob", "since": 5,
                            "suspended": False, "concurrency_limits": ["matlab"], "class": CLASS}],
        "attrs": {"HasMatlab": "true", "CheckpointTransferRate": "1000"},
        "demand": {"idle_jobs": 2, "remote_jobs": 1},
        "policy": {"windows": ["Mon-Fri 18:00-08:00"], "utc_offset_secs": 3600,
                   "deny_users": ["mallory"], "start": "TARGET.RequestMemory < 100",
                   "max_guests": 2},
        "classes": [CLASS], "sequence": 9, "sent_at": 1700000000000000,
        "claims_used": ["abcd"]}),
    ("advertise_reply", {
        "protocol": 1, "grants": [{"host": "ws2", "host_address": "http://ws2", "claim_id": "c",
                                   "class": "k1"}],
        "preemptions": [{"host": "ws3", "job": "1.0", "reason": "updown"}],
        "next_advertise_secs": 120,
        "claims": [{"claim_id": "c", "home": "ws1", "expires_at": 1700000100}],
        "checkpoint_transfer_rate": 1000000,
        "destinations": [{"job": "1.0", "home": "ws1", "available": True}],
        "revoked": [{"token_id": "aa", "expires_at": 1800000000}, {"token_id": "bb"}]}),
    ("events_reply", {"protocol": 1, "last": 4, "grants": [], "preemptions": []}),
    ("pool_status", {"stations": [{"name": "ws1", "address": "a", "state": "NA", "cpus": 1,
                                   "memory_mb": 1, "disk_free_kb": 1, "guests": 0,
                                   "last_seen_secs": 1.5}]}),
    ("userprio", {"allocator": "updown", "stations": [{"station": "ws1", "si": -2.5,
                                                       "nodes_held": 1, "wants": True}]}),
    ("placement_request", {"protocol": 1, "job_id": "3.1", "home": "ws1", "claim_id": "c",
                           "description": DESC, "shadow": "http://ws1:9620",
                           "checkpoint": "ckpt-1", "run_count": 2, "lease_secs": 120,
                           "run": RUN}),
    ("placement_response", {"result": "rejected", "reason": "no_resources", "message": "full"}),
    ("job_status_report", {"protocol": 1, "job_id": "3.1", "host": "ws2", "event": "evicted",
                           "state": {"state": "idle"}, "at": 17, "detail": "x",
                           "usage": {"cpu_secs": 1.5, "wall_secs": 2.0, "max_rss_mb": 10},
                           "run": RUN,
                           "start_failure": {"code": 6, "subcode": 7, "message": "E2BIG"}}),
    ("submit_request", {"protocol": 1, "submission": SUBMISSION}),
    ("submit_response", {"cluster": 3, "jobs": ["3.0", "3.1"]}),
    ("error_body", {"error": {"code": "bad_request", "message": "no", "field": "x"}}),
    ("submit_body", {"protocol": 1, "submission": SUBMISSION, "submit_dir": "/home/alice"}),
    ("job_infos", [{"id": "3.0", "owner": "alice", "state": {"state": "held", "reason": "r"},
                    "submitted_at": 1, "updated_at": 2, "started_at": 3, "run_count": 1,
                    "host": "ws2", "cmd": "/bin/sleep 10", "start_failures": 2,
                    "hold_code": 6, "hold_subcode": 7}]),
    ("job_detail", {"job": {"id": "3.0", "owner": "alice",
                            "state": {"state": "completed", "exit_code": 0},
                            "submitted_at": 1, "updated_at": 2, "cmd": "x"},
                    "description": DESC,
                    "events": [{"at": 1, "kind": "submitted"}, {"at": 2, "kind": "held",
                                                                  "detail": "d"}]}),
    ("action_request", {"reason": "because"}),
    ("action_response", {"changed": ["1.0"], "skipped": [["1.1", "not held"]]}),
    ("append_response", {"length": 10}),
    ("stored_response", {"ok": True, "detail": ""}),
    ("dag_submit_body", {"protocol": 1, "files": ["a.dag"], "cwd": "/home/alice",
                         "options": {"max_idle": 5, "force": True, "batch_name": "b"},
                         "env": {"PATH": "/usr/bin"}}),
    ("dag_status", {"id": 1, "owner": "alice", "dag_file": "a.dag", "files": ["/home/alice/a.dag"],
                    "state": "running", "exit_code": None, "dag_status": 0,
                    "submitted_at": 1, "finished_at": None, "rescue_file": None, "message": "",
                    "nodes_total": 1, "nodes_done": 1, "nodes_failed": 0,
                    "nodes": [{"name": "a", "status": "done", "node_status": 5, "failures": 0,
                               "retries": 1, "max_retries": 2, "clusters": [3],
                               "started_at": 1, "finished_at": 2, "data_parents": [],
                               "priority_parents": [], "error": ""}]}),
    ("dag_rm_response", {"id": 1, "removed_jobs": ["3.0"], "rescue_file": "/a.rescue"}),
    ("claims", {"subject": "alice", "role": "user", "issued_at": 1, "expires_at": 2,
                "token_id": "00112233445566778899aabbccddeeff"}),
    ("claim_ticket", {"kind": "claim", "host": "ws2", "home": "ws1",
                      "home_address": "http://ws1:9620", "issued_at": 1, "expires_at": 2,
                      "nonce": "abcdef"}),
    ("revocations", [{"token_id": "aa", "expires_at": 5}, {"token_id": "bb"}]),
    ("token_record", {"token_id": "aa", "subject": "ws1", "role": "station", "issued_at": 1,
                      "expires_at": None, "revoked": True, "revoked_at": 3}),
]
for kind, (name, msg) in enumerate(WIRE):
    put("wire_messages", f"{kind:02}_{name}", bytes([kind]) + json.dumps(msg, indent=1).encode())
TEXTS = [
    ("run_id", RUN),
    ("job_id", "12.0"),
    ("token", "eyJzdWJqZWN0IjoiYWxpY2UifQ.c2lnbmF0dXJl"),
    ("pool_pub", "gleaner-pool-key ed25519 AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=\n"),
]
for name, text in TEXTS:
    put("wire_messages", f"25_{name}", bytes([25]) + text.encode())

# --- dictionaries -----------------------------------------------------------
def write_dict(name, tokens):
    DICT.mkdir(parents=True, exist_ok=True)
    lines = []
    for t in dict.fromkeys(tokens):
        esc = "".join(
            "\\\\" if c == "\\" else '\\"' if c == '"'
            else c if 32 <= ord(c) < 127 else f"\\x{ord(c):02X}"
            for c in t
        )
        lines.append(f'"{esc}"')
    (DICT / f"{name}.dict").write_text("\n".join(lines) + "\n")


# Every submit command the parser knows (the table of submit/keys.rs).
keys_src = (ROOT / "crates/proto/src/submit/keys.rs").read_text()
table = re.search(r"const COMMANDS: &\[Command\] = &\[(.*?)\n\];", keys_src, re.S).group(1)
keys = sorted(set(re.findall(r'^\s*(?:imp|rec|acc|unless|unless_rec|refuse)\(\s*"([a-z_]+)"', table, re.M)))
write_dict("submit_parse", keys + [
    "$(", ")", "$ENV(", "$$(", ":", "=", "\\\n", "\n", "#", "+", "MY.", "queue", "queue ",
    " in ", " from ", " matching ", "(", ",", "$(Cluster)", "$(Process)", "$(Step)",
    "$(ItemIndex)", "$(Row)", "$(Item)", "$(DOLLAR)", "$(ClusterId)", "$(ProcId)", "\"", "'",
    "yes", "no", "if_needed", "on_exit", "on_exit_or_evict", "true", "false",
    "if defined ", "elif ", "else", "endif", "include : ", "$INT(", "$REAL(", "$Fnx(",
    "$CHOICE(", "$SUBSTR(", "$RANDOM_INTEGER(", "$RANDOM_CHOICE(", "$EVAL(", " [1:3] ",
    "matching files ", "*/5",
])
classad_src = (ROOT / "crates/classad/src/builtins.rs").read_text()
builtins = re.findall(r'^\s*"([a-z]+)",$', classad_src, re.M)
write_dict("classad_parse_eval", builtins + [
    "MY.", "TARGET.", "true", "false", "undefined", "error", "is", "isnt", "=?=", "=!=",
    "==", "!=", "<=", ">=", "&&", "||", "?", ":", "<<", ">>", ">>>", "[", "]", "{", "}",
    ";", ",", ".", "(", ")", "\"", "\\", "e+308", "1.0", "-", "!", "~", "%",
])
# DAGMan's commands and keywords (gleaner_core::dag::command), script
# and VARS macros, and the NUL that splits the input into files.
write_dict("dag_parse", ["JOB ", "PARENT ", "CHILD ", "PRIORITY_PARENT ", "RETRY ", "VARS ",
                         "DONE ", "=\"", "\\\"", "\n", "#",
                         "SCRIPT ", "PRE ", "POST ", "HOLD ", "DEFER ", "DEBUG ", "PRE_SKIP ",
                         "UNLESS-EXIT ", "ABORT-DAG-ON ", "RETURN ", "ALL_NODES", "PRIORITY ",
                         "CATEGORY ", "MAXJOBS ", "CONFIG ", "SET_JOB_ATTR ", "DOT ", "UPDATE",
                         "OVERWRITE", "NODE_STATUS_FILE ", "JOBSTATE_LOG ", "SAVE_POINT_FILE ",
                         "FINAL ", "PROVISIONER ", "SERVICE ", "SUBDAG EXTERNAL ", "SPLICE ",
                         "DIR ", "CONNECT ", "PIN_IN ", "PIN_OUT ", "INCLUDE ", "REJECT", "NOOP",
                         "WEAK ", "SUBMIT-DESCRIPTION ", "ENV ", "$JOB", "$RETRY", "$RETURN",
                         "$DAG_STATUS", "$(JOB)", "{", "}", "\0", "DAGMAN_MAX_JOBS_IDLE = "])
