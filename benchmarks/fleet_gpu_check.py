"""The fleet, end to end on one GPU machine (NVIDIA H200; planned for under 8 minutes): a worker measures the two
reference workloads with eager, inductor and one hand-written candidate each, and the runs are printed.

    python -m benchmarks.fleet_gpu_check                              # on the GPU machine; writes under $OUT
    python -m benchmarks.fleet_gpu_check --device cpu --workload kernelbench-l3-p9-resnet18   # the CPU path

Drives the `kernelindex` command as subprocesses (this package never imports the service):
  1. `seed --migrate` on a PostgreSQL on this machine: a fresh embedded one in a temporary data folder
     (deleted afterwards; --data-dir to keep it), or $KERNELINDEX_DATABASE_URL when set;
  2. `serve` on a free loopback port for the rest of the check (it keeps the embedded server up, and
     answers the GraphQL request of step 6);
  3. `bench --enqueue --impl torch_eager --hardware H` for the workloads, then one `submit` per workload of
     its candidate in benchmarks/candidates/, then `bench --enqueue` of the other implementations
     (inductor), so that the queue, which hands out jobs oldest first, measures the cheap ones first;
  4. `worker --device D --until-idle`, stopped (SIGINT, then SIGKILL) if it is still running at --budget-s;
  5. `jobs` and `jobs --json`;
  6. the jobs with their runs (and each job's eager baseline run, measured in the same job) through one
     GraphQL `jobs` request, printed as a table with the speedup over that baseline; and the measured runs
     as records from `/exports/catalog.jsonl?evidence=measured`.

H is the GPU's catalogue SKU as benchmarks.environment reads it (what the worker will detect), or 'cpu'.

Writes, under --out (default $OUT, else the current directory):
  fleet_check.log      every command and its output
  fleet_jobs.jsonl     `kernelindex jobs --json`
  fleet_runs.json      the GraphQL answer: every job with its run and baseline run
  fleet_runs.jsonl     the measured runs as run records (re-ingestable)
  fleet_summary.json   the table, the steps' wall times and what was skipped, rewritten after each step

Exit status 0 when every job passed, 1 otherwise (or when a step failed), 2 for bad arguments.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

REPO = Path(__file__).resolve().parent.parent
CANDIDATE_DIR = Path(__file__).resolve().parent / "candidates"
# The two reference workloads and the hand-written candidate of each.
CANDIDATES = {
    "kernelbench-l3-p9-resnet18": (CANDIDATE_DIR / "resnet18_cuda_graph.py", "ResNet18, its layers replayed as one CUDA graph"),
    "kernelbench-l3-p12-vgg19": (CANDIDATE_DIR / "vgg19_cuda_graph.py", "VGG19, its layers replayed as one CUDA graph"),
}
BASELINE = "torch_eager"
GPU_IMPLS = ("torch_eager", "torch_compile_inductor")
CPU_IMPLS = ("torch_eager",)  # inductor's C++ compile of a ResNet takes minutes on a small CPU: ask with --impl
JOBS_QUERY = """query FleetCheck($first: Int!) { jobs(first: $first) { nodes {
  databaseId state kind reason hardware attempts worker durationS implementationSlug
  workload { slug }
  run { databaseId status failureReason meanMs ciHalfWidthMs numTrials compileTimeMs evidence trustLevel
        protocol { name version } environment { databaseId hardware { sku } } }
  baselineRun { databaseId status meanMs ciHalfWidthMs numTrials }
} } }"""

_started = time.monotonic()


def kernelindex_command() -> str:
    """The `kernelindex` console script of this interpreter's environment (or the one on PATH)."""
    beside = Path(sys.executable).with_name("kernelindex")
    found = str(beside) if beside.exists() else shutil.which("kernelindex")
    if not found:
        raise CheckError("no `kernelindex` command: install the project first (make setup, or pip install -e .)")
    return found


class CheckError(Exception):
    """A step failed: the message says which and why."""


class Log:
    """Prints progress with the elapsed time, and keeps every command's output in fleet_check.log."""

    def __init__(self, path: Path):
        self.file: IO[str] = open(path, "w", encoding="utf-8")
        self.lock = threading.Lock()

    def say(self, message: str) -> None:
        line = f"[{time.monotonic() - _started:7.1f} s] {message}"
        with self.lock:
            print(line, flush=True)
            self.file.write(line + "\n")
            self.file.flush()

    def keep(self, text: str) -> None:
        with self.lock:
            self.file.write(text if text.endswith("\n") or not text else text + "\n")
            self.file.flush()

    def close(self) -> None:
        self.file.close()


class Check:
    def __init__(self, args: argparse.Namespace, log: Log, env: dict[str, str]):
        self.args = args
        self.log = log
        self.env = env
        self.out = Path(args.out)
        self.summary: dict[str, Any] = {"device": args.device, "hardware": args.hardware, "workloads": args.workload,
                                        "implementations": args.impl, "bindings": args.bindings, "steps": {},
                                        "skipped": [], "errors": []}
        self.serve: subprocess.Popen[str] | None = None
        self.base_url = ""

    # --- running `kernelindex` ---

    def command(self, *argv: str) -> list[str]:
        # The installed `kernelindex` command, as an operator runs it: benchmarks/ never imports the service.
        return [kernelindex_command(), *argv]

    def run(self, step: str, *argv: str, timeout: float = 300, check: bool = True) -> subprocess.CompletedProcess[str]:
        self.log.say(f"$ kernelindex {' '.join(argv)}")
        started = time.monotonic()
        try:
            done = subprocess.run(self.command(*argv), cwd=REPO, env=self.env, capture_output=True, text=True, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            raise CheckError(f"{step}: `kernelindex {' '.join(argv)}` still running after {timeout:g} s") from exc
        self.summary["steps"][step] = round(time.monotonic() - started, 1)
        self.log.keep(done.stderr)
        self.log.keep(done.stdout)
        for line in done.stderr.strip().splitlines()[-8:]:
            print(f"    {line}", flush=True)
        if check and done.returncode != 0:
            raise CheckError(f"{step}: `kernelindex {' '.join(argv)}` exited {done.returncode}: "
                             f"{(done.stderr.strip().splitlines() or ['no output'])[-1]}")
        return done

    def write_summary(self) -> None:
        path = self.out / "fleet_summary.json"
        temporary = path.with_suffix(".tmp")
        temporary.write_text(json.dumps(self.summary, indent=2, allow_nan=False, default=str) + "\n", encoding="utf-8")
        temporary.replace(path)

    # --- the steps ---

    def start_serve(self) -> None:
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}"
        self.log.say(f"$ kernelindex serve --port {port}")
        log_path = self.out / "fleet_serve.log"
        self.serve_log = open(log_path, "w", encoding="utf-8")
        self.serve = subprocess.Popen(self.command("serve", "--port", str(port)), cwd=REPO, env=self.env,
                                      stdout=self.serve_log, stderr=subprocess.STDOUT, text=True)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline:
            if self.serve.poll() is not None:
                raise CheckError(f"serve exited {self.serve.returncode}; see {log_path}")
            try:
                with urllib.request.urlopen(f"{self.base_url}/healthz", timeout=2) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.3)
        raise CheckError(f"serve did not answer /healthz within 120 s; see {log_path}")

    def stop_serve(self) -> None:
        if self.serve is None or self.serve.poll() is not None:
            return
        self.serve.send_signal(signal.SIGTERM)  # stops the embedded PostgreSQL with it
        try:
            self.serve.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.serve.kill()
            self.serve.wait()
        self.serve_log.close()

    def enqueue(self) -> None:
        args = self.args
        workloads = [w for slug in args.workload for w in ("--workload", slug)]
        bindings = [a for binding in args.bindings for a in ("--set", binding)]
        first = [i for i in args.impl if i == BASELINE]
        rest = [i for i in args.impl if i != BASELINE]
        if first:
            self.run("enqueue eager", "bench", "--enqueue", *workloads, "--impl", BASELINE, "--hardware", args.hardware,
                     *bindings)
        if not args.no_candidates:
            for slug in args.workload:
                path, title = CANDIDATES[slug]
                self.run(f"submit {slug}", "submit", "--workload", slug, "--file", str(path), "--hardware", args.hardware,
                         "--title", title, "--licence", "MIT", *bindings)
        if rest:
            self.run("enqueue the rest", "bench", "--enqueue", *workloads, *(a for i in rest for a in ("--impl", i)),
                     "--hardware", args.hardware, *bindings)

    def work(self) -> None:
        """The worker until the queue is drained, or until the budget: then SIGINT, then SIGKILL."""
        args = self.args
        argv = ["worker", "--device", args.device, "--until-idle", "--name", "fleet-gpu-check", "--job-timeout",
                str(args.job_timeout)]
        if args.timing_budget is not None:
            if "--timing-budget" not in self.run("worker help", "worker", "--help").stdout:
                message = "this `kernelindex worker` has no --timing-budget: its own default timing budget applies"
                self.summary["skipped"].append(message)
                self.log.say(f"NOTE {message}")
            else:
                argv += ["--timing-budget", str(args.timing_budget)]
        self.log.say(f"$ kernelindex {' '.join(argv)}")
        started = time.monotonic()
        process = subprocess.Popen(self.command(*argv), cwd=REPO, env=self.env, stdout=subprocess.PIPE,
                                   stderr=subprocess.STDOUT, text=True, start_new_session=True)

        def relay() -> None:
            assert process.stdout is not None
            for line in process.stdout:
                self.log.say(f"    {line.rstrip()}")

        reader = threading.Thread(target=relay, daemon=True)
        reader.start()
        deadline = _started + args.budget_s
        while process.poll() is None and time.monotonic() < deadline:
            time.sleep(0.5)
        if process.poll() is None:
            message = f"worker still running at the {args.budget_s:g} s budget: stopped, its queued jobs left queued"
            self.summary["skipped"].append(message)
            self.log.say(f"NOTE {message}")
            os.killpg(process.pid, signal.SIGINT)
            try:
                process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()
        reader.join(timeout=5)
        self.summary["steps"]["worker"] = round(time.monotonic() - started, 1)
        self.summary["worker_exit_status"] = process.returncode
        if process.returncode not in (0, -signal.SIGINT, 130):
            self.summary["errors"].append(f"the worker exited {process.returncode}")

    def report(self) -> bool:
        """`jobs`, then the jobs and runs through GraphQL and the export. True when every job passed."""
        listing = self.run("jobs", "jobs", "--limit", "100")
        print(listing.stdout, end="", flush=True)
        as_json = self.run("jobs --json", "jobs", "--json", "--limit", "100")
        (self.out / "fleet_jobs.jsonl").write_text(as_json.stdout, encoding="utf-8")

        body = json.dumps({"query": JOBS_QUERY, "variables": {"first": 100}}).encode()
        request = urllib.request.Request(f"{self.base_url}/graphql", data=body,
                                         headers={"Content-Type": "application/json", "Accept": "application/json"})
        query = urllib.parse.urlencode({"evidence": "measured"})
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                document = json.loads(answer.read())
            (self.out / "fleet_runs.json").write_text(json.dumps(document, indent=2) + "\n", encoding="utf-8")
            if document.get("errors"):
                raise CheckError(f"the GraphQL jobs query failed: {document['errors'][0].get('message')}")
            with urllib.request.urlopen(f"{self.base_url}/exports/catalog.jsonl?{query}", timeout=120) as answer:
                (self.out / "fleet_runs.jsonl").write_bytes(answer.read())
        except (OSError, ValueError) as exc:  # URLError and HTTPError are OSErrors; a body that is not JSON
            raise CheckError(f"reading the jobs and runs from serve ({self.base_url}) failed: {exc}") from exc

        rows = [table_row(job) for job in reversed(document["data"]["jobs"]["nodes"])]
        self.summary["jobs"] = rows
        print_table(rows)
        return bool(rows) and all(r["state"] == "PASSED" for r in rows)


def table_row(job: dict[str, Any]) -> dict[str, Any]:
    run = job.get("run") or {}
    baseline = job.get("baselineRun") or {}
    mean, base = run.get("meanMs"), baseline.get("meanMs")
    if job["implementationSlug"] == BASELINE:
        base = None  # an eager job has no baseline beside it: it is the baseline
    return {
        "job": job["databaseId"], "workload": (job.get("workload") or {}).get("slug"),
        "implementation": job["implementationSlug"], "state": job["state"], "attempts": job["attempts"],
        "duration_s": job.get("durationS"), "run": run.get("databaseId"), "mean_ms": mean,
        "ci_half_width_ms": run.get("ciHalfWidthMs"), "trials": run.get("numTrials"),
        "compile_ms": run.get("compileTimeMs"), "trust": run.get("trustLevel"),
        "baseline_mean_ms": base, "speedup_vs_eager": base / mean if mean and base else None,
        "reason": job.get("reason"),
    }


def print_table(rows: list[dict[str, Any]]) -> None:
    def number(value: Any, digits: int = 3) -> str:
        return "—" if value is None else f"{value:.{digits}f}"

    print(f"\n{'job':>4}  {'workload':<28}  {'implementation':<30}  {'state':<7}  {'mean ms':>9}  {'±95% ms':>8}  "
          f"{'trials':>6}  {'eager ms':>9}  {'speedup':>7}  {'job s':>6}  trust")
    for r in rows:
        print(f"{r['job']:>4}  {str(r['workload']):<28}  {r['implementation'][:30]:<30}  {r['state']:<7}  "
              f"{number(r['mean_ms']):>9}  {number(r['ci_half_width_ms']):>8}  {str(r['trials'] or '—'):>6}  "
              f"{number(r['baseline_mean_ms']):>9}  {number(r['speedup_vs_eager'], 2):>7}  {number(r['duration_s'], 1):>6}  "
              f"{r['trust'] or '—'}")
        if r["reason"]:
            print(f"      {r['reason']}")
    print(flush=True)


def detect_gpu_sku() -> str:
    """The catalogue SKU of this machine's first GPU as benchmarks.environment reads it, in a child process
    (so that this process holds no CUDA context while the worker measures)."""
    probe = ("import json; from benchmarks.environment import capture_environment; "
             "print(json.dumps(capture_environment('cuda')['hardware']))")
    done = subprocess.run([sys.executable, "-c", probe], cwd=REPO, capture_output=True, text=True, timeout=300)
    if done.returncode != 0:
        raise CheckError(f"no CUDA device to check (use --device cpu): {(done.stderr.strip().splitlines() or ['?'])[-1]}")
    hardware = json.loads(done.stdout.strip().splitlines()[-1])
    if not hardware.get("sku"):
        raise CheckError(f"this GPU ({hardware.get('product_name')!r}) is not in seeds/hardware.json: name its SKU with --hardware")
    return str(hardware["sku"])


def _binding(text: str) -> str:
    name, _, value = text.partition("=")
    if not name.isidentifier() or not value.isdigit() or int(value) < 1:
        raise argparse.ArgumentTypeError(f"expected NAME=POSITIVE_INT, e.g. batch_size=1, got {text!r}")
    return f"{name}={int(value)}"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.fleet_gpu_check", description=(__doc__ or "").split("\n")[0])
    parser.add_argument("--out", default=os.environ.get("OUT") or ".", help="output folder (default $OUT or .)")
    parser.add_argument("--device", choices=["cuda", "cpu"], default="cuda", help="the worker's device (default cuda)")
    parser.add_argument("--hardware", help="the queue's hardware (default: this GPU's catalogue SKU; 'cpu' with --device cpu)")
    parser.add_argument("--workload", action="append", choices=sorted(CANDIDATES), default=[],
                        help="a workload to measure (repeatable; default both)")
    parser.add_argument("--impl", action="append", default=[],
                        help=f"builtin implementations to queue (repeatable; default {', '.join(GPU_IMPLS)} on cuda, "
                        f"{', '.join(CPU_IMPLS)} on cpu)")
    parser.add_argument("--set", dest="bindings", action="append", default=[], type=_binding, metavar="NAME=INT",
                        help="measure every job at another configuration, e.g. batch_size=1 (repeatable; default the "
                        "workloads' own)")
    parser.add_argument("--no-candidates", action="store_true", help="queue no hand-written candidate")
    parser.add_argument("--budget-s", type=float, default=480.0,
                        help="stop the worker at this many seconds from the start (default 480)")
    parser.add_argument("--job-timeout", type=float, default=300.0, help="the worker's wall-clock limit per job (default 300)")
    parser.add_argument("--timing-budget", type=float, default=None, metavar="S",
                        help="the worker's timing budget per implementation, if its CLI takes one (default: the worker's; "
                        "5 s with --device cpu)")
    parser.add_argument("--data-dir", help="the embedded PostgreSQL's folder, kept afterwards (default: a temporary one, "
                        "deleted); ignored when KERNELINDEX_DATABASE_URL is set")
    args = parser.parse_args(argv)
    args.workload = list(dict.fromkeys(args.workload)) or list(CANDIDATES)
    args.impl = list(dict.fromkeys(args.impl)) or list(GPU_IMPLS if args.device == "cuda" else CPU_IMPLS)
    if args.device == "cpu":
        if args.hardware not in (None, "cpu"):
            parser.error(f"--device cpu measures on the 'cpu' queue: --hardware must be cpu, not {args.hardware!r}")
        args.hardware = "cpu"
        if args.timing_budget is None:
            args.timing_budget = 5.0
    elif args.hardware is not None and args.hardware.strip().casefold() == "cpu":
        parser.error("--hardware cpu needs --device cpu")
    if args.budget_s <= 0 or args.job_timeout <= 0 or (args.timing_budget is not None and args.timing_budget <= 0):
        parser.error("--budget-s, --job-timeout and --timing-budget must be positive")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    global _started
    args = parse_args(argv)
    _started = time.monotonic()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    log = Log(out / "fleet_check.log")
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    temporary: Path | None = None
    if not env.get("KERNELINDEX_DATABASE_URL"):
        if args.data_dir:
            folder = Path(args.data_dir)
            folder.mkdir(parents=True, exist_ok=True)
        else:
            temporary = folder = Path(tempfile.mkdtemp(prefix="kernelindex-fleet-check-"))
        folder.chmod(0o755)  # not 0700: the embedded server runs as another OS user when we are root
        env["KERNELINDEX_DATA_DIR"] = str(folder)
        log.say(f"database: a fresh embedded PostgreSQL in {folder}")
    else:
        log.say("database: $KERNELINDEX_DATABASE_URL")
    check = Check(args, log, env)
    passed = False
    try:
        if args.hardware is None:
            args.hardware = detect_gpu_sku()
            check.summary["hardware"] = args.hardware
        log.say(f"device {args.device}, hardware {args.hardware!r}; workloads {', '.join(args.workload)}; "
                f"implementations {', '.join(args.impl)}{'' if args.no_candidates else ' and one candidate each'}")
        check.run("seed", "seed", "--migrate", timeout=600)
        check.start_serve()
        check.enqueue()
        check.write_summary()
        check.work()
        check.write_summary()
        passed = check.report()
    except CheckError as exc:
        check.summary["errors"].append(str(exc))
        log.say(f"ERROR {exc}")
    finally:
        check.stop_serve()
        check.summary["elapsed_s"] = round(time.monotonic() - _started, 1)
        check.write_summary()
        log.say(f"wrote {out}/fleet_*.json* and fleet_check.log in {check.summary['elapsed_s']} s")
        log.close()
        if temporary is not None:
            shutil.rmtree(temporary, ignore_errors=True)
    return 0 if passed and not check.summary["errors"] else 1


if __name__ == "__main__":
    sys.exit(main())
