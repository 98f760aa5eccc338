"""The package version (one place; read by ``dalembert.__version__`` and the run metadata)."""
__version__ = "0.1.0"
