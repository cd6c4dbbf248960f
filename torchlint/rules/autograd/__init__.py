"""TL1xx: autograd and the training loop."""
