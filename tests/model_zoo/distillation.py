"""Knowledge distillation (Hinton et al., 2015): a small student network learns from a frozen
teacher's softened outputs (KL divergence at temperature T, scaled by T^2) and from the labels
(cross-entropy). The teacher is a CNN with GroupNorm and PReLU; the student a small MLP with ELU.
"""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class Teacher(nn.Module):
    def __init__(self, num_classes=10, width=32):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, width, 3, padding=1),
            nn.GroupNorm(4, width),
            nn.PReLU(),
            nn.MaxPool2d(2),
            nn.Conv2d(width, 2 * width, 3, padding=1),
            nn.GroupNorm(4, 2 * width),
            nn.PReLU(),
            nn.AdaptiveMaxPool2d((2, 2)),
        )
        self.classifier = nn.Sequential(nn.Flatten(), nn.Linear(8 * width, num_classes))

    def forward(self, x):
        return self.classifier(self.features(x))


class Student(nn.Module):
    def __init__(self, in_features, num_classes=10, hidden=64):
        super().__init__()
        self.net = nn.Sequential(
            nn.Flatten(),
            nn.Linear(in_features, hidden),
            nn.ELU(),
            nn.Dropout(0.1),
            nn.Linear(hidden, num_classes),
        )

    def forward(self, x):
        return self.net(x)


class Distiller(nn.Module):
    def __init__(self, teacher, student):
        super().__init__()
        self.teacher = teacher
        self.student = student
        self.teacher.requires_grad_(False)

    def forward(self, x):
        with torch.no_grad():
            teacher_logits = self.teacher(x)
        return self.student(x), teacher_logits


def distillation_loss(student_logits, teacher_logits, labels, T=4.0, alpha=0.7):
    soft_targets = F.softmax(teacher_logits / T, dim=-1)
    soft_prob = F.log_softmax(student_logits / T, dim=-1)
    distill = F.kl_div(soft_prob, soft_targets, reduction="batchmean") * (T * T)
    hard = F.cross_entropy(student_logits, labels)
    return alpha * distill + (1.0 - alpha) * hard


# ---------------------------------------------------------------- training and evaluation
def build_model():
    teacher = Teacher(num_classes=5, width=4)
    student = Student(in_features=64, num_classes=5, hidden=12)
    student.net[3].p = 0.0  # no dropout: a repeatable step
    return Distiller(teacher, student)


def example_inputs():
    rng = np.random.default_rng(250)
    return (rng.standard_normal((3, 1, 8, 8)).astype(np.float32),)


def example_batch():
    rng = np.random.default_rng(251)
    return rng.standard_normal((6, 1, 8, 8)).astype(np.float32), rng.integers(0, 5, 6).astype(np.int64)


def train_state(model):
    # only the student trains
    return torch.optim.Adam(model.student.parameters(), lr=1e-3)


def train_step(model, optimizer, images, labels):
    model.teacher.eval()
    model.student.train()
    student_logits, teacher_logits = model(images)
    loss = distillation_loss(student_logits, teacher_logits, labels)
    optimizer.zero_grad()
    loss.backward()
    optimizer.step()
    return loss.item()


def decode_inputs():
    rng = np.random.default_rng(252)
    return (rng.standard_normal((4, 1, 8, 8)).astype(np.float32),)


@torch.no_grad()
def decode(model, images):
    student_logits, teacher_logits = model(torch.from_numpy(images))
    agreement = (student_logits.argmax(1) == teacher_logits.argmax(1)).float().mean().item()
    kl = F.kl_div(F.log_softmax(student_logits, 1), F.log_softmax(teacher_logits, 1), reduction="sum",
                  log_target=True)
    return agreement, kl
