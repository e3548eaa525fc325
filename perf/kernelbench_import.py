"""How fast does `kernelindex ingest kernelbench` go on a full checkout, cold and warm?

    python -m perf.kernelbench_import                  # 270 problems: cold, warm, one changed, parallel speed-up
    python -m perf.kernelbench_import --skip-speedup   # without the 1-worker vs N-worker tracing comparison
    python -m perf.kernelbench_import --profile        # and a cProfile of the warm import, in-process
    python -m perf.kernelbench_import --write-checkout DIR   # just write the synthetic checkout

It starts an embedded PostgreSQL in a temporary folder, migrates and seeds it, and writes a synthetic
KernelBench checkout of 270 problem files: levels 1–3 under the names the shared timing files use
(../shared/kernelbench/results/timing, copied in when present, so their entries land as runs), level 4
under names of its own. Each file is a small KernelBench-format module of the kind its name says
(matmuls, activations, norms, pooling, convolutions, fused level-2 chains, MLPs and CNNs), with sizes
like upstream's; level 3's eight LSTM/GRU problems (35–42) are tests/fixtures/recurrent, which build
nn.LSTM / nn.GRU of 6 layers over 512 steps as upstream does. Then it times, each as a child process
`kernelindex ingest kernelbench`:

- cold: every problem traced (in the sandbox, one fresh process per problem, as many at once as cores);
- warm: the same checkout again (every trace reused: nothing is traced);
- one changed: one problem file edited, a new revision (that one problem traced).

Last, unless --skip-speedup, it traces all the problems with trace_problems_isolated at 1 worker and at
every core, in this process, without the database: the parallel speed-up of tracing alone.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import os
import pstats
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
SHARED_TIMING = REPO_ROOT.parent / "shared" / "kernelbench" / "results" / "timing"
RECURRENT = REPO_ROOT / "tests" / "fixtures" / "recurrent"
KB_ARGS = ("--revision", "423217d", "--observed", "2026-03-05")
LEVEL4 = (
    "1_TinyAttention", "2_MultiHeadAttention", "3_GPT2Block", "4_BertLayer", "5_T5FeedForward", "6_LlamaMLP",
    "7_RMSNormLinear", "8_RotaryAttention", "9_GroupedQueryAttention", "10_MoERouter", "11_ViTPatchEmbed",
    "12_ConvNeXtBlock", "13_SwiGLU", "14_CrossAttention", "15_TransformerEncoder", "16_CausalConv1d",
    "17_LayerScaleMLP", "18_PerceiverLatent", "19_WindowAttention", "20_ParallelAttentionMLP",
)


def problem_names() -> dict[int, list[str]]:
    """Level → the file names of a full checkout: the shared timing files' levels 1–3 (else numbered
    stand-ins), and level 4's own."""
    names: dict[int, list[str]] = {}
    timing = SHARED_TIMING / "H100_Modal" / "baseline_time_torch.json"
    if timing.is_file():
        for level, entries in json.loads(timing.read_text()).items():
            names[int(level.removeprefix("level"))] = list(entries)
    else:
        names = {1: [f"{i}_Problem.py" for i in range(1, 101)], 2: [f"{i}_Fused.py" for i in range(1, 101)],
                 3: [f"{i}_Net.py" for i in range(1, 51)]}
    names[4] = [f"{name}.py" for name in LEVEL4]
    return names


HEADER = '''import torch
import torch.nn as nn
import torch.nn.functional as F


class Model(nn.Module):
    """{title} (synthetic KernelIndex benchmark problem, level {level})."""

'''

FOOTER_LIST = '''

def get_inputs():
    return [{inputs}]


def get_init_inputs():
    return [{init}]
'''


def problem_source(level: int, filename: str) -> str:
    """A KernelBench-format module of the kind its name says; every file's bytes differ."""
    number = int(filename.split("_", 1)[0])
    title = filename.removesuffix(".py")
    lower = title.lower()
    if level == 3 and 35 <= number <= 42:
        recurrent = sorted(RECURRENT.glob(f"{number}_*.py"))
        if recurrent:
            return recurrent[0].read_text()
    head = HEADER.format(title=title, level=level)
    if level == 4:
        return head + _attention(number)
    if level == 3:
        return head + (_rnn_cell(number) if "rnn" in lower else _mlp(number) if "mlp" in lower else _cnn(number))
    if "conv" in lower:
        return head + _conv(number, level, transposed="transpose" in lower, three_d="3d" in lower)
    if any(word in lower for word in ("matmul", "gemm", "matrix", "bmm")):
        return head + _matmul(number, level)
    if "norm" in lower:
        return head + _norm(number)
    if "pool" in lower:
        return head + _pool(number)
    if any(word in lower for word in ("reduction", "argmax", "argmin", "sum", "mean", "cumsum", "cumprod")):
        return head + _reduction(number)
    return head + _elementwise(number)


_ACTIVATIONS = ("torch.relu(x)", "torch.sigmoid(x)", "torch.tanh(x)", "F.gelu(x)", "F.silu(x)", "F.softplus(x)",
                "F.elu(x)", "F.hardtanh(x)", "torch.softmax(x, dim=1)", "F.leaky_relu(x, 0.01)")


def _elementwise(n: int) -> str:
    return f'''    def __init__(self):
        super().__init__()

    def forward(self, x):
        return {_ACTIVATIONS[n % len(_ACTIVATIONS)]}


batch_size = 4096
dim = {16384 + n}
''' + FOOTER_LIST.format(inputs="torch.randn(batch_size, dim)", init="")


def _matmul(n: int, level: int) -> str:
    if level == 2:
        return f'''    def __init__(self, in_features, out_features):
        super().__init__()
        self.linear = nn.Linear(in_features, out_features)

    def forward(self, x):
        x = self.linear(x)
        return {_ACTIVATIONS[n % len(_ACTIVATIONS)]} * 2.0


batch_size = 128
in_features = {1024 + n}
out_features = 512
''' + FOOTER_LIST.format(inputs="torch.randn(batch_size, in_features)", init="in_features, out_features")
    return f'''    def __init__(self):
        super().__init__()

    def forward(self, A, B):
        return torch.matmul(A, B)


M = {1024 + 8 * n}
K = 4096
N = 2048
''' + FOOTER_LIST.format(inputs="torch.randn(M, K), torch.randn(K, N)", init="")


def _conv(n: int, level: int, *, transposed: bool, three_d: bool) -> str:
    kind = ("ConvTranspose" if transposed else "Conv") + ("3d" if three_d else "2d")
    spatial = "depth, height, width" if three_d else "height, width"
    tail = f"\n        x = {_ACTIVATIONS[n % len(_ACTIVATIONS)]}\n        return x + self.bias" if level == 2 else "\n        return x"
    bias = "\n        self.bias = nn.Parameter(torch.randn(out_channels, 1, 1" + (", 1" if three_d else "") + "))" if level == 2 else ""
    sizes = "depth = 16\nheight = 32\nwidth = 32" if three_d else "height = 128\nwidth = 128"
    return f'''    def __init__(self, in_channels, out_channels, kernel_size):
        super().__init__()
        self.conv = nn.{kind}(in_channels, out_channels, kernel_size){bias}

    def forward(self, x):
        x = self.conv(x){tail}


batch_size = 16
in_channels = {3 + n % 5}
out_channels = 64
kernel_size = 3
{sizes}
''' + FOOTER_LIST.format(inputs=f"torch.randn(batch_size, in_channels, {spatial})", init="in_channels, out_channels, kernel_size")


def _norm(n: int) -> str:
    layers = ("nn.BatchNorm2d(features)", "nn.InstanceNorm2d(features)", "nn.GroupNorm(8, features)",
              "nn.LayerNorm([features, dim1, dim2])")
    return f'''    def __init__(self, features):
        super().__init__()
        self.norm = {layers[n % len(layers)]}

    def forward(self, x):
        return self.norm(x)


batch_size = 16
features = {64 + 8 * (n % 4)}
dim1 = 256
dim2 = 256
''' + FOOTER_LIST.format(inputs="torch.randn(batch_size, features, dim1, dim2)", init="features")


def _pool(n: int) -> str:
    return f'''    def __init__(self, kernel_size):
        super().__init__()
        self.pool = nn.{"MaxPool2d" if n % 2 else "AvgPool2d"}(kernel_size)

    def forward(self, x):
        return self.pool(x)


batch_size = 16
channels = 32
height = {128 + n}
width = 128
kernel_size = 2
''' + FOOTER_LIST.format(inputs="torch.randn(batch_size, channels, height, width)", init="kernel_size")


def _reduction(n: int) -> str:
    ops = ("torch.sum(x, dim=self.dim, keepdim=True)", "torch.mean(x, dim=self.dim)", "torch.argmax(x, dim=self.dim)",
           "torch.cumsum(x, dim=self.dim)", "torch.amax(x, dim=self.dim)")
    return f'''    def __init__(self, dim):
        super().__init__()
        self.dim = dim

    def forward(self, x):
        return {ops[n % len(ops)]}


batch_size = 16
dim1 = {256 + n}
dim2 = 256
reduce_dim = 1
''' + FOOTER_LIST.format(inputs="torch.randn(batch_size, dim1, dim2)", init="reduce_dim")


def _mlp(n: int) -> str:
    return f'''    def __init__(self, input_size, layer_sizes, output_size):
        super().__init__()
        layers = []
        current = input_size
        for size in layer_sizes:
            layers += [nn.Linear(current, size), nn.ReLU()]
            current = size
        layers.append(nn.Linear(current, output_size))
        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


batch_size = 1
input_size = {1000 + n}
layer_sizes = [400, 800, {200 + n}]
output_size = 500
''' + FOOTER_LIST.format(inputs="torch.randn(batch_size, input_size)", init="input_size, layer_sizes, output_size")


def _cnn(n: int) -> str:
    return f'''    def __init__(self, num_classes):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 64, 3, padding=1), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(64, 128, 3, padding=1), nn.BatchNorm2d(128), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(128, {128 + n}, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1),
        )
        self.classifier = nn.Linear({128 + n}, num_classes)

    def forward(self, x):
        return self.classifier(torch.flatten(self.features(x), 1))


batch_size = 10
num_classes = 1000
''' + FOOTER_LIST.format(inputs="torch.randn(batch_size, 3, 224, 224)", init="num_classes")


def _rnn_cell(n: int) -> str:
    return f'''    def __init__(self, input_size, hidden_size, output_size):
        super().__init__()
        self.hidden = torch.randn((batch_size, hidden_size))
        self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
        self.h2o = nn.Linear(hidden_size, output_size)

    def forward(self, x):
        self.hidden = self.hidden.to(x.device)
        self.hidden = torch.tanh(self.i2h(torch.cat((x, self.hidden), dim=1)))
        return self.h2o(self.hidden)


batch_size = 8
input_size = 1024
hidden_size = {256 + n}
output_size = 128
''' + FOOTER_LIST.format(inputs="torch.randn(batch_size, input_size)", init="input_size, hidden_size, output_size")


def _attention(n: int) -> str:
    return f'''    def __init__(self, embed_dim, num_heads):
        super().__init__()
        self.num_heads = num_heads
        self.qkv = nn.Linear(embed_dim, 3 * embed_dim)
        self.out = nn.Linear(embed_dim, embed_dim)
        self.norm = nn.LayerNorm(embed_dim)
        self.mlp = nn.Sequential(nn.Linear(embed_dim, 4 * embed_dim), nn.GELU(), nn.Linear(4 * embed_dim, embed_dim))

    def forward(self, x):
        b, t, c = x.shape
        q, k, v = self.qkv(self.norm(x)).split(c, dim=2)
        q, k, v = (z.view(b, t, self.num_heads, c // self.num_heads).transpose(1, 2) for z in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(b, t, c)
        x = x + self.out(y)
        return x + self.mlp(self.norm(x))


batch_size = 8
seq_len = {512 + 16 * n}
embed_dim = 768
num_heads = 12
''' + FOOTER_LIST.format(inputs="torch.randn(batch_size, seq_len, embed_dim)", init="embed_dim, num_heads")


def write_checkout(dest: Path) -> Path:
    root = dest / "KernelBench-checkout"
    for level, names in problem_names().items():
        folder = root / "KernelBench" / f"level{level}"
        folder.mkdir(parents=True, exist_ok=True)
        for filename in names:
            (folder / filename).write_text(problem_source(level, filename), encoding="utf-8")
    if SHARED_TIMING.is_dir():
        shutil.copytree(SHARED_TIMING, root / "results" / "timing", dirs_exist_ok=True)
    return root


def run_import(args: list[str], env: dict[str, str], label: str) -> dict:
    """`kernelindex ingest kernelbench …` as a child: wall time, exit status, its table and what it traced."""
    start = time.perf_counter()
    proc = subprocess.run(
        [sys.executable, "-c", "import sys; from kernelindex.cli.main import main; sys.exit(main())", *args],
        env=env, capture_output=True, text=True,
    )
    wall = time.perf_counter() - start
    traced = re.search(r"tracing (\d+) problems on the meta device(?: \((\d+) unchanged)?", proc.stderr)
    table = {}
    for line in proc.stdout.splitlines():
        name, _, value = line.rpartition(" ")
        if name.strip() and value.replace(",", "").isdigit():
            table[name.strip()] = int(value.replace(",", ""))
    result = {"label": label, "exit": proc.returncode, "wall_s": round(wall, 2),
              "traced": int(traced[1]) if traced else None, "reused": int(traced[2] or 0) if traced else None,
              "without_semantics": table.get("workloads without semantics"), "table": table}
    if proc.returncode != 0 or result["without_semantics"]:
        result["stderr_tail"] = proc.stderr[-3000:]
    return result


def profile_warm_import(url: str, checkout: Path, top: int = 25) -> str:
    from kernelindex.ingest.kernelbench import import_kernelbench

    profiler = cProfile.Profile()
    start = time.perf_counter()
    profiler.enable()
    import_kernelbench(url, checkout, revision=KB_ARGS[1], observed=KB_ARGS[3], progress=False)
    profiler.disable()
    out = io.StringIO()
    out.write(f"warm import in-process: {time.perf_counter() - start:.2f} s\n")
    pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(top)
    return out.getvalue()


def tracing_speedup(checkout: Path, workers: int) -> dict:
    """trace_problems_isolated over every problem at 1 worker and at `workers`: wall times, same results."""
    from kernelindex.ingest.problem_trace import ProblemTrace, trace_problems_isolated

    items = [(path.read_text(), path.name) for path in sorted(checkout.glob("KernelBench/level*/*.py"))]
    figures: dict = {"problems": len(items)}
    results = {}
    for count in sorted({1, workers}):
        start = time.perf_counter()
        traced = trace_problems_isolated(items, 60, count)
        figures[f"workers_{count}_s"] = round(time.perf_counter() - start, 2)
        results[count] = [t.to_json() if isinstance(t, ProblemTrace) else str(t) for t in traced]
        figures[f"workers_{count}_failed"] = sum(not isinstance(t, ProblemTrace) for t in traced)
    figures["same_results"] = all(r == results[1] for r in results.values())
    if workers > 1:
        figures["speedup"] = round(figures["workers_1_s"] / figures[f"workers_{workers}_s"], 2)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.kernelbench_import", description=__doc__.split("\n\n")[0])
    parser.add_argument("--skip-speedup", action="store_true", help="do not compare 1 worker with every core")
    parser.add_argument("--profile", action="store_true", help="cProfile a warm import in this process")
    parser.add_argument("--write-checkout", metavar="DIR", help="write the synthetic checkout under DIR and stop")
    parser.add_argument("--keep", action="store_true", help="keep the temporary folder")
    parser.add_argument("--json", action="store_true", help="print the figures as one JSON object")
    args = parser.parse_args(argv)

    if args.write_checkout:
        root = write_checkout(Path(args.write_checkout))
        print(f"wrote {sum(1 for _ in root.glob('KernelBench/level*/*.py'))} problem files under {root}")
        return 0

    from kernelindex.db.embedded import EmbeddedPostgres
    from kernelindex.db.migrate import upgrade
    from kernelindex.ingest.problem_trace import available_cores
    from kernelindex.ingest.seed import seed_database

    tmp = Path(tempfile.mkdtemp(prefix="kernelindex-kb-import-"))
    tmp.chmod(0o755)  # the server may run as another user
    server = None
    figures: dict = {"cores": available_cores()}
    try:
        server = EmbeddedPostgres(tmp / "db", delete_on_stop=True)
        url = server.url
        upgrade(url)
        asyncio.run(seed_database(url))
        checkout = write_checkout(tmp)
        figures["problems"] = sum(1 for _ in checkout.glob("KernelBench/level*/*.py"))
        figures["shared_timing_files"] = SHARED_TIMING.is_dir()
        env = dict(os.environ, KERNELINDEX_DATABASE_URL=url, PYTHONPATH=str(REPO_ROOT))
        command = ["ingest", "kernelbench", str(checkout), *KB_ARGS]
        figures["cold"] = run_import(command, env, "cold (every problem traced)")
        figures["warm"] = run_import(command, env, "warm (unchanged checkout)")
        if args.profile:
            figures["profile"] = profile_warm_import(url, checkout)
        changed = checkout / "KernelBench" / "level1" / sorted(p.name for p in (checkout / "KernelBench" / "level1").glob("*.py"))[0]
        changed.write_text(changed.read_text() + "\n# edited upstream\n")
        figures["one_changed"] = run_import(
            ["ingest", "kernelbench", str(checkout), "--revision", "5ca1ab1", "--observed", "2026-04-01"], env,
            f"one problem changed ({changed.name})",
        )
        if not args.skip_speedup:
            figures["speedup"] = tracing_speedup(checkout, figures["cores"])
    finally:
        if server is not None and not args.keep:
            server.stop()
        if not args.keep:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print(f"kept {tmp}", file=sys.stderr)

    if args.json:
        print(json.dumps(figures, indent=2))
        return 0
    print(f"{figures['problems']} problems, {figures['cores']} cores, shared timing files: {figures['shared_timing_files']}")
    for key in ("cold", "warm", "one_changed"):
        part = figures[key]
        print(f"{part['label']}: exit {part['exit']}, {part['wall_s']} s; traced {part['traced']}, reused {part['reused']}, "
              f"without semantics {part['without_semantics']}")
        if "stderr_tail" in part:
            print("    stderr: " + part["stderr_tail"].replace("\n", "\n    "))
    if "speedup" in figures:
        print(f"tracing alone: {json.dumps(figures['speedup'])}")
    if "profile" in figures:
        print(figures["profile"])
    return 0


if __name__ == "__main__":
    sys.exit(main())
