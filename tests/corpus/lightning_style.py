"""PyTorch-Lightning-style research code written without Lightning: a LightningModule-like base
class (hooks, self.log into metric dicts, hparams objects, a trainer-state object with global_step /
current_epoch), training/validation steps funnelled through shared_step, manual optimisation
helpers, torchmetrics-like metric classes with update/compute, and callbacks invoked from steps."""
import functools
import logging
import math
import os
import warnings
from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Optional

import torch
import torch.nn.functional as F
from torch import nn

log = logging.getLogger("lit")
log.addHandler(logging.NullHandler())

DEFAULT_HPARAMS = {"lr": 1e-3, "weight_decay": 0.01, "label_smoothing": 0.05, "warmup_epochs": 2,
                   "max_epochs": 10, "log_every_n_steps": 2, "max_seq_len": 6, "num_classes": 4}
STAGES = ("train", "val", "test")
SPIKE_FACTOR = 4.0
IN_DIM = 6


class AttributeDict(dict):
    """hparams container: a dict whose keys are also attributes (Lightning's AttributeDict)."""

    def __getattr__(self, key):
        try:
            return self[key]
        except KeyError as exc:
            raise AttributeError(key) from exc

    def __setattr__(self, key, value):
        self[key] = value


@dataclass
class TrainerState:
    global_step: int = 0
    current_epoch: int = 0
    sanity_checking: bool = False
    accumulate_grad_batches: int = 1
    callback_metrics: Dict[str, torch.Tensor] = field(default_factory=dict)

    @property
    def is_last_batch_of_epoch(self) -> bool:
        return self.global_step % 5 == 4


# --------------------------------------------------------------------------- metrics

class Metric:
    """torchmetrics-like: tensor states updated in update(), reduced in compute()."""

    higher_is_better = True

    def __init__(self):
        self._states: Dict[str, torch.Tensor] = {}

    def add_state(self, name: str, default: torch.Tensor):
        self._states[name] = default.clone()

    def reset(self):
        for k in self._states:
            self._states[k] = torch.zeros_like(self._states[k])


class Accuracy(Metric):
    def __init__(self, top_k: int = 1, num_classes: int = 4, validate_args: bool = True):
        super().__init__()
        self.top_k, self.num_classes, self.validate_args = top_k, num_classes, validate_args
        self.add_state("correct", torch.tensor(0.0))
        self.add_state("total", torch.tensor(0.0))

    @classmethod
    def from_hparams(cls, hparams: "AttributeDict") -> "Accuracy":
        return cls(num_classes=hparams.num_classes, validate_args=False)

    @staticmethod
    def _format_target(target):
        return target.long().flatten()

    def _check_input(self, target):
        if (target < 0).any() or (target >= self.num_classes).any():  # expect: FL000 GB0170
            raise ValueError(f"targets must lie in [0, {self.num_classes})")

    def update(self, logits, target):
        target = self._format_target(target)
        if self.validate_args:
            self._check_input(target)
        pred = logits.topk(self.top_k, dim=-1).indices
        hit = (pred == target[:, None]).any(-1)
        self._states["correct"] = self._states["correct"] + hit.sum()
        self._states["total"] = self._states["total"] + target.numel()

    def compute(self):
        return self._states["correct"] / self._states["total"].clamp_min(1)


class BinnedCalibrationError(Metric):
    """Expected calibration error over confidence bins, accumulated per bin in Python lists."""

    def __init__(self, n_bins: int = 4):
        super().__init__()
        self.n_bins = n_bins
        self.bin_acc: List[float] = [0.0] * n_bins
        self.bin_n: List[int] = [0] * n_bins

    def update(self, logits, target):
        conf, pred = logits.softmax(-1).max(-1)
        for c, p, t in zip(conf, pred, target):
            b = min(int(c * self.n_bins), self.n_bins - 1)  # expect: FL000 GB0124
            self.bin_acc[b] += float(p == t)
            self.bin_n[b] += 1

    def compute(self):
        total = sum(self.bin_n)
        return sum(a for a in self.bin_acc) / max(total, 1)


def rank_zero_only(fn: Callable) -> Callable:
    """Runs fn on the rank-0 process only (rank read from the environment at call time)."""

    @functools.wraps(fn)
    def wrapped(*args, **kwargs):
        if int(os.environ.get("LOCAL_RANK", "0")) == 0:
            return fn(*args, **kwargs)
        return None

    return wrapped


class InMemoryLogger:
    """A CSV/TensorBoard-like experiment logger keeping rows of Python floats."""

    def __init__(self):
        self.rows: List[Dict[str, float]] = []

    @rank_zero_only
    def log_metrics(self, metrics: Dict[str, torch.Tensor], step: int):
        row = {"step": step}
        for name, value in metrics.items():
            row[name] = float(value)  # expect: FL000 GB0124
        self.rows.append(row)


@rank_zero_only
def print_metrics(metrics: Dict[str, torch.Tensor], epoch: int):
    for name, value in sorted(metrics.items()):  # expect: FL000 GB0207
        print(f"epoch {epoch} {name}: {value}")  # expect: FL000 GB0059


# --------------------------------------------------------------------------- callbacks

class Callback:
    def on_train_batch_end(self, module: "LightningModuleLike", outputs: Dict[str, Any], batch_idx: int):
        pass


class LRMonitor(Callback):
    def on_train_batch_end(self, module, outputs, batch_idx):
        module.log("lr", module.current_lr())


class LossSpikeDetector(Callback):
    def __init__(self, reference: float = 0.5):
        self.reference = reference

    def on_train_batch_end(self, module, outputs, batch_idx):
        loss = outputs["loss"]
        if loss > SPIKE_FACTOR * self.reference:  # expect: FL000 GB0170
            warnings.warn(f"loss spike at batch {batch_idx}")  # expect: FL000 GB0007
            outputs["loss"] = loss.clamp(max=SPIKE_FACTOR * self.reference)


class ProgressPrinter(Callback):
    def __init__(self, every: int = 2):
        self.every = every

    def on_train_batch_end(self, module, outputs, batch_idx):
        if batch_idx % self.every == 0:
            print(f"[epoch {module.trainer.current_epoch}] batch {batch_idx}: loss={outputs['loss']:.3f}")  # expect: FL000 GB0059


# --------------------------------------------------------------------------- the module

class HooksMixin:
    """on_* hooks that do nothing unless overridden."""

    def on_before_backward(self, loss):
        return loss

    def on_train_batch_start(self, batch, batch_idx):
        return None


class LoggingMixin:
    """self.log / self.log_dict storing values in the module's metric dicts."""

    def log(self, name: str, value, prog_bar: bool = False, on_step: bool = True, sync_dist: bool = False):
        if isinstance(value, (int, float)):
            value = torch.tensor(value, dtype=torch.float32)
        value = value.detach()
        self._logged[name] = value  # expect: FL302
        if prog_bar:
            self._progress_bar[name] = value

    def log_dict(self, metrics: Dict[str, Any], **kw):
        for k, v in metrics.items():
            self.log(k, v, **kw)


class LightningModuleLike(HooksMixin, LoggingMixin, nn.Module):
    """Wraps a backbone; subclasses implement training_step / validation_step via shared_step."""

    def __init__(self, backbone: Optional[nn.Module] = None, **hparams):
        super().__init__()
        self.hparams = AttributeDict({**DEFAULT_HPARAMS, **hparams})
        self.backbone = backbone if backbone is not None else _mlp(self.hparams.num_classes)
        self.trainer = TrainerState()
        self.callbacks: List[Callback] = []
        self._logged: Dict[str, torch.Tensor] = {}
        self._progress_bar: Dict[str, torch.Tensor] = {}
        self._optimizer: Optional[torch.optim.Optimizer] = None

    def forward(self, x):
        return self.backbone(x)

    @property
    def automatic_optimization(self) -> bool:
        return self._optimizer is None

    def current_lr(self) -> float:
        epoch, warm = self.trainer.current_epoch, self.hparams.warmup_epochs
        if epoch < warm:
            return self.hparams.lr * (epoch + 1) / warm
        progress = (epoch - warm) / max(1, self.hparams.max_epochs - warm)
        return 0.5 * self.hparams.lr * (1 + math.cos(math.pi * progress))

    def optimizers(self) -> torch.optim.Optimizer:
        if self._optimizer is None:
            raise RuntimeError("manual optimisation needs an optimizer")
        return self._optimizer

    def manual_backward(self, loss):
        loss = self.on_before_backward(loss)
        loss.backward()  # expect: FL000 GB0123

    def _should_log(self) -> bool:
        return self.trainer.global_step % self.hparams.log_every_n_steps == 0

    def shared_step(self, batch, stage: str):
        x, y = batch
        logits = self(x)
        loss = F.cross_entropy(logits, y, label_smoothing=self.hparams.label_smoothing)
        if self._should_log():
            self.log(f"{stage}_loss", loss, prog_bar=stage == "train")
        return {"loss": loss, "logits": logits.detach()}

    def training_step(self, batch, batch_idx: int):
        self.on_train_batch_start(batch, batch_idx)
        outputs = self.shared_step(batch, "train")
        for cb in self.callbacks:
            cb.on_train_batch_end(self, outputs, batch_idx)
        return outputs

    def validation_step(self, batch, batch_idx: int):
        return self.shared_step(batch, "val")


class LitClassifier(LightningModuleLike):
    """Adds metric objects per stage and the usual accuracy logging."""

    def __init__(self, **hparams):
        super().__init__(**hparams)
        self.metrics = {stage: Accuracy() for stage in STAGES[1:]}
        self.metrics["train"] = Accuracy.from_hparams(self.hparams)

    def validation_step(self, batch, batch_idx: int):
        out = super().validation_step(batch, batch_idx)
        metric = self.metrics["val"]
        metric.update(out["logits"], batch[1])
        self.log("val_acc", metric.compute(), prog_bar=True)
        return out

    def forward(self, x):
        return self.backbone(x).log_softmax(-1)


class LitSequenceModel(LightningModuleLike):
    """Token classifier that crops sequences longer than hparams.max_seq_len."""

    def __init__(self, **hparams):
        super().__init__(backbone=nn.Linear(IN_DIM, 4), **hparams)
        self.pool = lambda h: h.mean(1)

    def forward(self, x):
        if x.size(1) > self.hparams.max_seq_len:  # expect: FL301
            x = x[:, -self.hparams.max_seq_len:]
        return self.pool(self.backbone(x))


class LitStepCounter(LightningModuleLike):
    """A module that advances the trainer state itself (a common port from hand-written loops)."""

    def forward(self, x):
        out = self.backbone(x)
        self.trainer.global_step += 1  # expect: FL302
        if self.trainer.global_step % self.hparams.log_every_n_steps == 0:
            out = out * 1.0
        return out


class LitMultiHead(LightningModuleLike):
    """Several heads picked by name; the loss weights come from a list of lambdas."""

    LOSS_WEIGHTS = [lambda e: 1.0, lambda e: min(1.0, 0.1 * (e + 1))]

    def __init__(self, **hparams):
        super().__init__(**hparams)
        self.heads = nn.ModuleDict({"main": nn.Linear(4, 4), "aux": nn.Linear(4, 2)})

    def forward(self, x):
        feats = self.backbone(x)
        outs = {name: head(feats) for name, head in self.heads.items()}
        weights = [w(self.trainer.current_epoch) for w in self.LOSS_WEIGHTS]
        return outs["main"] * weights[0], outs["aux"] * weights[1]


def _mlp(n_out: int = 4) -> nn.Module:
    return nn.Sequential(nn.Linear(IN_DIM, 8), nn.ReLU(), nn.Linear(8, n_out))


# --------------------------------------------------------------------------- compiled steps

def _training_step(module: LightningModuleLike, batch, batch_idx: int):
    return module.training_step(batch, batch_idx)["loss"]


compiled_training_step = torch.compile(_training_step)


@torch.compile
def validation_step_with_metrics(module: LitClassifier, batch, batch_idx: int):
    return module.validation_step(batch, batch_idx)["loss"]


@torch.compile
def step_with_callbacks(module: LightningModuleLike, batch, batch_idx: int):
    outputs = module.training_step(batch, batch_idx)
    return outputs["loss"], module._logged.get("lr")


@torch.compile
def manual_optimization_step(module: LightningModuleLike, batch, batch_idx: int):
    opt = module.optimizers()
    out = module.shared_step(batch, "train")
    module.manual_backward(out["loss"])
    if (batch_idx + 1) % module.trainer.accumulate_grad_batches == 0:
        opt.step()  # expect: FL000 GB0025
        opt.zero_grad()  # expect: FL000 GB0008
    return out["loss"]


@torch.compile
def logged_scalars(module: LightningModuleLike, batch):
    module.shared_step(batch, "val")
    return {k: v.item() for k, v in module._logged.items()}  # expect: FL000 GB0092; FL000 GB0124


def _calibration_eval(module: LightningModuleLike, batch, n_bins: int = 4):
    x, y = batch
    metric = BinnedCalibrationError(n_bins)
    with torch.no_grad():
        metric.update(module(x), y)  # expect: FL000 GB0092
    return metric.compute()


calibration_eval = torch.compile(_calibration_eval)


@torch.compile
def predict_step(module: LitClassifier, x, class_names=("cat", "dog", "eel", "fox")):
    probs = module(x).exp()
    top = probs.argmax(-1)
    return [{"label": class_names[i], "p": probs[j, i]} for j, i in enumerate(top.tolist())]  # expect: FL000 GB0033


@torch.compile
def gradient_clipped_step(module: LightningModuleLike, batch, clip_val: float = 0.5):
    out = module.shared_step(batch, "train")
    module.manual_backward(out["loss"])
    grads = [p.grad for p in module.parameters() if p.grad is not None]
    norm = torch.linalg.vector_norm(torch.stack([g.norm() for g in grads]))
    return out["loss"], norm.clamp(max=clip_val)


def _stage_metric_name(stage: str, name: str) -> str:
    return "/".join((stage, name)) if stage != "train" else name


@torch.compile(dynamic=True)
def collate_and_forward(module: LightningModuleLike, xs: torch.Tensor, min_batch: int = 4):
    if xs.size(0) < min_batch:  # expect: FL301
        reps = math.ceil(min_batch / xs.size(0))
        xs = xs.repeat(reps, 1)[:min_batch]
    return module(xs)


@torch.compile
def test_epoch_end(module: LightningModuleLike, outputs: List[Dict[str, torch.Tensor]]):
    losses = torch.stack([o["loss"] for o in outputs])
    summary = {_stage_metric_name("test", "loss"): losses.mean()}
    try:
        summary["best"] = min(o["loss"] for o in outputs)
    except ValueError:
        summary["best"] = losses.new_zeros(())
    return summary


@torch.compile
def early_stopping_check(module: LightningModuleLike, batch, monitor: str = "val_loss",
                         best: float = 0.1, patience: int = 2):
    module.shared_step(batch, "val")
    current = module._logged[monitor]
    wait = 0
    while wait < patience:
        if current < best:  # expect: FL000 GB0170
            return True, current
        wait += 1
    log.info("no improvement in %s", monitor)  # expect: FL000 GB0291
    return False, current


@torch.compile
def hparams_scaled_loss(module: LightningModuleLike, batch):
    x, y = batch
    hp = module.hparams
    logits = module(x)
    loss = F.cross_entropy(logits, y, label_smoothing=hp.label_smoothing)
    assert torch.isfinite(loss), "loss is not finite"
    decay = sum(p.pow(2).sum() for p in module.parameters()) * hp.weight_decay
    return loss + decay


@torch.compile
def train_step_to_logger(module: LitClassifier, logger: InMemoryLogger, batch):
    out = module.shared_step(batch, "train")
    metric = module.metrics["train"]
    metric.update(out["logits"], batch[1])
    logger.log_metrics({"loss": out["loss"], "acc": metric.compute()}, module.trainer.global_step)
    return out["loss"]


@torch.compile
def epoch_end_report(module: LightningModuleLike, losses: torch.Tensor):
    metrics = {"loss": losses.mean(), "loss_std": losses.std()}
    print_metrics(metrics, module.trainer.current_epoch)
    return metrics


@torch.compile
def scheduler_step_forward(module: LightningModuleLike, scheduler, x):
    out = module(x)
    scheduler.step()  # expect: FL000 GB0008
    return out * scheduler.get_last_lr()[0]  # expect: FL000 GB0008


@torch.compile
def predict_epoch_numpy(module: LightningModuleLike, xs: List[torch.Tensor]):
    preds = [module(x).argmax(-1) for x in xs]
    return torch.cat(preds).cpu().numpy()


# --------------------------------------------------------------------------- cases

def _batch(n: int = 5, seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    return torch.randn(n, IN_DIM, generator=g), torch.randint(0, 4, (n,), generator=g)


def _with(module: LightningModuleLike, *callbacks: Callback, epoch: int = 0, step: int = 0,
          optimizer: bool = False) -> LightningModuleLike:
    module.callbacks = list(callbacks)
    module.trainer.current_epoch = epoch
    module.trainer.global_step = step
    if optimizer:
        module._optimizer = torch.optim.SGD(module.parameters(), lr=0.1)
    return module


def _with_scheduler(module: LightningModuleLike, x):
    opt = torch.optim.SGD(module.parameters(), lr=0.1)
    return module, torch.optim.lr_scheduler.LambdaLR(opt, lambda epoch: 0.9 ** epoch), x


CASES = {
    "LightningModuleLike": lambda: (LightningModuleLike(), (_batch()[0],)),
    "LitClassifier": lambda: (LitClassifier(), (_batch()[0],)),
    "LitSequenceModel": lambda: (LitSequenceModel(), (torch.randn(2, 5, IN_DIM),), (torch.randn(3, 9, IN_DIM),)),
    "LitStepCounter": lambda: (LitStepCounter(), (_batch()[0],)),
    "LitMultiHead": lambda: (LitMultiHead(backbone=_mlp()), (_batch()[0],)),
    "compiled_training_step": lambda: (compiled_training_step, (_with(LightningModuleLike(), step=1), _batch(), 0)),
    "validation_step_with_metrics": lambda: (validation_step_with_metrics, (LitClassifier(), _batch(), 0)),
    "step_with_callbacks": lambda: (step_with_callbacks,
                                    (_with(LightningModuleLike(), LRMonitor(), LossSpikeDetector(0.2),
                                           ProgressPrinter(), epoch=3), _batch(), 2)),
    "manual_optimization_step": lambda: (manual_optimization_step,
                                         (_with(LightningModuleLike(), optimizer=True), _batch(), 0)),
    "logged_scalars": lambda: (logged_scalars, (LightningModuleLike(), _batch())),
    "calibration_eval": lambda: (calibration_eval, (LitClassifier(), _batch())),
    "predict_step": lambda: (predict_step, (LitClassifier(), _batch(3)[0])),
    "gradient_clipped_step": lambda: (gradient_clipped_step, (LightningModuleLike(), _batch())),
    "collate_and_forward": lambda: (lambda m: (collate_and_forward, (m, torch.randn(3, IN_DIM)),
                                               (m, torch.randn(7, IN_DIM))))(LightningModuleLike()),
    "test_epoch_end": lambda: (test_epoch_end, (LightningModuleLike(),
                                                [{"loss": torch.tensor(0.3)}, {"loss": torch.tensor(0.2)}])),
    "early_stopping_check": lambda: (early_stopping_check, (LightningModuleLike(), _batch())),
    "hparams_scaled_loss": lambda: (hparams_scaled_loss, (LightningModuleLike(weight_decay=0.02), _batch())),
    "train_step_to_logger": lambda: (train_step_to_logger, (_with(LitClassifier(), step=3), InMemoryLogger(), _batch())),
    "epoch_end_report": lambda: (epoch_end_report, (LightningModuleLike(), torch.rand(5))),
    "scheduler_step_forward": lambda: (scheduler_step_forward, _with_scheduler(LightningModuleLike(), _batch()[0])),
    "predict_epoch_numpy": lambda: (predict_epoch_numpy, (LightningModuleLike(), [_batch(2)[0], _batch(3)[0]])),
}
