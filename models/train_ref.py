# SPDX-License-Identifier: Apache-2.0
"""PyTorch fp32 beside tpu-train: the same model (its ONNX initial weights), data, batch
order, optimizer and epochs; writes the curves in tpu-train's CSV columns and, with --png,
a plot of both (Debian python3-matplotlib).

usage: train_ref.py MODEL.onnx (--dataset fashion-mnist | --x-train X --y-train Y
                    [--x-val X --y-val Y]) --batch B --epochs E [--steps-per-epoch S]
                    [--optimizer adam|sgd] [--lr L] [--momentum M] [--seed S] [--logits]
                    --csv REF.csv [--ours OURS.csv --png PLOT.png]
"""
import argparse
import csv
import os
import secrets
import signal
import string
import sys

import numpy as np

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import trainref  # noqa: E402


# Temporary files being written: removed on TERM, INT and HUP (tpu-train forwards its
# interrupts here). Named PATH.tmpXXXXXX (six letters or digits), as tpu_out_open names its
# own, so that tpu-train removes what a killed run left (tpu_out_remove_stale).
_live = set()


def _on_signal(sig, frame):
    for t in list(_live):
        try:
            os.unlink(t)
        except OSError:
            pass
    signal.signal(sig, signal.SIG_DFL)
    os.kill(os.getpid(), sig)


def clean_on_signals():
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        if signal.getsignal(sig) != signal.SIG_IGN:  # nohup: stays ignored
            signal.signal(sig, _on_signal)


def write_atomic(path, write, mode="w"):
    """write(f) into PATH.tmpXXXXXX beside path, then renamed over path."""
    alphabet = string.ascii_letters + string.digits
    while True:
        tmp = path + ".tmp" + "".join(secrets.choice(alphabet) for _ in range(6))
        try:
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o666)
            break
        except FileExistsError:
            continue
    _live.add(tmp)
    try:
        with os.fdopen(fd, mode, newline="" if "b" not in mode else None) as f:
            write(f)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
        _live.discard(tmp)


def load(a):
    if a.dataset:
        import fmnist
        return (fmnist.images("train"), fmnist.labels("train"), fmnist.images("test"),
                fmnist.labels("test"))
    x, y = np.load(a.x_train).astype(np.float32), np.load(a.y_train)
    xv = np.load(a.x_val).astype(np.float32) if a.x_val else None
    yv = np.load(a.y_val) if a.y_val else None
    return x, y, xv, yv


def plot(ours, ref, png, title):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(1, 2, figsize=(10, 4))
    for rows, name, style in ((ours, "ours (tpu-train, bf16 MXU)", "-o"), (ref, "PyTorch fp32", "--s")):
        ep = [float(r["epoch"]) for r in rows]
        for k, col in ((0, "loss"), (1, "accuracy")):
            ax[k].plot(ep, [float(r[col]) for r in rows], style, label=f"{name} train")
            v = [float(r["val_" + col]) for r in rows]
            if not all(np.isnan(v)):
                ax[k].plot(ep, v, style, alpha=0.6, label=f"{name} val")
    for k, col in ((0, "loss"), (1, "accuracy")):
        ax[k].set_xlabel("epoch")
        ax[k].set_ylabel(col)
        ax[k].grid(True, alpha=0.3)
        ax[k].legend(fontsize=7)
    fig.suptitle(title)
    fig.tight_layout()
    write_atomic(png, lambda f: fig.savefig(f, format="png", dpi=100, metadata={"Software": None}), "wb")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnx")
    ap.add_argument("--dataset", choices=["fashion-mnist"])
    ap.add_argument("--x-train"); ap.add_argument("--y-train")
    ap.add_argument("--x-val"); ap.add_argument("--y-val")
    ap.add_argument("--batch", type=int, required=True)
    ap.add_argument("--epochs", type=int, default=1)
    ap.add_argument("--steps-per-epoch", type=int)
    ap.add_argument("--optimizer", choices=["adam", "sgd"], default="adam")
    ap.add_argument("--lr", type=float)
    ap.add_argument("--momentum", type=float, default=0.0)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--logits", action="store_true")
    ap.add_argument("--val-examples", type=int, help="validate on the first K examples only (tpu-train's --val-steps)")
    ap.add_argument("--csv", required=True)
    ap.add_argument("--ours")
    ap.add_argument("--png")
    a = ap.parse_args()
    clean_on_signals()
    x, y, xv, yv = load(a)
    if xv is not None and a.val_examples is not None:
        xv, yv = xv[:a.val_examples], yv[:a.val_examples]
    steps = a.steps_per_epoch or len(x) // a.batch
    lr = a.lr if a.lr is not None else (1e-3 if a.optimizer == "adam" else 0.01)
    rows = trainref.train_curves(a.onnx, x, y, xv, yv, a.batch, a.epochs, steps, a.optimizer, lr,
                                 a.momentum, a.seed, a.logits)
    def write_csv(f):
        w = csv.writer(f)
        w.writerow(["epoch", "loss", "accuracy", "val_loss", "val_accuracy", "wall_s"])
        for r in rows:
            w.writerow([r[0]] + [f"{v:.6f}" for v in r[1:5]] + [f"{r[5]:.2f}"])
    write_atomic(a.csv, write_csv)
    for r in rows:
        print(f"PyTorch fp32 epoch {r[0]}: loss {r[1]:.4f} accuracy {r[2]:.4f} val_loss {r[3]:.4f} "
              f"val_accuracy {r[4]:.4f} ({r[5]:.1f} s for {steps} steps, one thread)")
    if a.png:
        if not a.ours:
            sys.exit("train_ref: --png needs --ours OURS.csv")
        ours = list(csv.DictReader(open(a.ours)))
        ref = list(csv.DictReader(open(a.csv)))
        plot(ours, ref, a.png, f"{os.path.basename(a.onnx)}: batch {a.batch}, {a.optimizer} lr {lr}, {steps} steps/epoch")
    return 0


if __name__ == "__main__":
    sys.exit(main())
