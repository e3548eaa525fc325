"""VGG19 (KernelBench level 3 problem 12) as a fleet candidate: the reference's own layers, replayed on CUDA
as one captured CUDA graph.

Honest by construction: ``ModelNew(num_classes)`` builds the very layers of seeds/reference/vgg19.py in the
same order, so under the harness's seed it holds the same weights; on CUDA the first call captures one
forward pass into a CUDA graph (after warm-up calls on a side stream) and every call copies its input into
the graph's input buffer, replays the graph and returns a clone of its output. The same cuDNN and cuBLAS
kernels run on the same data, so the output matches the reference at the fp32 tolerance; only the CPU's
kernel-launch cost is saved, which matters little for VGG19 at batch 10 (its convolutions dominate): an
honest candidate is not always a faster one. No global setting is changed. On a CPU there is no graph: the
layers run eagerly (a smoke test only).
"""

import torch
import torch.nn as nn

# Output channels of each 3x3 convolution; "M" is a 2x2 max pool with stride 2 (as the reference).
LAYOUT = [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"]
WARMUP_CALLS = 3  # before capture: lazy cuDNN/cuBLAS set-up must not happen inside the graph


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
        layers = []
        in_channels = 3
        for entry in LAYOUT:
            if entry == "M":
                layers.append(nn.MaxPool2d(kernel_size=2, stride=2))
            else:
                layers.append(nn.Conv2d(in_channels, entry, kernel_size=3, padding=1))
                layers.append(nn.ReLU(inplace=True))
                in_channels = entry
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=0.0),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=0.0),
            nn.Linear(4096, num_classes),
        )
        self._replay = None

    def _eager(self, x):
        x = torch.flatten(self.features(x), 1)
        return self.classifier(x)

    def forward(self, x):
        if x.device.type != "cuda":
            return self._eager(x)
        if self._replay is None or self._replay.key != (tuple(x.shape), x.dtype, x.device):
            self._replay = _Replay(self._eager, x)
        return self._replay(x)
