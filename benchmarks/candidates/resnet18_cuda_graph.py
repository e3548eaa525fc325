"""ResNet18 (KernelBench level 3 problem 9) as a fleet candidate: the reference's own layers, replayed on
CUDA as one captured CUDA graph.

Honest by construction: ``ModelNew(num_classes)`` builds the very layers of seeds/reference/resnet18.py in
the same order, so under the harness's seed it holds the same weights; on CUDA the first call captures one
forward pass into a CUDA graph (after warm-up calls on a side stream, as torch's CUDA-graph notes ask) and
every call copies its input into the graph's input buffer, replays the graph and returns a clone of its
output. The same cuDNN and cuBLAS kernels run on the same data, so the output matches the reference at the
fp32 tolerance; what is saved is the CPU's launch cost of some sixty kernels, which dominates at batch 2.
No global setting is changed. On a CPU there is no graph: the layers run eagerly (a smoke test only).
"""

import torch
import torch.nn as nn

WARMUP_CALLS = 3  # before capture: lazy cuDNN/cuBLAS set-up must not happen inside the graph


class BasicBlock(nn.Module):
    expansion = 1

    def __init__(self, in_channels, out_channels, stride=1):
        super().__init__()
        self.conv1 = nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=stride, padding=1, bias=False)
        self.bn1 = nn.BatchNorm2d(out_channels)
        self.relu = nn.ReLU(inplace=True)
        self.conv2 = nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=1, padding=1, bias=False)
        self.bn2 = nn.BatchNorm2d(out_channels)
        self.shortcut = None
        if stride != 1 or in_channels != out_channels:
            self.shortcut = nn.Sequential(
                nn.Conv2d(in_channels, out_channels, kernel_size=1, stride=stride, bias=False),
                nn.BatchNorm2d(out_channels),
            )

    def forward(self, x):
        identity = x if self.shortcut is None else self.shortcut(x)
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return self.relu(out + identity)


class _Replay:
    """One CUDA graph of ``function`` captured for inputs shaped like ``example``."""

    def __init__(self, function, example):
        self.key = (tuple(example.shape), example.dtype, example.device)
        self.static_input = example.clone()
        device = example.device
        side = torch.cuda.Stream(device)
        side.wait_stream(torch.cuda.current_stream(device))
        with torch.cuda.stream(side):
            for _ in range(WARMUP_CALLS):
                function(self.static_input)
        torch.cuda.current_stream(device).wait_stream(side)
        self.graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(self.graph):
            self.static_output = function(self.static_input)

    def __call__(self, x):
        self.static_input.copy_(x)
        self.graph.replay()
        return self.static_output.clone()  # the graph's buffer is overwritten by the next replay


class ModelNew(nn.Module):
    def __init__(self, num_classes=1000):
        super().__init__()
        self.stem = nn.Sequential(
            nn.Conv2d(3, 64, kernel_size=7, stride=2, padding=3, bias=False),
            nn.BatchNorm2d(64),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, padding=1),
        )
        stage_widths = [64, 128, 256, 512]
        blocks_per_stage = [2, 2, 2, 2]
        stages = []
        in_channels = 64
        for stage_index, (width, num_blocks) in enumerate(zip(stage_widths, blocks_per_stage)):
            first_stride = 1 if stage_index == 0 else 2
            blocks = []
            for block_index in range(num_blocks):
                blocks.append(BasicBlock(in_channels, width, first_stride if block_index == 0 else 1))
                in_channels = width
            stages.append(nn.Sequential(*blocks))
        self.stages = nn.Sequential(*stages)
        self.pool = nn.AdaptiveAvgPool2d((1, 1))
        self.fc = nn.Linear(512, num_classes)
        self._replay = None

    def _eager(self, x):
        x = self.stages(self.stem(x))
        x = torch.flatten(self.pool(x), 1)
        return self.fc(x)

    def forward(self, x):
        if x.device.type != "cuda":
            return self._eager(x)
        if self._replay is None or self._replay.key != (tuple(x.shape), x.dtype, x.device):
            self._replay = _Replay(self._eager, x)
        return self._replay(x)
