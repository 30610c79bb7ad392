"""What a request made is listed so that it can be freed when its reply cannot be delivered, but for the kinds
whose row says they outlive their client (registry/kinds.py HandleKind.outlives_client: a job)."""
import torch

from torchsh.jobs.job import Job
from torchsh.registry.kinds import HANDLE_KINDS
from torchsh.registry.made import RecordingRegistry


def test_a_request_lists_what_it_made_but_a_job_whose_row_keeps_it():
    registry = RecordingRegistry()
    with registry.recording() as made:
        tensor = registry.put(torch.zeros(2))
        registry.put(Job("fit"), "job")
        module = registry.put(torch.nn.Linear(2, 1), "nn")
    assert made == [tensor, module]
    assert [k.name for k in HANDLE_KINDS.values() if k.outlives_client] == ["job"]
