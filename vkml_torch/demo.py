"""Train a small MLP on scikit-learn's 8x8 digits on the best device:  python -m vkml_torch.demo

Plain PyTorch code (nn.Linear, ReLU, CrossEntropyLoss, SGD); the only vkml-specific lines pick the
device and print the counters. Exits 1 if test accuracy is below 0.9.
"""
import sys
import time

import numpy as np
import torch
from torch import nn

import vkml_torch

EPOCHS = 10
BATCH = 64
LR = 0.1
MIN_ACCURACY = 0.9


def load_digits_split(seed=0, test_fraction=0.2):
    """1797 8x8 images, shuffled once with a fixed seed; the last 20% are the test set.
    Standardised with the training set's mean and std."""
    from sklearn.datasets import load_digits  # ships inside scikit-learn: no download

    x, y = load_digits(return_X_y=True)
    order = np.random.RandomState(seed).permutation(len(x))
    x, y = x[order].astype(np.float32), y[order].astype(np.int64)
    n_test = int(round(len(x) * test_fraction))
    x_train, y_train, x_test, y_test = x[:-n_test], y[:-n_test], x[-n_test:], y[-n_test:]
    mean, std = x_train.mean(0), x_train.std(0) + 1e-6
    return ((x_train - mean) / std, y_train), ((x_test - mean) / std, y_test)


def bar(done, total, width=30):
    filled = int(width * done / total)
    return "[" + "#" * filled + "." * (width - filled) + "]"


def main():
    device, line = vkml_torch.best_device()
    print(line)
    (x_train, y_train), (x_test, y_test) = load_digits_split()
    print(f"digits: {len(x_train)} train, {len(x_test)} test, 64 features, 10 classes")

    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(64, 128), nn.ReLU(), nn.Linear(128, 10)).to(device)
    opt = torch.optim.SGD(model.parameters(), lr=LR)
    loss_fn = nn.CrossEntropyLoss()
    xt, yt = torch.from_numpy(x_test).to(device), torch.from_numpy(y_test).to(device)
    rng = np.random.RandomState(0)
    n_batches = (len(x_train) + BATCH - 1) // BATCH
    tty = sys.stdout.isatty()
    start = time.perf_counter()

    for epoch in range(1, EPOCHS + 1):
        # Shuffle on the host and upload the epoch once; minibatches are then slices (views).
        order = rng.permutation(len(x_train))
        xe = torch.from_numpy(x_train[order]).to(device)
        ye = torch.from_numpy(y_train[order]).to(device)
        total = torch.zeros((), device=device)
        for b in range(n_batches):
            xb, yb = xe[b * BATCH:(b + 1) * BATCH], ye[b * BATCH:(b + 1) * BATCH]
            loss = loss_fn(model(xb), yb)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += loss.detach()  # stays on the device: no sync inside the epoch
            if tty:
                print(f"\repoch {epoch:2d}/{EPOCHS} {bar(b + 1, n_batches)}", end="", flush=True)
        mean_loss = total.item() / n_batches  # the one read-back per epoch
        text = f"epoch {epoch:2d}/{EPOCHS} {bar(n_batches, n_batches)} loss {mean_loss:.4f}"
        print(("\r" + text) if tty else text, flush=True)

    with torch.no_grad():
        correct = (model(xt).argmax(dim=1) == yt).sum().item()
    accuracy = correct / len(y_test)
    elapsed = time.perf_counter() - start
    print(f"test accuracy: {accuracy:.4f} ({correct}/{len(y_test)}) after {EPOCHS} epochs, "
          f"{elapsed:.1f} s on {device}")
    if device.type == "vkml":
        s = vkml_torch.stats()
        print(f"vkml: {s['nodes']} ops recorded, {s['dispatches']} GPU dispatches in "
              f"{s['submits']} submits ({s['flushes']} flushes)")
    if accuracy < MIN_ACCURACY:
        print(f"FAIL: accuracy {accuracy:.4f} is below {MIN_ACCURACY}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
