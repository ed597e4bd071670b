"""A variational autoencoder (Kingma & Welling, 2013) on small binarized images: an MLP encoder
to the mean and log-variance of a diagonal Gaussian, the reparameterization trick, an MLP
decoder with sigmoid outputs; loss = reconstruction BCE + KL divergence to N(0, I).
"""
import numpy as np
import torch
from torch import nn, optim
from torch.nn import functional as F

IMAGE = 8 * 8


class VAE(nn.Module):
    def __init__(self, hidden=400, latent=20):
        super(VAE, self).__init__()

        self.fc1 = nn.Linear(IMAGE, hidden)
        self.fc21 = nn.Linear(hidden, latent)
        self.fc22 = nn.Linear(hidden, latent)
        self.fc3 = nn.Linear(latent, hidden)
        self.fc4 = nn.Linear(hidden, IMAGE)

    def encode(self, x):
        h1 = F.relu(self.fc1(x))
        return self.fc21(h1), self.fc22(h1)

    def reparameterize(self, mu, logvar, eps=None):
        if not self.training:
            return mu
        std = torch.exp(0.5 * logvar)
        if eps is None:
            eps = torch.randn_like(std)
        return mu + eps * std

    def decode(self, z):
        h3 = F.relu(self.fc3(z))
        return torch.sigmoid(self.fc4(h3))

    def forward(self, x, eps=None):
        mu, logvar = self.encode(x.view(-1, IMAGE))
        z = self.reparameterize(mu, logvar, eps)
        return self.decode(z), mu, logvar


# Reconstruction + KL divergence losses summed over all elements and batch
def loss_function(recon_x, x, mu, logvar):
    BCE = F.binary_cross_entropy(recon_x, x.view(-1, IMAGE), reduction='sum')

    # see Appendix B of the VAE paper: 0.5 * sum(1 + log(sigma^2) - mu^2 - sigma^2)
    KLD = -0.5 * torch.sum(1 + logvar - mu.pow(2) - logvar.exp())

    return BCE + KLD


def kl_with_distributions(mu, logvar):
    """The same KL term through torch.distributions (a check of the closed form)."""
    q = torch.distributions.Normal(mu, torch.exp(0.5 * logvar))
    p = torch.distributions.Normal(torch.zeros_like(mu), torch.ones_like(mu))
    return torch.distributions.kl_divergence(q, p).sum()


# ---------------------------------------------------------------- training and sampling
LATENT = 2


def build_model():
    return VAE(hidden=16, latent=LATENT)


def example_inputs():
    rng = np.random.default_rng(110)
    return ((rng.uniform(0, 1, (4, 1, 8, 8)) > 0.5).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(111)
    data = (rng.uniform(0, 1, (6, 1, 8, 8)) > 0.5).astype(np.float32)
    # the noise of the reparameterization, drawn once so that a step is repeatable
    eps = rng.standard_normal((6, LATENT)).astype(np.float32)
    return data, eps


def train_state(model):
    return optim.Adam(model.parameters(), lr=1e-3)


def train_step(model, optimizer, data, eps):
    model.train()
    optimizer.zero_grad()
    recon_batch, mu, logvar = model(data, eps)
    loss = loss_function(recon_batch, data, mu, logvar)
    loss.backward()
    optimizer.step()
    return loss.item() / len(data), kl_with_distributions(mu, logvar).item()


def decode_inputs():
    return (5,)


def decode(model, n):
    """Images decoded from an n x n grid over the 2-d latent space."""
    with torch.no_grad():
        lin = torch.linspace(-2, 2, n)
        gx, gy = torch.meshgrid(lin, lin, indexing='ij')
        z = torch.stack([gx.flatten(), gy.flatten()], dim=1)
        sample = model.decode(z).cpu()
        return sample.view(n * n, 1, 8, 8)
