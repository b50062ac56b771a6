"""Hugging Face transformers: the callback is bound to its Trainer (only the trainer logs to
every integration), measures the embedding's spectrum at each evaluation, prints the live state
in one line when it changes, and stops training once the run is settled. With report_to="none"
the log is the trainer's own state.log_history, written to trainer_state.json by save_state().

    python docs/examples/live/hf_train.py out
    grokaudit check out --cond 'wd=wd([0-9.]+)' --by wd

(trainer_state.json holds no TrainingArguments: the weight decay is read from the folder names.)
"""

import sys

import torch
import transformers
from grokaudit.callbacks.transformers import GrokauditCallback
from task import Net, data

folder = sys.argv[1] if len(sys.argv) > 1 else "out"
x_train, y_train, x_test, y_test = data()


class FullBatch(torch.utils.data.Dataset):  # every item is the whole set: one item per step
    def __init__(self, x, y, length):
        self.x, self.y, self.length = x, y, length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        return {"x": self.x, "labels": self.y}


class Model(Net):  # a Trainer's model returns its loss
    def forward(self, x, labels=None):
        logits = super().forward(x)
        return {"loss": torch.nn.functional.cross_entropy(logits, labels), "logits": logits}


def accuracy(pred):  # -> eval_accuracy, read as test_acc
    return {"accuracy": float((pred.predictions.argmax(-1) == pred.label_ids).mean())}


for wd in (0.2, 0.4):
    args = transformers.TrainingArguments(
        output_dir=f"{folder}/wd{wd}", run_name=f"wd{wd}", max_steps=50_000, weight_decay=wd,
        learning_rate=0.2, optim="sgd", lr_scheduler_type="constant",
        per_device_train_batch_size=1, per_device_eval_batch_size=1, eval_strategy="steps",
        eval_steps=5, logging_steps=5, save_strategy="no", report_to="none", use_cpu=True,
        disable_tqdm=True)
    trainer = transformers.Trainer(
        model=Model(), args=args, train_dataset=FullBatch(x_train, y_train, 10**7),
        eval_dataset=FullBatch(x_test, y_test, 1), compute_metrics=accuracy,
        data_collator=lambda items: items[0])
    cb = GrokauditCallback.attach(trainer, {"emb": "embed.weight"}, metrics=["erank"],
                                  stop_when="settled")
    trainer.train()
    trainer.save_state()  # {folder}/wd{wd}/trainer_state.json: what `grokaudit check` reads
    print(cb.state.line())
