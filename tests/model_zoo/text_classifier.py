"""Text classification with an EmbeddingBag: the mean embedding of a text's tokens (texts of
any length concatenated in one tensor, with offsets) and one linear layer. Batches come from a
DataLoader with a collate function; SGD with a step schedule and gradient clipping.
"""
import numpy as np
import torch
from torch import nn
from torch.utils.data import DataLoader

LABELS = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}
VOCAB = ["<unk>", "the", "a", "game", "team", "market", "stock", "win", "science", "space", "election",
         "vote", "price", "player", "research", "government", "season", "shares", "nasa", "minister"]
stoi = {w: i for i, w in enumerate(VOCAB)}


def text_pipeline(text):
    return [stoi.get(tok, 0) for tok in text.lower().split()]


def label_pipeline(label):
    return int(label) - 1


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for (_label, _text) in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list, text_list, offsets


class TextClassificationModel(nn.Module):

    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


def predict(model, text):
    with torch.no_grad():
        text = torch.tensor(text_pipeline(text))
        output = model(text, torch.tensor([0]))
        return output.argmax(1).item() + 1


# ---------------------------------------------------------------- training and prediction
TRAIN = [(2, "the team win the game"), (3, "stock market price shares"), (4, "nasa space research"),
         (1, "the government election vote"), (2, "a player season"), (3, "shares price the market"),
         (4, "science research"), (1, "minister vote")]


def build_model():
    return TextClassificationModel(len(VOCAB), 8, len(LABELS))


def example_inputs():
    _, text, offsets = collate_batch(TRAIN[:3])
    return text.numpy(), offsets.numpy()


def example_batch():
    return (TRAIN,)


def train_state(model):
    criterion = torch.nn.CrossEntropyLoss()
    optimizer = torch.optim.SGD(model.parameters(), lr=5)
    scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
    return criterion, optimizer, scheduler


def train_step(model, state, dataset):
    criterion, optimizer, scheduler = state
    model.train()
    total_acc, total_count, losses = 0, 0, []
    dataloader = DataLoader(dataset, batch_size=4, shuffle=False, collate_fn=collate_batch)
    for idx, (label, text, offsets) in enumerate(dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        losses.append(loss.item())
    scheduler.step()
    return losses, total_acc / total_count


def decode_inputs():
    return "the stock market", "nasa science research", "the team season"


def decode(model, *texts):
    model.eval()
    return [LABELS[predict(model, t)] for t in texts]
