"""The ``envre`` console command."""
