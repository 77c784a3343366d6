"""Lab 06: one tiny head computed exactly, then perturbed one piece at a time (see README.md)."""

from lab06.head import attend, attend_backward, attention, masked_softmax
