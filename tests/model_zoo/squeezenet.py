"""SqueezeNet 1.1 (Iandola et al., 2016): Fire modules (a 1x1 squeeze, then 1x1 and 3x3
expands concatenated), max pooling with ceil_mode, and a convolutional classifier followed by
global average pooling -- no fully connected layer.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.init as init


class Fire(nn.Module):

    def __init__(self, inplanes, squeeze_planes, expand1x1_planes, expand3x3_planes):
        super().__init__()
        self.inplanes = inplanes
        self.squeeze = nn.Conv2d(inplanes, squeeze_planes, kernel_size=1)
        self.squeeze_activation = nn.ReLU(inplace=True)
        self.expand1x1 = nn.Conv2d(squeeze_planes, expand1x1_planes, kernel_size=1)
        self.expand1x1_activation = nn.ReLU(inplace=True)
        self.expand3x3 = nn.Conv2d(squeeze_planes, expand3x3_planes, kernel_size=3, padding=1)
        self.expand3x3_activation = nn.ReLU(inplace=True)

    def forward(self, x):
        x = self.squeeze_activation(self.squeeze(x))
        return torch.cat([
            self.expand1x1_activation(self.expand1x1(x)),
            self.expand3x3_activation(self.expand3x3(x))
        ], 1)


class SqueezeNet(nn.Module):

    def __init__(self, num_classes=1000, base=16, dropout=0.5):
        super().__init__()
        self.num_classes = num_classes
        b = base
        self.features = nn.Sequential(
            nn.Conv2d(3, 4 * b, kernel_size=3, stride=2),
            nn.ReLU(inplace=True),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(4 * b, b, 4 * b, 4 * b),
            Fire(8 * b, b, 4 * b, 4 * b),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(8 * b, 2 * b, 8 * b, 8 * b),
            Fire(16 * b, 2 * b, 8 * b, 8 * b),
            nn.MaxPool2d(kernel_size=3, stride=2, ceil_mode=True),
            Fire(16 * b, 3 * b, 12 * b, 12 * b),
            Fire(24 * b, 4 * b, 16 * b, 16 * b),
        )

        # the last convolution maps features to class scores
        final_conv = nn.Conv2d(32 * b, self.num_classes, kernel_size=1)
        self.classifier = nn.Sequential(
            nn.Dropout(p=dropout),
            final_conv,
            nn.ReLU(inplace=True),
            nn.AdaptiveAvgPool2d((1, 1))
        )

        for m in self.modules():
            if isinstance(m, nn.Conv2d):
                if m is final_conv:
                    init.normal_(m.weight, mean=0.0, std=0.01)
                else:
                    init.kaiming_uniform_(m.weight)
                if m.bias is not None:
                    init.constant_(m.bias, 0)

    def forward(self, x):
        x = self.features(x)
        x = self.classifier(x)
        return torch.flatten(x, 1)


# ---------------------------------------------------------------- training and evaluation
NUM_CLASSES = 6


def build_model():
    # 1/8 of the channels, dropout off so that a training step is repeatable
    return SqueezeNet(num_classes=NUM_CLASSES, base=2, dropout=0.0)


def example_inputs():
    # 35x35: every max pool meets a size that ceil_mode rounds up
    rng = np.random.default_rng(40)
    return (rng.uniform(0, 1, (2, 3, 35, 35)).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(41)
    return rng.uniform(0, 1, (3, 3, 35, 35)).astype(np.float32), rng.integers(0, NUM_CLASSES, 3).astype(np.int64)


def train_state(model):
    return torch.optim.SGD(model.parameters(), lr=0.04, momentum=0.9, weight_decay=2e-4)


def train_step(model, optimizer, inputs, targets):
    optimizer.zero_grad()
    outputs = model(inputs)
    loss = torch.nn.functional.cross_entropy(outputs, targets)
    loss.backward()
    optimizer.step()
    _, predicted = outputs.max(1)
    correct = predicted.eq(targets).sum().item()
    return loss.item(), correct


def decode_inputs():
    rng = np.random.default_rng(42)
    return (rng.uniform(0, 1, (5, 3, 35, 35)).astype(np.float32),)


def decode(model, images):
    images = torch.tensor(images)
    with torch.no_grad():
        return model(images).argmax(dim=1)
