"""KernelIndex reference module for KernelBench level 3 problem 12 (VGG19), written for this project."""

import torch
import torch.nn as nn

# Output channels of each 3x3 convolution; "M" is a 2x2 max pool with stride 2.
LAYOUT = [64, 64, "M", 128, 128, "M", 256, 256, 256, 256, "M", 512, 512, 512, 512, "M", 512, 512, 512, 512, "M"]


class Model(nn.Module):
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
        # Five 2x2 pools take a 224x224 image down to 7x7.
        self.classifier = nn.Sequential(
            nn.Linear(512 * 7 * 7, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=0.0),
            nn.Linear(4096, 4096),
            nn.ReLU(inplace=True),
            nn.Dropout(p=0.0),
            nn.Linear(4096, num_classes),
        )

    def forward(self, x):
        x = torch.flatten(self.features(x), 1)
        return self.classifier(x)


batch_size = 10
num_classes = 1000


def get_inputs():
    return [torch.randn(batch_size, 3, 224, 224)]


def get_init_inputs():
    return [num_classes]
