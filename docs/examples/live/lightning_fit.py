"""PyTorch Lightning: the callback measures the embedding's spectrum at each validation, logs it
through the trainer's loggers (here CSVLogger: metrics.csv + hparams.yaml), prints the live
state in one line when it changes, and stops the fit once the run is settled.

    python docs/examples/live/lightning_fit.py logs
    grokaudit check logs --by wd
"""

import sys

import lightning.pytorch as pl
import torch
from grokaudit.callbacks.lightning import GrokauditCallback
from lightning.pytorch.loggers import CSVLogger
from task import Net, data

folder = sys.argv[1] if len(sys.argv) > 1 else "logs"
x_train, y_train, x_test, y_test = data()


class FullBatch(torch.utils.data.Dataset):  # every item is the whole set: one item per step
    def __init__(self, x, y, length):
        self.x, self.y, self.length = x, y, length

    def __len__(self):
        return self.length

    def __getitem__(self, i):
        return self.x, self.y


class Module(pl.LightningModule):
    def __init__(self, wd: float):
        super().__init__()
        self.save_hyperparameters()  # -> hparams.yaml: the run's conditions (wd)
        self.net = Net()

    def training_step(self, batch, i):
        x, y = batch
        out = self.net(x)
        self.log("train_acc", (out.argmax(1) == y).float().mean())  # read as train_acc
        return torch.nn.functional.cross_entropy(out, y)

    def validation_step(self, batch, i):
        x, y = batch
        self.log("val_acc", (self.net(x).argmax(1) == y).float().mean())  # read as test_acc

    def configure_optimizers(self):
        return torch.optim.SGD(self.parameters(), lr=0.2, weight_decay=self.hparams.wd)


for wd in (0.2, 0.4):
    cb = GrokauditCallback({"emb": "net.embed.weight"}, metrics=["erank"], stop_when="settled")
    trainer = pl.Trainer(max_steps=50_000, val_check_interval=5, check_val_every_n_epoch=None,
                         log_every_n_steps=5, logger=CSVLogger(folder, name=f"wd{wd}"),
                         callbacks=[cb], accelerator="cpu", enable_progress_bar=False,
                         enable_model_summary=False, enable_checkpointing=False)
    loader = torch.utils.data.DataLoader
    trainer.fit(Module(wd), loader(FullBatch(x_train, y_train, 10**7), batch_size=None),
                loader(FullBatch(x_test, y_test, 1), batch_size=None))
    print(cb.state.line())
