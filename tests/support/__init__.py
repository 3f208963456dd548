"""What the test modules share: helpers and fixtures' builders (no test module imports another)."""
