"""U-Net (Ronneberger et al., 2015) for semantic segmentation: a contracting path of double
convolutions and max pooling, an expanding path of bilinear upsampling, padding to the skip
connection's size and concatenation; trained with cross-entropy plus a Dice loss.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import optim


class DoubleConv(nn.Module):
    """(convolution => [BN] => ReLU) * 2"""

    def __init__(self, in_channels, out_channels, mid_channels=None):
        super().__init__()
        if not mid_channels:
            mid_channels = out_channels
        self.double_conv = nn.Sequential(
            nn.Conv2d(in_channels, mid_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(mid_channels),
            nn.ReLU(inplace=True),
            nn.Conv2d(mid_channels, out_channels, kernel_size=3, padding=1, bias=False),
            nn.BatchNorm2d(out_channels),
            nn.ReLU(inplace=True)
        )

    def forward(self, x):
        return self.double_conv(x)


class Down(nn.Module):
    """Downscaling with maxpool then double conv"""

    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.maxpool_conv = nn.Sequential(
            nn.MaxPool2d(2),
            DoubleConv(in_channels, out_channels)
        )

    def forward(self, x):
        return self.maxpool_conv(x)


class Up(nn.Module):
    """Upscaling then double conv"""

    def __init__(self, in_channels, out_channels, bilinear=True):
        super().__init__()
        # bilinear upsampling keeps the channels; a transposed convolution halves them
        if bilinear:
            self.up = nn.Upsample(scale_factor=2, mode='bilinear', align_corners=True)
            self.conv = DoubleConv(in_channels, out_channels, in_channels // 2)
        else:
            self.up = nn.ConvTranspose2d(in_channels, in_channels // 2, kernel_size=2, stride=2)
            self.conv = DoubleConv(in_channels, out_channels)

    def forward(self, x1, x2):
        x1 = self.up(x1)
        # input is CHW
        diffY = x2.size()[2] - x1.size()[2]
        diffX = x2.size()[3] - x1.size()[3]

        x1 = F.pad(x1, [diffX // 2, diffX - diffX // 2,
                        diffY // 2, diffY - diffY // 2])
        x = torch.cat([x2, x1], dim=1)
        return self.conv(x)


class OutConv(nn.Module):
    def __init__(self, in_channels, out_channels):
        super(OutConv, self).__init__()
        self.conv = nn.Conv2d(in_channels, out_channels, kernel_size=1)

    def forward(self, x):
        return self.conv(x)


class UNet(nn.Module):
    def __init__(self, n_channels, n_classes, bilinear=False, base=64):
        super(UNet, self).__init__()
        self.n_channels = n_channels
        self.n_classes = n_classes
        self.bilinear = bilinear
        factor = 2 if bilinear else 1

        self.inc = DoubleConv(n_channels, base)
        self.down1 = Down(base, base * 2)
        self.down2 = Down(base * 2, base * 4 // factor)
        self.up1 = Up(base * 4, base * 2 // factor, bilinear)
        self.up2 = Up(base * 2, base, bilinear)
        self.outc = OutConv(base, n_classes)

    def forward(self, x):
        x1 = self.inc(x)
        x2 = self.down1(x1)
        x3 = self.down2(x2)
        x = self.up1(x3, x2)
        x = self.up2(x, x1)
        logits = self.outc(x)
        return logits


def dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    # Average of Dice coefficient for all batches, or for all images
    assert input.size() == target.size()
    assert input.dim() == 3 or not reduce_batch_first

    sum_dim = (-1, -2) if input.dim() == 2 or not reduce_batch_first else (-1, -2, -3)

    inter = 2 * (input * target).sum(dim=sum_dim)
    sets_sum = input.sum(dim=sum_dim) + target.sum(dim=sum_dim)
    sets_sum = torch.where(sets_sum == 0, inter, sets_sum)

    dice = (inter + epsilon) / (sets_sum + epsilon)
    return dice.mean()


def multiclass_dice_coeff(input, target, reduce_batch_first=False, epsilon=1e-6):
    return dice_coeff(input.flatten(0, 1), target.flatten(0, 1), reduce_batch_first, epsilon)


def dice_loss(input, target, multiclass=False):
    fn = multiclass_dice_coeff if multiclass else dice_coeff
    return 1 - fn(input, target, reduce_batch_first=True)


# ---------------------------------------------------------------- training and prediction
N_CLASSES = 3


def build_model():
    return UNet(n_channels=3, n_classes=N_CLASSES, bilinear=True, base=4)


def example_inputs():
    # 18x18: the pooled 9x9 map pools to 4x4, whose upsampled 8x8 is padded back to 9x9
    rng = np.random.default_rng(180)
    return (rng.standard_normal((2, 3, 18, 18)).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(181)
    images = rng.standard_normal((2, 3, 18, 18)).astype(np.float32)
    return images, rng.integers(0, N_CLASSES, (2, 18, 18)).astype(np.int64)


def train_state(model):
    optimizer = optim.RMSprop(model.parameters(), lr=1e-3, weight_decay=1e-8, momentum=0.999)
    return optimizer, nn.CrossEntropyLoss()


def train_step(model, state, images, true_masks):
    optimizer, criterion = state
    model.train()
    masks_pred = model(images)
    loss = criterion(masks_pred, true_masks)
    loss += dice_loss(
        F.softmax(masks_pred, dim=1).float(),
        F.one_hot(true_masks, model.n_classes).permute(0, 3, 1, 2).float(),
        multiclass=True
    )
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    return loss.item()


def decode_inputs():
    rng = np.random.default_rng(182)
    return rng.standard_normal((1, 3, 18, 18)).astype(np.float32), rng.integers(0, N_CLASSES, (1, 18, 18))


@torch.inference_mode()
def decode(net, image, mask_true):
    """The predicted mask and its Dice score against the true one."""
    image, mask_true = torch.from_numpy(image), torch.from_numpy(mask_true)
    mask_pred = net(image)
    mask = mask_pred.argmax(dim=1)
    mask_true = F.one_hot(mask_true, net.n_classes).permute(0, 3, 1, 2).float()
    mask_onehot = F.one_hot(mask, net.n_classes).permute(0, 3, 1, 2).float()
    dice = multiclass_dice_coeff(mask_onehot[:, 1:], mask_true[:, 1:], reduce_batch_first=False)
    return mask, dice.item()
