"""A deep convolutional GAN (Radford et al., 2015): a generator of transposed convolutions with
batch norm and ReLU ending in tanh, a discriminator of strided convolutions with LeakyReLU
ending in a sigmoid; both trained with binary cross-entropy and Adam(beta1=0.5).
"""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

nc = 3   # channels of the images
nz = 16  # size of the latent vector
real_label = 1.
fake_label = 0.


# custom weights initialization called on netG and netD
def weights_init(m):
    classname = m.__class__.__name__
    if classname.find('Conv') != -1:
        nn.init.normal_(m.weight.data, 0.0, 0.02)
    elif classname.find('BatchNorm') != -1:
        nn.init.normal_(m.weight.data, 1.0, 0.02)
        nn.init.constant_(m.bias.data, 0)


class Generator(nn.Module):
    def __init__(self, ngf=64):
        super(Generator, self).__init__()
        self.main = nn.Sequential(
            # input is Z, going into a convolution
            nn.ConvTranspose2d(nz, ngf * 4, 4, 1, 0, bias=False),
            nn.BatchNorm2d(ngf * 4),
            nn.ReLU(True),
            # state size. (ngf*4) x 4 x 4
            nn.ConvTranspose2d(ngf * 4, ngf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ngf * 2),
            nn.ReLU(True),
            # state size. (ngf*2) x 8 x 8
            nn.ConvTranspose2d(ngf * 2, nc, 4, 2, 1, bias=False),
            nn.Tanh()
            # state size. (nc) x 16 x 16
        )

    def forward(self, input):
        return self.main(input)


class Discriminator(nn.Module):
    def __init__(self, ndf=64):
        super(Discriminator, self).__init__()
        self.main = nn.Sequential(
            # input is (nc) x 16 x 16
            nn.Conv2d(nc, ndf, 4, 2, 1, bias=False),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf) x 8 x 8
            nn.Conv2d(ndf, ndf * 2, 4, 2, 1, bias=False),
            nn.BatchNorm2d(ndf * 2),
            nn.LeakyReLU(0.2, inplace=True),
            # state size. (ndf*2) x 4 x 4
            nn.Conv2d(ndf * 2, 1, 4, 1, 0, bias=False),
            nn.Sigmoid()
        )

    def forward(self, input):
        output = self.main(input)
        return output.view(-1, 1).squeeze(1)


class GAN(nn.Module):
    def __init__(self, ngf=64, ndf=64):
        super().__init__()
        self.netG = Generator(ngf)
        self.netG.apply(weights_init)
        self.netD = Discriminator(ndf)
        self.netD.apply(weights_init)

    def forward(self, noise):
        fake = self.netG(noise)
        return fake, self.netD(fake)


def make_grid(images, nrow=4, padding=1):
    """Images (N, C, H, W) in [-1, 1] tiled into one (C, rows*H, nrow*W) array in [0, 1]."""
    images = (images + 1) / 2
    n, c, h, w = images.shape
    rows = (n + nrow - 1) // nrow
    grid = np.zeros((c, rows * (h + padding) + padding, nrow * (w + padding) + padding), np.float32)
    for i in range(n):
        r, k = divmod(i, nrow)
        top, left = padding + r * (h + padding), padding + k * (w + padding)
        grid[:, top:top + h, left:left + w] = images[i]
    return grid


# ---------------------------------------------------------------- training and sampling
STATIC_MODULES = ("netG", "netD")  # the parts the training loop calls


def build_model():
    return GAN(ngf=4, ndf=4)


def example_inputs():
    rng = np.random.default_rng(160)
    return (rng.standard_normal((2, nz, 1, 1)).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(161)
    real = np.tanh(rng.standard_normal((4, nc, 16, 16))).astype(np.float32)
    noise = rng.standard_normal((4, nz, 1, 1)).astype(np.float32)
    return real, noise


def train_state(model):
    lr = 0.0002
    optimizerD = optim.Adam(model.netD.parameters(), lr=lr, betas=(0.5, 0.999))
    optimizerG = optim.Adam(model.netG.parameters(), lr=lr, betas=(0.5, 0.999))
    return optimizerD, optimizerG, nn.BCELoss()


def train_step(model, state, real_cpu, noise):
    optimizerD, optimizerG, criterion = state
    netD, netG = model.netD, model.netG
    ############################
    # (1) Update D network: maximize log(D(x)) + log(1 - D(G(z)))
    ###########################
    # train with real
    netD.zero_grad()
    b_size = real_cpu.size(0)
    label = torch.full((b_size,), real_label, dtype=real_cpu.dtype)

    output = netD(real_cpu)
    errD_real = criterion(output, label)
    errD_real.backward()
    D_x = output.mean().item()

    # train with fake
    fake = netG(noise)
    label.fill_(fake_label)
    output = netD(fake.detach())
    errD_fake = criterion(output, label)
    errD_fake.backward()
    D_G_z1 = output.mean().item()
    errD = errD_real + errD_fake
    optimizerD.step()

    ############################
    # (2) Update G network: maximize log(D(G(z)))
    ###########################
    netG.zero_grad()
    label.fill_(real_label)  # fake labels are real for generator cost
    output = netD(fake)
    errG = criterion(output, label)
    errG.backward()
    D_G_z2 = output.mean().item()
    optimizerG.step()
    return errD.item(), errG.item(), D_x, D_G_z1, D_G_z2


def decode_inputs():
    rng = np.random.default_rng(162)
    return (rng.standard_normal((6, nz, 1, 1)).astype(np.float32),)


def decode(model, fixed_noise):
    with torch.no_grad():
        fake = model.netG(torch.from_numpy(fixed_noise)).detach().cpu()
    return make_grid(fake.numpy(), nrow=3)
