"""HTTP routes, one module per API area."""
