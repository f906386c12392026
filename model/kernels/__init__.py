"""The CPU kernels' Python side: the C code that the translator's and the encoder's inference call."""
