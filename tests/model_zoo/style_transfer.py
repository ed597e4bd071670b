"""Fast neural style transfer (Johnson et al., 2016): an image transformation network of
reflection-padded convolutions with instance normalization, residual blocks, and nearest
neighbour upsampling followed by convolution (instead of transposed convolutions). Trained with
a content loss and a Gram-matrix style loss.
"""
import numpy as np
import torch


class ConvLayer(torch.nn.Module):
    def __init__(self, in_channels, out_channels, kernel_size, stride):
        super(ConvLayer, self).__init__()
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        out = self.reflection_pad(x)
        out = self.conv2d(out)
        return out


class ResidualBlock(torch.nn.Module):
    """introduced in https://arxiv.org/abs/1512.03385"""

    def __init__(self, channels):
        super(ResidualBlock, self).__init__()
        self.conv1 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.conv2 = ConvLayer(channels, channels, kernel_size=3, stride=1)
        self.in2 = torch.nn.InstanceNorm2d(channels, affine=True)
        self.relu = torch.nn.ReLU()

    def forward(self, x):
        residual = x
        out = self.relu(self.in1(self.conv1(x)))
        out = self.in2(self.conv2(out))
        out = out + residual
        return out


class UpsampleConvLayer(torch.nn.Module):
    """Upsamples the input and then does a convolution; fewer checkerboard artifacts than a
    transposed convolution (http://distill.pub/2016/deconv-checkerboard/)."""

    def __init__(self, in_channels, out_channels, kernel_size, stride, upsample=None):
        super(UpsampleConvLayer, self).__init__()
        self.upsample = upsample
        if upsample:
            self.upsample_layer = torch.nn.Upsample(scale_factor=upsample, mode='nearest')
        reflection_padding = kernel_size // 2
        self.reflection_pad = torch.nn.ReflectionPad2d(reflection_padding)
        self.conv2d = torch.nn.Conv2d(in_channels, out_channels, kernel_size, stride)

    def forward(self, x):
        x_in = x
        if self.upsample:
            x_in = self.upsample_layer(x_in)
        out = self.reflection_pad(x_in)
        out = self.conv2d(out)
        return out


class TransformerNet(torch.nn.Module):
    def __init__(self, c=32, n_residual=5):
        super(TransformerNet, self).__init__()
        # Initial convolution layers
        self.conv1 = ConvLayer(3, c, kernel_size=9, stride=1)
        self.in1 = torch.nn.InstanceNorm2d(c, affine=True)
        self.conv2 = ConvLayer(c, 2 * c, kernel_size=3, stride=2)
        self.in2 = torch.nn.InstanceNorm2d(2 * c, affine=True)
        self.conv3 = ConvLayer(2 * c, 4 * c, kernel_size=3, stride=2)
        self.in3 = torch.nn.InstanceNorm2d(4 * c, affine=True)
        # Residual layers
        self.res = torch.nn.Sequential(*[ResidualBlock(4 * c) for _ in range(n_residual)])
        # Upsampling Layers
        self.deconv1 = UpsampleConvLayer(4 * c, 2 * c, kernel_size=3, stride=1, upsample=2)
        self.in4 = torch.nn.InstanceNorm2d(2 * c, affine=True)
        self.deconv2 = UpsampleConvLayer(2 * c, c, kernel_size=3, stride=1, upsample=2)
        self.in5 = torch.nn.InstanceNorm2d(c, affine=True)
        self.deconv3 = ConvLayer(c, 3, kernel_size=9, stride=1)
        # Non-linearities
        self.relu = torch.nn.ReLU()

    def forward(self, X):
        y = self.relu(self.in1(self.conv1(X)))
        y = self.relu(self.in2(self.conv2(y)))
        y = self.relu(self.in3(self.conv3(y)))
        y = self.res(y)
        y = self.relu(self.in4(self.deconv1(y)))
        y = self.relu(self.in5(self.deconv2(y)))
        y = self.deconv3(y)
        return y


def gram_matrix(y):
    (b, ch, h, w) = y.size()
    features = y.view(b, ch, w * h)
    features_t = features.transpose(1, 2)
    gram = features.bmm(features_t) / (ch * h * w)
    return gram


def normalize_batch(batch):
    # normalize using imagenet mean and std
    mean = batch.new_tensor([0.485, 0.456, 0.406]).view(-1, 1, 1)
    std = batch.new_tensor([0.229, 0.224, 0.225]).view(-1, 1, 1)
    batch = batch.div_(255.0)
    return (batch - mean) / std


# ---------------------------------------------------------------- training and stylizing
def build_model():
    return TransformerNet(c=4, n_residual=2)


def example_inputs():
    rng = np.random.default_rng(130)
    return (rng.uniform(0, 255, (1, 3, 16, 12)).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(131)
    content = rng.uniform(0, 255, (2, 3, 16, 16)).astype(np.float32)
    return content, rng.uniform(0, 255, (1, 3, 16, 16)).astype(np.float32)


def train_state(model):
    return torch.optim.Adam(model.parameters(), 1e-3), torch.nn.MSELoss()


def train_step(transformer, state, x, style):
    optimizer, mse_loss = state
    content_weight, style_weight = 1e5, 1e10
    n_batch = len(x)
    optimizer.zero_grad()

    y = transformer(x)

    # the "features" here are the normalized images themselves (a VGG in the real recipe)
    features_y = normalize_batch(y)
    features_x = normalize_batch(x.clone())
    gram_style = gram_matrix(normalize_batch(style.clone()))

    content_loss = content_weight * mse_loss(features_y, features_x)
    gm_y = gram_matrix(features_y)
    style_loss = style_weight * mse_loss(gm_y, gram_style[:n_batch, :, :].expand_as(gm_y)) / 1e6

    total_loss = content_loss + style_loss
    total_loss.backward()
    optimizer.step()
    return content_loss.item(), style_loss.item()


def decode_inputs():
    rng = np.random.default_rng(132)
    return (rng.uniform(0, 255, (3, 12, 16)).astype(np.float32),)


def decode(style_model, content_image):
    content_image = torch.from_numpy(content_image).unsqueeze(0)
    with torch.no_grad():
        output = style_model(content_image).cpu()
    img = output[0].clone().clamp(0, 255).numpy()
    return img.transpose(1, 2, 0)  # HWC, ready for Image.fromarray(img.astype("uint8"))
