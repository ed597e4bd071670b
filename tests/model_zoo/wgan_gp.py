"""WGAN-GP (Gulrajani et al., 2017) on small images, as the authors' PyTorch port writes it: a
convolutional critic without batch norm, a generator of transposed convolutions, Adam with
betas (0.0, 0.9), CRITIC_ITERS critic updates per generator update, and the gradient penalty:
the critic's gradient at random interpolates of real and fake images through
torch.autograd.grad(create_graph=True), its norm pushed to 1.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim
from torch import autograd

DIM = 8          # model width
NZ = 16          # size of the noise
LAMBDA = 10      # gradient penalty lambda hyperparameter
CRITIC_ITERS = 2  # how many critic iterations per generator iteration


class Generator(nn.Module):
    def __init__(self):
        super(Generator, self).__init__()
        self.preprocess = nn.Sequential(
            nn.Linear(NZ, 4 * 2 * 2 * DIM),
            nn.ReLU(True),
        )
        self.block1 = nn.Sequential(
            nn.ConvTranspose2d(4 * DIM, 2 * DIM, 2, stride=2),
            nn.ReLU(True),
        )
        self.deconv_out = nn.ConvTranspose2d(2 * DIM, 1, 2, stride=2)
        self.tanh = nn.Tanh()

    def forward(self, input):
        output = self.preprocess(input)
        output = output.view(-1, 4 * DIM, 2, 2)
        output = self.block1(output)
        output = self.deconv_out(output)
        return self.tanh(output)


class Discriminator(nn.Module):
    def __init__(self):
        super(Discriminator, self).__init__()
        self.main = nn.Sequential(
            nn.Conv2d(1, DIM, 3, stride=2, padding=1),
            nn.LeakyReLU(0.2),
            nn.Conv2d(DIM, 2 * DIM, 3, stride=2, padding=1),
            nn.LeakyReLU(0.2),
        )
        self.output = nn.Linear(2 * 2 * 2 * DIM, 1)

    def forward(self, input):
        out = self.main(input)
        out = out.view(-1, 2 * 2 * 2 * DIM)
        out = self.output(out)
        return out.view(-1)


class WGAN(nn.Module):
    def __init__(self):
        super().__init__()
        self.netG = Generator()
        self.netD = Discriminator()

    def forward(self, noise):
        fake = self.netG(noise)
        return fake, self.netD(fake)


def calc_gradient_penalty(netD, real_data, fake_data, alpha=None):
    if alpha is None:
        alpha = torch.rand(real_data.size(0), 1, 1, 1)
    alpha = alpha.expand(real_data.size())

    interpolates = alpha * real_data + ((1 - alpha) * fake_data)
    interpolates.requires_grad_(True)

    disc_interpolates = netD(interpolates)

    gradients = autograd.grad(outputs=disc_interpolates, inputs=interpolates,
                              grad_outputs=torch.ones(disc_interpolates.size()),
                              create_graph=True, retain_graph=True, only_inputs=True)[0]
    gradients = gradients.view(gradients.size(0), -1)

    gradient_penalty = ((gradients.norm(2, dim=1) - 1) ** 2).mean() * LAMBDA
    return gradient_penalty


# ---------------------------------------------------------------- training and sampling
STATIC_MODULES = ("netG", "netD")  # the parts the training loop calls


def build_model():
    return WGAN()


def example_inputs():
    rng = np.random.default_rng(340)
    return (rng.standard_normal((3, NZ)).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(341)
    real = np.tanh(2 * rng.standard_normal((CRITIC_ITERS, 4, 1, 8, 8))).astype(np.float32)
    noise = rng.standard_normal((CRITIC_ITERS + 1, 4, NZ)).astype(np.float32)
    # the interpolation weights torch.rand draws in calc_gradient_penalty, drawn once here
    alpha = rng.uniform(0, 1, (CRITIC_ITERS, 4, 1, 1, 1)).astype(np.float32)
    return real, noise, alpha


def train_state(model):
    optimizerD = optim.Adam(model.netD.parameters(), lr=1e-4, betas=(0.0, 0.9))
    optimizerG = optim.Adam(model.netG.parameters(), lr=1e-4, betas=(0.0, 0.9))
    return optimizerD, optimizerG


def train_step(model, state, real, noise, alpha):
    optimizerD, optimizerG = state
    netD, netG = model.netD, model.netG
    ############################
    # (1) Update D network
    ###########################
    for p in netD.parameters():  # reset requires_grad
        p.requires_grad = True  # they are set to False below in netG update

    for iter_d in range(CRITIC_ITERS):
        real_data_v = real[iter_d]
        netD.zero_grad()

        # train with real
        D_real = netD(real_data_v)
        D_real = D_real.mean()

        # train with fake
        with torch.no_grad():
            fake = netG(noise[iter_d])
        D_fake = netD(fake)
        D_fake = D_fake.mean()

        # train with gradient penalty
        gradient_penalty = calc_gradient_penalty(netD, real_data_v, fake, alpha[iter_d])

        D_cost = D_fake - D_real + gradient_penalty
        D_cost.backward()
        Wasserstein_D = D_real - D_fake
        optimizerD.step()

    ############################
    # (2) Update G network
    ###########################
    for p in netD.parameters():
        p.requires_grad = False  # to avoid computation
    netG.zero_grad()

    fake = netG(noise[-1])
    G = netD(fake)
    G = G.mean()
    G_cost = -G
    G_cost.backward()
    optimizerG.step()
    for p in netD.parameters():
        p.requires_grad = True
    return D_cost.item(), G_cost.item(), Wasserstein_D.item(), gradient_penalty.item()


def decode_inputs():
    rng = np.random.default_rng(342)
    return (rng.standard_normal((4, NZ)).astype(np.float32),)


def decode(model, fixed_noise):
    with torch.no_grad():
        samples = model.netG(torch.from_numpy(fixed_noise))
        scores = model.netD(samples)
    return samples.view(-1, 8, 8).numpy(), scores
