"""How a `fit` step's two halves run: the forward with its loss, and the optimizer step. Eagerly (through
the world's wrapper, a rank's DDP, and the GradScaler), or with --compile through torch.compile
(train/compiled/steps.py; the backward runs between them either way, in the fit loop)."""
from torchsh.train.compiled import steps as compiled


class EagerSteps:
    def __init__(self, plan, net, scaler):
        self.plan, self.net, self.scaler = plan, net, scaler

    def forward_loss(self, inputs, target):
        output = self.net(*inputs)
        return output, self.plan.loss(output, target, **self.plan.loss_args)

    def optimizer_step(self):
        self.scaler.step(self.plan.optimizer)  # optimizer.step() without fp16
        self.scaler.update()


class CompiledSteps:
    """--compile: no wrapper (a distributed fit refuses --compile) and no GradScaler (nor --autocast)."""

    def __init__(self, plan):
        self.plan = plan
        self.optimizer_step = compiled.optimizer_step(plan.optimizer)

    def forward_loss(self, inputs, target):
        plan = self.plan
        step = compiled.forward_loss(plan.model, plan.loss, plan.loss_args, inputs, target)
        return step(plan.model, inputs, target)


def steps_for(plan, net, scaler):
    return EagerSteps(plan, net, scaler) if plan.compile_cache is None else CompiledSteps(plan)
