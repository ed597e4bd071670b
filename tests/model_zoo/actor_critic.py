"""An advantage actor-critic agent: one shared hidden layer, a softmax policy head and a value
head. Actions come from a Categorical distribution; after an episode, discounted and normalized
returns give the policy loss (-log_prob * advantage), the value loss (smooth L1) and an entropy
bonus.
"""
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.distributions import Categorical

SavedAction = namedtuple('SavedAction', ['log_prob', 'value'])
eps = np.finfo(np.float32).eps.item()


class Policy(nn.Module):
    """implements both actor and critic in one model"""

    def __init__(self, obs_dim=4, n_actions=2, hidden=128):
        super(Policy, self).__init__()
        self.affine1 = nn.Linear(obs_dim, hidden)

        # actor's layer
        self.action_head = nn.Linear(hidden, n_actions)

        # critic's layer
        self.value_head = nn.Linear(hidden, 1)

        # action & reward buffer
        self.saved_actions = []
        self.rewards = []

    def forward(self, x):
        x = F.relu(self.affine1(x))

        # actor: the probability of each action in state s_t
        action_prob = F.softmax(self.action_head(x), dim=-1)

        # critic: evaluates being in the state s_t
        state_values = self.value_head(x)

        return action_prob, state_values


def select_action(model, state, greedy=False):
    state = torch.from_numpy(state).float()
    probs, state_value = model(state)

    m = Categorical(probs)
    action = probs.argmax() if greedy else m.sample()

    model.saved_actions.append(SavedAction(m.log_prob(action), state_value))
    return action.item()


def finish_episode(model, optimizer, gamma=0.99, entropy_coef=0.01):
    """Training code: losses of the episode's actions and values, one optimizer step."""
    R = 0
    saved_actions = model.saved_actions
    policy_losses = []
    value_losses = []
    returns = []

    # the discounted return of every step, last step first
    for r in model.rewards[::-1]:
        R = r + gamma * R
        returns.insert(0, R)

    returns = torch.tensor(returns)
    returns = (returns - returns.mean()) / (returns.std() + eps)

    for (log_prob, value), R in zip(saved_actions, returns):
        advantage = R - value.item()

        policy_losses.append(-log_prob * advantage)
        value_losses.append(F.smooth_l1_loss(value, torch.tensor([R])))

    optimizer.zero_grad()
    loss = torch.stack(policy_losses).sum() + torch.stack(value_losses).sum()
    loss.backward()
    optimizer.step()

    del model.rewards[:]
    del model.saved_actions[:]
    return loss.item()


def evaluate_actions(model, states, actions):
    """Log-probabilities, entropies and values of a batch of recorded (state, action) pairs."""
    probs, values = model(states)
    dist = Categorical(probs=probs)
    return dist.log_prob(actions), dist.entropy(), values.squeeze(-1)


class PointEnv:
    """A point on a line that should reach 0: action 0 moves left, 1 right."""

    def __init__(self, x0):
        self.x = float(x0)
        self.v = 0.0

    def state(self):
        return np.array([self.x, self.v, abs(self.x), 1.0], dtype=np.float64)

    def step(self, action):
        self.v = 0.8 * self.v + (0.1 if action == 1 else -0.1)
        self.x += self.v
        done = abs(self.x) < 0.05
        return self.state(), (1.0 if done else -abs(self.x)), done


# ---------------------------------------------------------------- training and acting
def build_model():
    return Policy(obs_dim=4, n_actions=2, hidden=16)


def example_inputs():
    rng = np.random.default_rng(140)
    return (rng.standard_normal((5, 4)).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(141)
    states = rng.standard_normal((6, 4)).astype(np.float32)
    actions = rng.integers(0, 2, 6).astype(np.int64)
    rewards = [float(r) for r in np.round(rng.uniform(-1, 1, 6), 3)]
    return states, actions, rewards


def train_state(model):
    return optim.Adam(model.parameters(), lr=3e-2)


def train_step(model, optimizer, states, actions, rewards):
    # replays a recorded episode (the actions that were sampled), then the episode's update
    log_probs, entropies, values = evaluate_actions(model, states, actions)
    for i in range(len(rewards)):
        model.saved_actions.append(SavedAction(log_probs[i], values[i].unsqueeze(0)))
        model.rewards.append(rewards[i])
    entropy_bonus = entropies.mean().item()
    return finish_episode(model, optimizer), entropy_bonus


def decode_inputs():
    return (1.2, 15)


def decode(model, x0, max_steps):
    """One greedy episode: actions, rewards, and the log-probabilities of the chosen actions."""
    env = PointEnv(x0)
    state, actions, rewards = env.state(), [], []
    with torch.no_grad():
        for t in range(max_steps):
            action = select_action(model, state, greedy=True)
            state, reward, done = env.step(action)
            actions.append(action)
            rewards.append(round(reward, 5))
            if done:
                break
    log_probs = torch.stack([a.log_prob for a in model.saved_actions])
    del model.saved_actions[:]
    return actions, rewards, log_probs
