"""A plain PyTorch loop: one write per evaluation, through RunLogger(live=...), which keeps the
log that `grokaudit check` reads and answers whether the run can stop.

    python docs/examples/live/loop.py logs
    grokaudit check logs --by wd
"""

import sys

import torch
from grokaudit import RunLogger, spectral_metrics
from task import Net, data

folder = sys.argv[1] if len(sys.argv) > 1 else "logs"
x_train, y_train, x_test, y_test = data()

for wd in (0.2, 0.4):
    model = Net()
    opt = torch.optim.SGD(model.parameters(), lr=0.2, weight_decay=wd)
    with RunLogger(folder, run=f"wd{wd}", conditions={"wd": wd},
                   live={"metrics": ["emb_erank"]}) as log:
        for step in range(1, 50_001):
            loss = torch.nn.functional.cross_entropy(model(x_train), y_train)
            opt.zero_grad()
            loss.backward()
            opt.step()
            if step % 5:
                continue
            with torch.no_grad():
                test_acc = (model(x_test).argmax(1) == y_test).float().mean().item()
                train_acc = (model(x_train).argmax(1) == y_train).float().mean().item()
            erank = spectral_metrics(model.embed.weight)["erank"]
            log.log(step, test_acc=test_acc, train_acc=train_acc, emb_erank=erank)
            if step % 500 == 0:
                print(log.state().line())  # grokked? compressed? floor stable? stop step
            if log.should_stop():  # settled: more steps would not change the numbers
                break
        print(log.state().line())
