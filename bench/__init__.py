"""The benchmark suite: python -m bench (bench/__main__.py). See bench/README.md."""
