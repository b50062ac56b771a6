"""The toy task of the live examples: a linear teacher in 8 dimensions, learned at once; weight
decay then compresses the first layer to the one direction the teacher uses, so its effective
rank falls to a floor: a grok at the first evaluations and a compression clock thousands of
steps later, in seconds on a CPU."""

import torch


def data() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(0)
    teacher = torch.randn(8, generator=g)
    x_train, x_test = torch.randn(4096, 8, generator=g), torch.randn(512, 8, generator=g)
    return x_train, (x_train @ teacher > 0).long(), x_test, (x_test @ teacher > 0).long()


class Net(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        torch.manual_seed(0)
        self.embed = torch.nn.Linear(8, 8, bias=False)  # the matrix whose rank is followed
        self.head = torch.nn.Linear(8, 2)
        torch.nn.init.zeros_(self.head.weight)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.head(self.embed(x))
